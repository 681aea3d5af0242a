#!/bin/sh
# plot-spheres3d.sh: Poirrier 2009, Table 2 as a plot: time per step against N,
# log-log, one line per structure, from the output of
# `prox bench spheres3d` (one or more files, concatenated in order).
#
#   bench/plot-spheres3d.sh OUT.png COLUMN RESULTS.md...
#
# COLUMN: cpu_s (process CPU time, steadier on a shared machine) or total_s
# (wall clock). Only one-thread tables are plotted. Needs gnuplot (tools/deps.sh gnuplot-nox installs it).
set -eu
out=$1
column=$2
shift 2
command -v gnuplot >/dev/null || tools/deps.sh gnuplot-nox
data=$(mktemp)
trap 'rm -f "$data" "$data".*' EXIT
# One block per structure: "N seconds" lines.
awk -v col="$column" '
    /^threads: / { threads = $2; sub(";", "", threads) }
    /^N = / { n = $3; sub(",", "", n) }
    /^\| algo \|/ { for (k = 2; k <= NF; k++) { h = $k; gsub(/ /, "", h); if (h == col) c = k } }
    threads == 1 && /^\| [a-z]/ && !/^\| algo/ && !/not available|failed/ {
        name = $2; gsub(/ /, "", name); t = $c; gsub(/ /, "", t)
        print n, t >> (FILENAME_OUT "." name)
        names[name] = 1
    }
    END { for (k in names) print k > (FILENAME_OUT ".names") }
' FILENAME_OUT="$data" "$@"
plots=""
for name in brute sap kdtree-1 kdtree-2 multilevel hierarchical grid; do
    [ -f "$data.$name" ] || continue
    sort -n "$data.$name" -o "$data.$name"
    plots="$plots${plots:+, }'$data.$name' using 1:2 with linespoints title '$name'"
done
gnuplot <<EOF
set terminal pngcairo size 900,600 noenhanced
set output '$out'
set logscale xy
set xlabel 'N (spheres, W3, d = 0.1)'
set ylabel 'seconds per step (build + pairs, $column, one thread)'
set title 'Poirrier 2009, Table 2 on W3: broad phase from scratch'
set key top left
set grid
plot $plots
EOF
echo "wrote $out"
