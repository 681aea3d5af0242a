#!/bin/sh
# Sweep and prune's timings (docs/design.md, "Sweep and prune"): the W3
# spheres' boxes (centre +- 1) from `prox gen spheres3d`, then
#  - `prox collide --algo sap --count --stats` from scratch, RUNS times on
#    1 and 2 threads (medians of build_s, query_s and their sum);
#  - bench/sap_frames.c: frames of small motions, the list repaired by
#    prox_broad_update (insertion sort), rebuilt on the same object, or
#    built from scratch on a new one; wall and process CPU time (the
#    machine is shared: CPU time shows what the code costs), one thread.
# Writes bench/results/sap-HOST-DATE.md.
# Usage: bench/run-sap-benchmarks.sh [BUILD_DIR] [N] [RUNS] [FRAMES]
set -eu
build=${1:-build}
n=${2:-1000000}
runs=${3:-5}
frames=${4:-7}
prox="$build/prox"
[ -x "$prox" ] && [ -f "$build/libprox.a" ] || { echo "build $build first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -fopenmp -Iinclude bench/sap_frames.c "$build/libprox.a" -lm -o "$work/sap_frames"
"$prox" gen spheres3d --n "$n" -o "$work/centres.txt"
awk '!/^#/ { printf "%.17g %.17g %.17g %.17g %.17g %.17g\n", $1 - 1, $2 - 1, $3 - 1, $1 + 1, $2 + 1, $3 + 1 }' \
    "$work/centres.txt" >"$work/boxes.txt"

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

out="bench/results/sap-$(hostname)-$(date +%Y%m%d-%H%M).md"
{
    echo "# prox sweep and prune (W3), $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "Produced by \`bench/run-sap-benchmarks.sh $build $n $runs $frames\` at commit" \
        "$(git rev-parse --short HEAD 2>/dev/null || echo unknown); load average before:" \
        "$(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    echo "## From scratch: prox collide --algo sap --count --stats, N = $n, medians of $runs runs"
    echo
    echo "| threads | build_s | query_s | total_s | candidates | pairs | struct_mb | peak_rss_mb |"
    echo "|--------:|--------:|--------:|--------:|-----------:|------:|----------:|------------:|"
    for threads in 1 2; do
        : >"$work/runs.txt"
        for r in $(seq "$runs"); do
            "$prox" collide --algo sap --count --stats --threads "$threads" "$work/boxes.txt" \
                2>>"$work/runs.txt" >/dev/null
        done
        get() { grep "^$1=" "$work/runs.txt" | cut -d= -f2; }
        build_s=$(get build_s | median)
        query_s=$(get query_s | median)
        get build_s >"$work/b" && get query_s >"$work/q"
        total_s=$(paste -d' ' "$work/b" "$work/q" | awk '{ print $1 + $2 }' | median)
        echo "| $threads | $build_s | $query_s | $total_s | $(get candidates | tail -1) |" \
            "$(get pairs | tail -1) | $(get struct_mb | tail -1) | $(get peak_rss_mb | median) |"
    done
    echo
    echo "## Frames of small motions, N = $n, 1 thread, medians of $frames frames"
    echo
    "$work/sap_frames" "$work/boxes.txt" "$frames" 0.001 0.003 0.01 0.03 0.1
    echo
    echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out"
echo "written: $out" >&2
