#!/bin/sh
# Install prox into a scratch prefix, then build and run the README example
# as a user would: once through pkg-config, once through find_package(prox).
# Usage: install_test.sh BUILD_DIR SOURCE_DIR C_COMPILER
set -eu
build=$1 source=$2 cc=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
# The license travels with the library (share/doc/prox/LICENSE).
cmp -s "$source/LICENSE" "$scratch/prefix/share/doc/prox/LICENSE" ||
    { echo "install: no share/doc/prox/LICENSE, or not the repository's" >&2; exit 1; }

PKG_CONFIG_PATH="$scratch/prefix/lib/pkgconfig"
export PKG_CONFIG_PATH
flags=$(pkg-config --cflags --libs prox)
"$cc" -std=c11 "$source/examples/neighbours.c" $flags -Wl,-rpath,"$scratch/prefix/lib" \
    -o "$scratch/with_pkgconfig"
"$scratch/with_pkgconfig" >/dev/null
echo "pkg-config: ok"

mkdir "$scratch/consumer"
cat > "$scratch/consumer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(prox 0.1 REQUIRED)
add_executable(app_shared $source/examples/neighbours.c)
target_link_libraries(app_shared prox::prox)
add_executable(app_static $source/examples/neighbours.c)
target_link_libraries(app_static prox::prox_static)
CMAKE
cmake -S "$scratch/consumer" -B "$scratch/consumer/build" -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/consumer/build" >/dev/null
"$scratch/consumer/build/app_shared" >/dev/null
"$scratch/consumer/build/app_static" >/dev/null
echo "find_package: ok"
