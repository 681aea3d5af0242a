#!/bin/sh
# Usage: simd_level.sh PROX
# The default build reports the SIMD level this CPU supports (prox
# --version's simd=), judged independently from the CPU's own flags; and a
# level PROX_SIMD asks for that does not exist or does not run here is a
# usage error (exit 2) that names the levels there are.
prox=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
unset PROX_SIMD
got=$("$prox" --version | sed -n 's/.* simd=\([a-z0-9]*\).*/\1/p')
[ -n "$got" ] || fail "prox --version prints no simd="
case $(uname -m) in
x86_64 | amd64)
    flags=$(grep -m1 '^flags' /proc/cpuinfo)
    has() { for f in "$@"; do echo "$flags" | grep -qw "$f" || return 1; done; }
    if has avx512f avx512vl avx512bw avx512dq avx512cd avx2 bmi2 fma; then want=avx512
    elif has avx2 bmi2 fma; then want=avx2
    else want=sse2; fi ;;
aarch64 | arm64) want=neon ;;
*) want=scalar ;;
esac
[ "$got" = "$want" ] || fail "simd=$got, but this CPU supports $want"
echo "simd=$got, as the CPU's flags say"

for level in scalar $want; do
    out=$(PROX_SIMD=$level "$prox" --version) || fail "PROX_SIMD=$level refused"
    [ "$out" = "prox $("$prox" --version | sed 's/^prox \([^ ]*\).*/\1/') simd=$level" ] ||
        fail "PROX_SIMD=$level gave '$out'"
done
PROX_SIMD=bogus "$prox" --version 2>err.txt && fail "PROX_SIMD=bogus accepted"
[ $? -eq 2 ] || fail "PROX_SIMD=bogus: exit status is not 2"
grep -q "not a level this build has (it has: scalar" err.txt || fail "PROX_SIMD=bogus: $(cat err.txt)"
case $want in
sse2) above=avx2 ;;
avx2) above=avx512 ;;
*) above= ;;
esac
if [ -n "$above" ]; then
    PROX_SIMD=$above "$prox" pairs --radius 1 --count /dev/null 2>err.txt && fail "PROX_SIMD=$above accepted"
    grep -q "lacks that level" err.txt || fail "PROX_SIMD=$above: $(cat err.txt)"
fi
rm -f err.txt
echo "1 passed, 0 failed"
