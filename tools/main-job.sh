#!/bin/sh
# The `make run` main job: the 3D fluid scene of Pouchol et al. 2009, Figure 6 (workload
# W5) through `prox demo fluid`: particles fall through 2,000 static spheres
# onto the floor, once per broad-phase structure (--algo all), every phase of
# every frame timed. Writes frames of the first run and the plot of ms per
# frame per structure, then prints where they are and the table.
# About a minute on a 2-core machine; PARTICLES=100000 FRAMES=400 for the
# full-size scene.
# Usage: tools/main-job.sh BUILD/prox [OUTPUT_DIR]
set -eu

prox=${1:?usage: tools/main-job.sh PATH/TO/prox [OUTPUT_DIR]}
if [ ! -x "$prox" ]; then
    echo "main-job: $prox is not an executable (run 'make' first)" >&2
    exit 2
fi
dir=${2:-$(mktemp -d "${TMPDIR:-/tmp}/prox-main-job.XXXXXX")}
mkdir -p "$dir"
particles=${PARTICLES:-50000}
frames=${FRAMES:-240}
start=$(date +%s)

echo "== prox demo fluid --particles $particles --frames $frames --dt 0.0075 --algo all --png $dir --png-every 30 --plot"
"$prox" demo fluid --particles "$particles" --frames "$frames" --dt 0.0075 --algo all \
    --png "$dir" --png-every 30 --plot >"$dir/table.md"

echo
echo "main job done in $(($(date +%s) - start)) s; pictures and data in $dir:"
echo "  fluid-00000.png ... fluid-$(printf %05d "$frames").png   frames of the first structure's run"
echo "  fluid-ms-per-frame.png   ms per frame over time, one curve per structure (Pouchol et al. 2009, Fig. 6)"
echo "  fluid-ms-per-frame.dat   the plot's data"
echo "  table.md                 the table below"
cat "$dir/table.md"
