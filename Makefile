# prox: the README's commands. CMake does the real work in build/.
#   make          build everything; the CLI lands at build/prox
#   make run      build and run the main job: the W5 fluid scene (prox demo fluid)
#   make test     build and run every test (CTest)
#   make asan     the test suite again under AddressSanitizer + UBSan (build-asan/)
#   make install  cmake --install build (PREFIX=/usr/local by default)
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX  ?= /usr/local
CMAKE_FLAGS ?=
BUILD_DEPS = build-essential cmake pkg-config libcmocka-dev libpng-dev
RUN_DEPS   = gnuplot-nox

.PHONY: all build run test asan install deps clean bench-peers

all: build

deps:
	@tools/deps.sh $(BUILD_DEPS)

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPROX_NATIVE=ON $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: build
	@tools/deps.sh $(RUN_DEPS)
	tools/main-job.sh $(BUILD)/prox $(BUILD)/main-job

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROX_SANITIZE=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# Optional: libprox_mpi, `prox --mpi` and tests/mpi are built when CMake
# finds MPI; `make deps` installs Open MPI as root, and goes on without it
# otherwise.
MPI_DEPS = openmpi-bin libopenmpi-dev
.PHONY: mpi-deps
deps: mpi-deps
mpi-deps:
	@tools/deps.sh $(MPI_DEPS) || echo "deps: building without MPI (libprox_mpi, prox --mpi and tests/mpi left out)" >&2

# prox and its peer libraries side by side (bench/peers/README.md), e.g.
#   make bench-peers ARGS="--full --reps 5"
bench-peers: build
	BUILD=$(BUILD) bench/peers/run.sh --prox $(BUILD)/prox $(ARGS)

clean:
	rm -rf $(BUILD) build-asan
