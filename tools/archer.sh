#!/bin/sh
# The path of Archer, LLVM's OpenMP tool that tells ThreadSanitizer about
# OpenMP's synchronisation (Debian: libomp-NN-dev), for OMP_TOOL_LIBRARIES.
for f in /usr/lib/llvm-*/lib/libarcher.so; do
    [ -e "$f" ] && { echo "$f"; exit 0; }
done
echo "archer: libarcher.so not found (apt-get install libomp-dev)" >&2
exit 1
