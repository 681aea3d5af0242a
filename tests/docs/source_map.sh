#!/bin/sh
# docs/design.md's source map (the table under "## Source map") lists every
# file of src/ under its folder's row, and no file that is not there.
# Usage: source_map.sh SOURCE_DIR
set -u
cd "${1:?usage: source_map.sh SOURCE_DIR}" || exit 2
doc=docs/design.md
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# Folder rows are "| **src/DIR/** | ...", file rows "| `a.c`, `a.h` | ...".
awk '/^## Source map/ { p = 1; next } /^## / { p = 0 } p' "$doc" |
    awk -F'|' '/^\| \*\*src\// { match($2, /src\/[a-z0-9_]+/); dir = substr($2, RSTART, RLENGTH); next }
               /^\| `/ && dir != "" { n = split($2, a, "`"); for (i = 2; i <= n; i += 2) print dir "/" a[i] }' |
    sort > "$scratch/map"
find src -type f | sort > "$scratch/src"
[ -s "$scratch/map" ] || { echo "source_map: no table under '## Source map' in $doc" >&2; exit 2; }
if ! cmp -s "$scratch/src" "$scratch/map"; then
    comm -23 "$scratch/src" "$scratch/map" | sed "s|^|source_map: not in $doc's source map: |" >&2
    comm -13 "$scratch/src" "$scratch/map" | sed "s|^|source_map: in the source map, not in src/: |" >&2
    exit 1
fi
echo "source_map: ok ($(wc -l < "$scratch/src") files)"
