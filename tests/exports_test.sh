#!/bin/sh
# Usage: exports_test.sh LIBPROX_SO INCLUDE_DIR [NM]
# The shared library exports the public API and nothing else: every symbol
# it defines for the dynamic linker is a function declared PROX_API in
# include/prox/, and every such declaration is exported. A symbol outside
# that list (an internal function, a global) is part of the ABI by accident
# and may clash with a caller's. The one exception is OpenMP's: the lock
# variables of critical sections (and, with clang, of reductions),
# .gomp_critical_user_NAME, are global by design, since every critical
# region of one name is the same region across the whole program; a name
# that starts with '.' is no C identifier and cannot clash with one.
lib=$1 inc=$2 nm=${3:-nm}
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v "$nm" >/dev/null 2>&1 || fail "no $nm to list the symbols of $lib"
symbols=$("$nm" -D --defined-only "$lib") || fail "$nm could not read $lib"
exported=$(printf '%s\n' "$symbols" | awk 'NF == 3 && $3 !~ /^\.gomp_critical_user_/ { print $3 }' | sort -u)
[ -n "$exported" ] || fail "$lib exports nothing"
# The name before the first '(' of each declaration: a line that starts
# with PROX_API, joined with the lines that follow it up to its ';'.
declared=$(awk '/^PROX_API / { d = "" } d != "" || /^PROX_API / { d = d " " $0 }
                d != "" && /;/ { print d; d = "" }' "$inc"/*.h |
    sed -n 's/^ PROX_API[^(]*[^a-zA-Z0-9_(]\([a-zA-Z_][a-zA-Z0-9_]*\)(.*/\1/p' | sort -u)
[ -n "$declared" ] || fail "no PROX_API declaration in $inc"
extra=$(printf '%s\n' "$exported" | grep -vxF "$declared")
missing=$(printf '%s\n' "$declared" | grep -vxF "$exported")
[ -z "$extra" ] || fail "$lib exports symbols that are not public API:
$extra"
[ -z "$missing" ] || fail "PROX_API declarations that $lib does not export:
$missing"
echo "$(printf '%s\n' "$exported" | wc -l) symbols exported, each declared PROX_API"
