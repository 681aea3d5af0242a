#!/bin/sh
# Figure 4 of Pouchol et al. 2009 on workload W4 (mixed2d): build plus the exact hits
# of 1,000,000 segments against N = 1,000, 10,000 and 100,000 boxes, for
# uniform hashing (grid), multilevel hashing and the hierarchical hash, one
# thread; time and memory plotted against the fraction of segments that hit
# a box (the paper's x axis). Writes the tables to bench/results/ and the
# plot to docs/img/figure4.png.
# Uniform hashing runs once per N (it is slow); the others RUNS times.
# Usage: bench/figure4.sh [BUILD/prox] [RUNS]
set -eu
prox=${1:-build/prox}
runs=${2:-3}
[ -x "$prox" ] || { echo "run 'make' first (no $prox)" >&2; exit 2; }
tools/deps.sh gnuplot-nox
stamp="$(hostname)-$(date +%Y%m%d-%H%M)"
out="bench/results/figure4-$stamp.md"
dat="bench/results/figure4-$stamp.dat"
{
    echo "# Figure 4 (W4 mixed2d), $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "Produced by \`bench/figure4.sh $prox $runs\` at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
    for n in 1000 10000 100000; do
        echo
        echo "## N = $n"
        echo
        "$prox" bench mixed2d --n "$n" --queries 1000000 --threads 1 --runs "$runs" \
            --algos multilevel,hierarchical
        echo
        echo "Uniform hashing, one run (it tests 60-100x more candidates):"
        echo
        "$prox" bench mixed2d --n "$n" --queries 1000000 --threads 1 --runs 1 --algos grid
    done
} | tee "$out"
# Data: n hit_fraction algo total_s (wall) cpu_s struct_MB; the columns
# are found by their names in the table's header (the bench has gained
# columns before: a fixed position once plotted cells_visited as memory).
awk '/^workload:/ { split($3, a, "="); n = a[2] }
     /hit_fraction=/ { for (i = 1; i <= NF; i++) if ($i ~ /^hit_fraction=/) { split($i, b, "="); f = b[2] } }
     /^\| algo \|/ { for (i = 1; i <= NF; i++) col[$i] = i }
     /^\| (grid|multilevel|hierarchical) \|/ {
         print n, f, $2, $col["total_s"], $col["cpu_s"], $col["struct_MB"] }' "$out" > "$dat"
gnuplot <<EOF
set terminal pngcairo size 1100,450 font ",10"
set output "docs/img/figure4.png"
set multiplot layout 1,2 title "W4 mixed2d: 1,000,000 segment queries, N = 1,000 / 10,000 / 100,000 boxes (one thread)"
set xlabel "fraction of segments hitting a box"
set key top left
set grid
set ylabel "build + queries, CPU seconds"
set logscale y
plot for [a in "grid multilevel hierarchical"] sprintf("< grep -w %s %s", a, "$dat") using 2:5 \
     with linespoints title a
set ylabel "structure memory (MB)"
plot for [a in "grid multilevel hierarchical"] sprintf("< grep -w %s %s", a, "$dat") using 2:6 \
     with linespoints title a
unset multiplot
EOF
echo "tables: $out; data: $dat; plot: docs/img/figure4.png" >&2
