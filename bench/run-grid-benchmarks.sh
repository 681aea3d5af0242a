#!/bin/sh
# prox's own grid tables (prox bench) for W1 (sph3d) at 1M points and W2
# (nns2d) at k = 1, 5, 20, on one and two threads, and W1 at 4M points on
# one. Writes one Markdown file per run into bench/results/, named by
# machine and date.
# Usage: bench/run-grid-benchmarks.sh [BUILD/prox] [RUNS]
set -eu
prox=${1:-build/prox}
runs=${2:-5}
[ -x "$prox" ] || { echo "run 'make' first (no $prox)" >&2; exit 2; }
out="bench/results/grid-$(hostname)-$(date +%Y%m%d-%H%M).md"
{
    echo "# prox grid benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "Produced by \`bench/run-grid-benchmarks.sh $prox $runs\`."
    for threads in 1 2; do
        echo
        echo "## W1 sph3d, N = 1,000,000, $threads thread(s)"
        echo
        "$prox" bench sph3d --n 1000000 --threads "$threads" --runs "$runs"
        for k in 1 5 20; do
            echo
            echo "## W2 nns2d, N = 1,000,000, k = $k, $threads thread(s)"
            echo
            "$prox" bench nns2d --n 1000000 --k "$k" --threads "$threads" --runs "$runs"
        done
    done
    echo
    echo "## W1 sph3d, N = 4,000,000, 1 thread"
    echo
    "$prox" bench sph3d --n 4000000 --threads 1 --runs 3
} | tee "$out"
echo "written: $out" >&2
