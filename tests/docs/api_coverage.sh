#!/bin/sh
# docs/api.md names every public function and every public Python name:
#   - each function declared PROX_API in include/prox/*.h, and each function
#     declared in include/prox/mpi.h (the MPI layer's library exports them
#     without the macro);
#   - each name of python/prox/__init__.py's __all__, and each module-level
#     def or class whose name does not start with '_' (read from the source,
#     not from a built module).
# A name counts as documented when it appears in api.md as a whole word.
# Usage: api_coverage.sh SOURCE_DIR
set -u
cd "${1:?usage: api_coverage.sh SOURCE_DIR}" || exit 2
doc=docs/api.md
[ -r "$doc" ] || { echo "api_coverage: no $doc" >&2; exit 2; }

# C: the identifier before the first '(' of each declaration, which may span
# lines; PROX_API declarations in every header, every declaration in mpi.h.
c_names() {
    awk '
        /^[ \t]*(\/\*|\*)/ { next }                  # comment lines
        FILENAME ~ /mpi\.h$/ && /^[A-Za-z_].*[ *]prox_[a-z0-9_]+\(/ && !/^typedef/ { take = 1 }
        /^PROX_API / && !/define/ { take = 1 }
        take { line = line " " $0 }
        take && /[;{]/ {
            if (match(line, /prox_[a-z0-9_]+[ \t]*\(/)) {
                name = substr(line, RSTART, RLENGTH); sub(/[ \t]*\($/, "", name); print name
            }
            take = 0; line = ""
        }' include/prox/*.h | sort -u
}

# Python: __all__'s strings, and top-level def/class names not starting
# with '_'.
py_names() {
    awk '
        /^__all__[ \t]*=/ { in_all = 1 }
        in_all {
            s = $0
            while (match(s, /"[A-Za-z_][A-Za-z0-9_]*"/)) {
                print substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH)
            }
            if ($0 ~ /\]/) in_all = 0
        }
        /^(def|class)[ \t]+[A-Za-z][A-Za-z0-9_]*/ {
            name = $2; sub(/[(:].*/, "", name); print name
        }' python/prox/__init__.py | sort -u
}

missing=0
checked=0
for name in $(c_names) $(py_names); do
    checked=$((checked + 1))
    # a whole word: not part of a longer identifier (prox_pairs vs prox_pairs_stream)
    if ! grep -q -E "(^|[^A-Za-z0-9_])${name}([^A-Za-z0-9_]|\$)" "$doc"; then
        echo "api_coverage: $name is not documented in $doc" >&2
        missing=$((missing + 1))
    fi
done
[ "$checked" -gt 60 ] || { echo "api_coverage: only $checked names found; the parser is broken" >&2; exit 2; }
[ "$missing" -eq 0 ] || { echo "api_coverage: $missing of $checked names missing" >&2; exit 1; }
echo "api_coverage: ok ($checked names)"
