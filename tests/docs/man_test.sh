#!/bin/sh
# The manual page tools/prox.1 against the CLI it documents:
#   man_test.sh PROX_CLI BUILD_DIR SOURCE_DIR
# 1. groff renders it with every warning enabled and prints none;
# 2. its version is the CLI's (`prox --version`);
# 3. it has a section for every command `prox --help` lists, names every
#    scene `prox demo --help` lists, and every long option that the --help
#    of gen, pairs, collide, query and bench (each workload) prints;
# 4. `cmake --install` puts it in share/man/man1, and man renders it there.
set -u
prox=$1 build=$2 source=$3
page=$source/tools/prox.1
failed=0
fail() { echo "man_test: $*" >&2; failed=1; }

warnings=$(groff -man -Tutf8 -ww -z "$page" 2>&1) || fail "groff failed on $page"
[ -z "$warnings" ] || fail "groff warns on $page: $warnings"

version=$("$prox" --version | head -1 | cut -d' ' -f1-2) # "prox X.Y.Z"
grep -q "^\.TH PROX 1 .*\"$version\"" "$page" || fail "the page's .TH does not name '$version'"

# The page's text with roff's escaped hyphens as plain ones.
text=$(sed 's/\\-/-/g' "$page")
section_of() { printf '%s\n' "$1" | sed -n "/^$2:/,/^\$/p" | sed -n 's/^  \([a-z0-9]*\) .*/\1/p'; }
commands=$(section_of "$("$prox" --help)" Commands)
[ -n "$commands" ] || fail "no commands found in 'prox --help'"
for c in $commands; do
    printf '%s\n' "$text" | grep -q "^\.SS \"prox $c" || fail "no section for 'prox $c'"
done
scenes=$(section_of "$("$prox" demo --help)" Scenes)
[ -n "$scenes" ] || fail "no scenes found in 'prox demo --help'"
for s in $scenes; do
    printf '%s\n' "$text" | grep -q "^\.B $s\$" || fail "scene '$s' not named"
done
options() { "$@" --help 2>&1 | grep -o -- '--[a-z][a-z0-9-]*' | sort -u; }
for args in "gen" "pairs" "collide" "query" "knn" "bench sph3d" "bench mixed2d" "bench spheres3d" \
    "bench dem3d"; do
    # shellcheck disable=SC2086 # args: a command and its workload
    for o in $(options "$prox" $args); do
        [ "$o" = --help ] && continue
        printf '%s\n' "$text" | grep -q -- "$o\\b" || fail "'prox $args' option $o not in the page"
    done
done

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch" >/dev/null || fail "cmake --install failed"
installed=$(find "$scratch" -path '*/man1/prox.1' | head -1)
if [ -z "$installed" ]; then
    fail "cmake --install put no man1/prox.1 under the prefix"
elif ! MANWIDTH=80 man -l "$installed" 2>/dev/null | grep -q "fixed-radius neighbour"; then
    fail "man -l cannot render the installed page"
fi
[ "$failed" -eq 0 ] && echo "man_test: ok ($(echo $commands | wc -w) commands, $(echo $scenes | wc -w) scenes)"
exit "$failed"
