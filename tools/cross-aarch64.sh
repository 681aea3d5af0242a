#!/bin/sh
# The library and its unit tests cross-built for AArch64 (both its SIMD
# levels, scalar and neon) and run under qemu-user.
# Usage: tools/cross-aarch64.sh [CTEST-REGEX]   (default: the subset below)
# Installs, as root, Debian's gcc-aarch64-linux-gnu, qemu-user and the
# arm64 cmocka (multiarch); otherwise prints the commands.
set -eu
cd "$(dirname "$0")/.."
if ! dpkg-query -W -f='${Status}' libcmocka-dev:arm64 2>/dev/null | grep -q "install ok installed"; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "cross-aarch64: run as root, or first:" >&2
        echo "  dpkg --add-architecture arm64 && apt-get update &&" >&2
        echo "  apt-get install -y gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libcmocka-dev:arm64" >&2
        exit 1
    fi
    dpkg --add-architecture arm64
    apt-get update -q >/dev/null 2>&1 || true
fi
tools/deps.sh gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libcmocka-dev:arm64
cmake -S . -B build-aarch64 -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
    -DPROX_BUILD_TOOLS=OFF -DPROX_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build-aarch64 -j "$(nproc)"
cd build-aarch64
# qemu runs the suite some 20-100 times slower than the CPU: by default
# test_levels (every grid configuration and sink on every adversarial
# input class, checking the kernels and row sorts), at neon (the default
# level) and scalar, the SIMD layer's own tests at both (sweep and prune's
# byte filter, the 64-bit lanes) and the kd-tree's records at both.
OMP_WAIT_POLICY=passive ctest --output-on-failure -j "$(nproc)" \
    -R "${1:-^test_levels(_scalar)?$|^test_byte_filter_|^test_vec_u64_|^test_kd_split(_scalar)?$}"
