#!/bin/sh
# The `make run` main job, for now: workload W1 sph3d at N = 1,000,000
# through the CLI. Generates the points, counts the pairs with the grid, then
# benchmarks every algorithm. About a minute on a 2-core machine.
# Usage: tools/main-job.sh BUILD/prox
set -eu

prox=${1:?usage: tools/main-job.sh PATH/TO/prox}
if [ ! -x "$prox" ]; then
    echo "main-job: $prox is not an executable (run 'make' first)" >&2
    exit 2
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/prox-main-job.XXXXXX")
points="$dir/sph3d-1m.txt"
start=$(date +%s)

step() {
    echo
    echo "== $*"
}

step "prox gen sph3d --n 1000000 -o $points"
"$prox" gen sph3d --n 1000000 -o "$points"
sed -n '1,3p' "$points"

step "prox pairs --algo grid --count --stats $points"
"$prox" pairs --algo grid --count --stats "$points" 2>"$dir/pairs-stats.txt" >"$dir/pairs-count.txt"
echo "pairs: $(cat "$dir/pairs-count.txt")"
cat "$dir/pairs-stats.txt"

step "prox bench sph3d --n 1000000 --runs 3"
"$prox" bench sph3d --n 1000000 --runs 3 | tee "$dir/bench-sph3d.md"

echo
echo "main job done in $(($(date +%s) - start)) s; files in $dir:"
echo "  sph3d-1m.txt      the points (prox gen sph3d, seed 1; radius in its header)"
echo "  pairs-count.txt   the number of pairs within the radius"
echo "  pairs-stats.txt   prox pairs --stats (timings, candidates, memory)"
echo "  bench-sph3d.md    the benchmark table (Markdown)"
