# prox: the README's commands. CMake does the real work in build/.
#   make          build everything; the CLI lands at build/prox
#   make run      build and run the main job: the W5 fluid scene (prox demo fluid)
#   make test     build and run every test (CTest; the Python module's pytest suite too)
#   make asan     the test suite again under AddressSanitizer + UBSan (build-asan/),
#                 at the default SIMD level, and test_levels at every level
#   make install  cmake --install build (PREFIX=/usr/local by default)
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX  ?= /usr/local
CMAKE_FLAGS ?=
BUILD_DEPS = build-essential cmake pkg-config libcmocka-dev libpng-dev python3-dev python3-numpy groff-base man-db
TEST_DEPS  = python3-pytest python3-scipy python3-ase
RUN_DEPS   = gnuplot-nox
# The Python module is built for Debian's python3 (where python3-numpy is),
# whatever python3 comes first on PATH.
PYTHON  ?= $(firstword $(wildcard /usr/bin/python3) python3)

.PHONY: all build run test asan install deps test-deps clean bench-peers bench-report

all: build

deps:
	@tools/deps.sh $(BUILD_DEPS)

test-deps:
	@tools/deps.sh $(TEST_DEPS)

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=$(PYTHON) $(CMAKE_FLAGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: build
	@tools/deps.sh $(RUN_DEPS)
	tools/main-job.sh $(BUILD)/prox $(BUILD)/main-job

test: test-deps build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROX_SANITIZE=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 && \
	  ctest --output-on-failure -j $(JOBS) -LE simd && \
	  ctest --output-on-failure -j $(JOBS) -R '^test_levels_'

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# prox and its peer libraries side by side (bench/peers/README.md), e.g.
#   make bench-peers ARGS="--full --reps 5"
bench-peers: build
	BUILD=$(BUILD) bench/peers/run.sh --prox $(BUILD)/prox $(ARGS)

clean:
	rm -rf $(BUILD) build-asan

# docs/benchmarks.md regenerated: prox's own benchmarks and the peers on the
# standard workloads (bench/report/report.sh), e.g.
#   make bench-report ARGS=--quick     (under 30 minutes on 2 cores)
bench-report: build
	BUILD=$(BUILD) bench/report/report.sh --prox $(BUILD)/prox $(ARGS)
