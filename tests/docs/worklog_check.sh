#!/bin/sh
# Docs and comments say what is true now: no work log. Fails on a hit of
#   README.md, docs/*.md, include/, src/: numbered sessions or work periods,
#     VM generations ("Zen 5 VM", "the development VM"), "rerun at <commit>";
#   README.md, docs/design.md, docs/api.md: commit hashes (README may name
#     the generated report's commit once, on a line that links
#     docs/benchmarks.md);
#   include/, src/: timings in comments ("0.24 -> 0.18 s", "23 ms").
# Usage: worklog_check.sh SOURCE_DIR
set -u
cd "${1:?usage: worklog_check.sh SOURCE_DIR}" || exit 2
# Files whose timing comments are known and being rewritten (none now).
pending_timings=""
hits=0
report() { # WHAT, then grep -n output on stdin
    what=$1
    while IFS= read -r line; do
        echo "worklog_check: $what: $line" >&2
        hits=$((hits + 1))
    done
}

docs="README.md $(ls docs/*.md)"
code=$(find include src -name '*.[ch]' | sort)
vocabulary='\bsessions? [0-9]+|\bwork periods?\b|\bZen [0-9]+ VM\b|\bVM generation|\bdevelopment VM\b|\bthis VM\b|\brerun at [0-9a-f]{7}'
# shellcheck disable=SC2086 # lists of paths without spaces
grep -n -i -E "$vocabulary" $docs $code > "${TMPDIR:-/tmp}/worklog.$$" 2>/dev/null
report "work-log vocabulary" < "${TMPDIR:-/tmp}/worklog.$$"

# A commit hash: 7-12 lowercase hex digits, with a digit and a letter, alone.
hashes() { # FILE...: the lines holding a commit hash, as grep -n prints them
    awk '{ s = $0; n = 0
           while (match(s, /(^|[^0-9A-Za-z_.\/#-])[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]+/)) {
               w = substr(s, RSTART, RLENGTH); sub(/^[^0-9a-f]/, "", w)
               rest = substr(s, RSTART + RLENGTH, 1)
               if (length(w) <= 12 && w ~ /[0-9]/ && w ~ /[a-f]/ && rest !~ /[0-9A-Za-z_]/) n++
               s = substr(s, RSTART + RLENGTH) }
           if (n) print FILENAME ":" FNR ":" $0 }' "$@"
}
hashes docs/design.md docs/api.md > "${TMPDIR:-/tmp}/worklog.$$"
report "commit hash" < "${TMPDIR:-/tmp}/worklog.$$"
hashes README.md > "${TMPDIR:-/tmp}/worklog.$$"
named=$(grep -c 'docs/benchmarks.md' "${TMPDIR:-/tmp}/worklog.$$")
grep -v 'docs/benchmarks.md' "${TMPDIR:-/tmp}/worklog.$$" > "${TMPDIR:-/tmp}/worklog2.$$"
report "commit hash in README" < "${TMPDIR:-/tmp}/worklog2.$$"
rm -f "${TMPDIR:-/tmp}/worklog2.$$"
if [ "$named" -gt 1 ]; then
    echo "worklog_check: README names $named report commits (one at most)" >&2
    hits=$((hits + 1))
fi

timing='[0-9] ?-> ?[0-9.]+ ?m?s\b|\b[0-9]+\.[0-9]+ ?m?s\b|\b[0-9]+ ?ms\b'
for f in $code; do
    case " $pending_timings " in *" $f "*) continue ;; esac
    grep -n -E "$timing" "$f" | sed "s|^|$f:|"
done > "${TMPDIR:-/tmp}/worklog.$$"
report "timing in a comment" < "${TMPDIR:-/tmp}/worklog.$$"
rm -f "${TMPDIR:-/tmp}/worklog.$$"

[ "$hits" -eq 0 ] || { echo "worklog_check: $hits hit(s)" >&2; exit 1; }
echo "worklog_check: ok"
