#!/bin/sh
# Build the fuzz targets (fuzz/README.md) into OUT:
#   fuzz/build.sh [OUT]          libFuzzer (Debian's clang); OUT: build-fuzz
#   fuzz/build.sh --afl [OUT]    AFL++ (Debian's afl++, afl-clang-fast and its
#                                libFuzzer driver); OUT: build-afl
# Both with AddressSanitizer and UBSan (FUZZ_SANITIZE overrides them).
set -eu
cd "$(dirname "$0")/.."
AFL=0
if [ "${1:-}" = --afl ]; then
  AFL=1
  shift
fi
if [ $AFL = 1 ]; then
  OUT=${1:-build-afl}
  # afl-clang-fast instruments what it compiles (a libFuzzer coverage flag
  # is dropped) and links its driver, libAFLDriver, for -fsanitize=fuzzer.
  CC=${CC:-afl-clang-fast}
  command -v "$CC" >/dev/null || { echo "fuzz/build.sh: $CC not found (apt-get install afl++)" >&2; exit 1; }
else
  OUT=${1:-build-fuzz}
  CC=${CC:-clang}
fi
ENGINE=${FUZZ_ENGINE:--fsanitize=fuzzer}
SAN=${FUZZ_SANITIZE:--fsanitize=address,undefined -fno-sanitize-recover=all}
FLAGS="-g -O1 -std=c11 -fno-omit-frame-pointer -ffp-contract=off -fopenmp $SAN ${FUZZ_CFLAGS:-}"
mkdir -p "$OUT/obj"
# The library, built by CMake (its SIMD levels and their dispatch,
# src/simd/simd.h) with coverage for the fuzzer.
CC=$CC cmake -S . -B "$OUT/lib" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_FLAGS="$FLAGS -fsanitize=fuzzer-no-link" -DPROX_BUILD_TOOLS=OFF \
  -DPROX_BUILD_EXAMPLES=OFF -DPROX_BUILD_PYTHON=OFF -DBUILD_TESTING=OFF >/dev/null
cmake --build "$OUT/lib" -j "${JOBS:-2}" --target prox_static >/dev/null
for src in tools/input.c tools/npy.c tools/box_io.c; do
  $CC $FLAGS -fsanitize=fuzzer-no-link -D_POSIX_C_SOURCE=200809L -Dfree=fuzz_tracked_free \
    -Iinclude -Itools -c "$src" -o "$OUT/obj/fuzz_$(basename "$src" .c).o"
done
LIB="$OUT/lib/libprox.a"
for target in point_file row_file points broad cells; do
  extra=""
  case $target in
    point_file|row_file) extra="fuzz/fuzz_cli_stub.c $OUT/obj/fuzz_input.o $OUT/obj/fuzz_npy.o $OUT/obj/fuzz_box_io.o" ;;
    cells) extra="tests/cell_oracle.c" ;;
  esac
  # shellcheck disable=SC2086
  $CC $FLAGS $ENGINE -Iinclude -Itools -Ifuzz -o "$OUT/fuzz_$target" "fuzz/fuzz_$target.c" \
    $extra $LIB -lm
done
echo "fuzz targets ($([ $AFL = 1 ] && echo AFL++ || echo libFuzzer)) in $OUT: fuzz_point_file fuzz_row_file fuzz_points fuzz_broad fuzz_cells"
