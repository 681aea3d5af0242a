#!/bin/sh
# prox-row.sh: run a prox command with --stats and print its figures as the
# peer benchmarks' result line (README.md), so that prox's rows read like the
# peers'.
#   prox-row.sh [--count-key KEY] LIBRARY WORKLOAD -- PROX_COMMAND...
# PROX_COMMAND must print its key=value stats on stderr (--stats); its stdout
# (pairs, lists, counts) is discarded. KEY is the stats key reported as count
# (default pairs; 'prox query' reports hits). N is the stats' n.
# Extra stats keys carried over: candidates, struct_mb, threads, algo.
set -eu
count_key=pairs
if [ "${1:-}" = "--count-key" ]; then
    count_key=$2
    shift 2
fi
[ $# -ge 4 ] && [ "$3" = "--" ] || {
    echo "usage: prox-row.sh [--count-key KEY] LIBRARY WORKLOAD -- PROX_COMMAND..." >&2
    exit 2
}
library=$1 workload=$2
shift 3
stats=$(mktemp)
trap 'rm -f "$stats"' EXIT
status=0
"$@" >/dev/null 2>"$stats" || status=$?
if [ "$status" -ne 0 ]; then
    echo "prox-row.sh: '$*' exited with $status:" >&2
    cat "$stats" >&2
    exit "$status"
fi
awk -F= -v lib="$library" -v w="$workload" -v ck="$count_key" '
    NF == 2 { v[$1] = $2 }
    END {
        need = "n build_s query_s peak_rss_mb " ck
        k = split(need, keys, " ")
        for (i = 1; i <= k; i++)
            if (!(keys[i] in v)) {
                printf "prox-row.sh: no %s= in the stats\n", keys[i] > "/dev/stderr"
                exit 3
            }
        printf "library=%s workload=%s N=%s build_s=%s query_s=%s total_s=%.6f count=%s peak_rss_mb=%s", \
            lib, w, v["n"], v["build_s"], v["query_s"], v["build_s"] + v["query_s"], v[ck], v["peak_rss_mb"]
        split("candidates struct_mb threads algo", extra, " ")
        for (i = 1; i <= 4; i++)
            if (extra[i] in v)
                printf " %s=%s", extra[i], v[extra[i]]
        printf "\n"
    }' "$stats"
