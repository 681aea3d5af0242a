# prox: the README's commands. CMake does the real work in build/.
#   make          build the library, the CLI (build/prox) and the Python module
#                 (build/python); nothing else
#   make run      build and run the main job: the W5 fluid scene (prox demo fluid)
#   make test     build the tests, examples and benchmark drivers too (`checks`)
#                 and run every test (CTest; the Python module's pytest suite too)
#   make asan     the test suite again under AddressSanitizer + UBSan (build-asan/),
#                 at the default SIMD level, and test_levels at every level
#   make install  cmake --install build (PREFIX=/usr/local by default)
# Hardening (docs/robustness.md), each with clang:
#   make fuzz      build the fuzz targets (libFuzzer) and run each FUZZ_SECONDS (60)
#   make fuzz-afl  the same targets built and run with AFL++ (build-afl/)
#   make ubsan     the suite under clang's UndefinedBehaviorSanitizer (build-ubsan/)
#   make tsan      the threaded tests under ThreadSanitizer, libomp + Archer (build-tsan/)
#   make valgrind  the CLI's main commands under valgrind memcheck
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX  ?= /usr/local
CMAKE_FLAGS ?=
BUILD_DEPS = build-essential cmake pkg-config libcmocka-dev libpng-dev python3-dev python3-numpy groff-base man-db
TEST_DEPS  = python3-pytest python3-scipy python3-ase lammps
RUN_DEPS   = gnuplot-nox
# The Python module is built for Debian's python3 (where python3-numpy is),
# whatever python3 comes first on PATH.
PYTHON  ?= $(firstword $(wildcard /usr/bin/python3) python3)

HARDEN_DEPS = clang libclang-rt-dev libomp-dev valgrind
AFL_DEPS = afl++
FUZZ_SECONDS ?= 60
# Tests whose parallel regions run on several threads, small enough for CI
# under TSan (test_update, test_kdtree and test_sap pass too, in 5-14 min here).
TSAN_TESTS = test_pairs|test_radix_sort|test_grid_sweep|test_hardening|fuzz_replay_points|fuzz_replay_broad
CLANG_SANITIZE = -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROX_BUILD_EXAMPLES=OFF -DPROX_BUILD_PYTHON=OFF

.PHONY: all build checks run test asan install deps test-deps clean bench-peers bench-report fuzz ubsan tsan valgrind harden-deps fuzz-afl

all: build

deps:
	@tools/deps.sh $(BUILD_DEPS)

test-deps:
	@tools/deps.sh $(TEST_DEPS)

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=$(PYTHON) \
	  -DPROX_CHECKS_IN_ALL=OFF $(CMAKE_FLAGS)

# A build directory configured before PROX_CHECKS_IN_ALL existed (ON by
# default) is switched to the Makefile's setting first.
build: deps $(BUILD)/CMakeCache.txt
	@grep -q '^PROX_CHECKS_IN_ALL:BOOL=OFF' $(BUILD)/CMakeCache.txt || \
	  cmake -S . -B $(BUILD) -DPROX_CHECKS_IN_ALL=OFF $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# The tests, fuzz replays, examples and benchmark drivers (CMake's `checks`).
checks: build
	cmake --build $(BUILD) -j $(JOBS) --target checks

run: build
	@tools/deps.sh $(RUN_DEPS)
	tools/main-job.sh $(BUILD)/prox $(BUILD)/main-job

test: test-deps checks
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROX_SANITIZE=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 && \
	  ctest --output-on-failure -j $(JOBS) -LE simd && \
	  ctest --output-on-failure -j $(JOBS) -R '^test_levels_'

harden-deps:
	@tools/deps.sh $(BUILD_DEPS) $(HARDEN_DEPS)

fuzz: harden-deps
	JOBS=$(JOBS) fuzz/build.sh build-fuzz
	fuzz/run.sh $(FUZZ_SECONDS)

# The same targets under AFL++ (afl-clang-fast, its libFuzzer driver, afl-fuzz).
fuzz-afl: harden-deps
	@tools/deps.sh $(AFL_DEPS)
	JOBS=$(JOBS) fuzz/build.sh --afl build-afl
	fuzz/run.sh --afl $(FUZZ_SECONDS)

# clang's UBSan checks what gcc's does not (signed overflow in 64-bit
# products, arithmetic on a NULL pointer, among others); every check is fatal.
ubsan: harden-deps
	CC=clang cmake -S . -B build-ubsan $(CLANG_SANITIZE) \
	  -DCMAKE_C_FLAGS="-fsanitize=undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=undefined -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=undefined
	cmake --build build-ubsan -j $(JOBS)
	cd build-ubsan && export UBSAN_OPTIONS=print_stacktrace=1 && \
	  ctest --output-on-failure -j $(JOBS) -E install_and_consume -LE simd && \
	  ctest --output-on-failure -j $(JOBS) -R '^test_levels_'

# Clang's OpenMP runtime (libomp) with Archer, its TSan annotations of the
# parallel regions: without it TSan cannot see OpenMP's barriers.
tsan: harden-deps
	CC=clang cmake -S . -B build-tsan $(CLANG_SANITIZE) \
	  -DCMAKE_C_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
	  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && OMP_TOOL_LIBRARIES=$$($(CURDIR)/tools/archer.sh) OMP_NUM_THREADS=4 \
	  TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1" \
	  ctest --output-on-failure -j $(JOBS) -R '^($(TSAN_TESTS))$$'

# A portable build: valgrind does not decode AVX-512 (-march=native).
valgrind: harden-deps
	cmake -S . -B build-valgrind -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPROX_NATIVE=OFF \
	  -DPROX_BUILD_EXAMPLES=OFF -DBUILD_TESTING=OFF
	cmake --build build-valgrind -j $(JOBS) --target prox
	tests/valgrind_cli.sh build-valgrind/prox build-valgrind/valgrind

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
	rm -rf $(BUILD) build-asan build-ubsan build-tsan build-fuzz build-afl build-valgrind

# docs/benchmarks.md regenerated: prox's own benchmarks, the peers on the
# standard workloads and the Python module against C, scipy and ASE
# (bench/report/report.sh; `checks` builds the drivers and the module), e.g.
#   make bench-report ARGS=--quick     (under 30 minutes on 2 cores)
#   make bench-report ARGS="--quick --python-only"   (the Python section alone)
bench-report: checks
	BUILD=$(BUILD) bench/report/report.sh --prox $(BUILD)/prox $(ARGS)
