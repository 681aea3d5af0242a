#!/bin/sh
# Figure 5 of Pouchol et al. 2009 on workload W2 (nns2d): neighbour search over
# 1,000,000 points in [0, 2^20)^2 for mean neighbour counts k = 1, 5, 20,
# with the uniform grid and with the hierarchical hash (Listing 3), one
# thread. Each run is `prox pairs --count` (every pair found, counted);
# the time is the CPU time of the whole command (user + system, reading a
# 16 MB binary file included), because on a shared machine the wall clock
# also counts other programs; the median of RUNS runs. Writes a table to
# bench/results/ and the plot to docs/img/figure5.png.
# Usage: bench/figure5.sh [BUILD/prox] [RUNS]
set -eu
prox=${1:-build/prox}
runs=${2:-3}
[ -x "$prox" ] || { echo "run 'make' first (no $prox)" >&2; exit 2; }
[ -x /usr/bin/time ] || tools/deps.sh time
tools/deps.sh gnuplot-nox
stamp="$(hostname)-$(date +%Y%m%d-%H%M)"
out="bench/results/figure5-$stamp.md"
dat="bench/results/figure5-$stamp.dat"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
: > "$dat"
{
    echo "# Figure 5 (W2 nns2d, N = 1,000,000), $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "Produced by \`bench/figure5.sh $prox $runs\` at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo "cpu_s: CPU seconds of \`prox pairs --count -t 1\` (median of $runs); query_s: its"
    echo "search, wall clock (median); struct_MB: memory of the structure."
    echo
    echo "| k | algo | pairs | cpu_s | query_s | candidates | struct_MB |"
    echo "|--:|------|------:|------:|--------:|-----------:|----------:|"
    for k in 1 5 20; do
        points="$tmp/nns2d-k$k.f64"
        "$prox" gen nns2d --n 1000000 --k "$k" -o "$points"
        radius=$(awk -v k="$k" 'BEGIN { printf "%.17g", 1048576 * sqrt(k / (3.141592653589793 * 1000000)) }')
        for algo in grid hierarchical; do
            : > "$tmp/cpu"
            : > "$tmp/query"
            for r in $(seq "$runs"); do
                /usr/bin/time -f "%U %S" -o "$tmp/time" "$prox" pairs --algo "$algo" --dim 2 \
                    --radius "$radius" --count --stats -t 1 "$points" > "$tmp/count" 2> "$tmp/stats"
                awk '{ print $1 + $2 }' "$tmp/time" >> "$tmp/cpu"
                sed -n 's/^query_s=//p' "$tmp/stats" >> "$tmp/query"
            done
            pairs=$(tail -1 "$tmp/count")
            cpu=$(median < "$tmp/cpu")
            query=$(median < "$tmp/query")
            candidates=$(sed -n 's/^candidates=//p' "$tmp/stats")
            mb=$(sed -n 's/^struct_mb=//p' "$tmp/stats")
            echo "| $k | $algo | $pairs | $cpu | $query | $candidates | $mb |"
            echo "$k $algo $cpu $mb" >> "$dat"
        done
    done
} | tee "$out"
gnuplot <<EOF
set terminal pngcairo size 1100,450 font ",10"
set output "docs/img/figure5.png"
set multiplot layout 1,2 title "W2 nns2d: neighbour search, N = 1,000,000 points (one thread)"
set xlabel "mean neighbours per point k"
set xtics (1, 5, 20)
set key top left
set grid
set ylabel "CPU seconds (prox pairs --count)"
set logscale y
plot for [a in "grid hierarchical"] sprintf("< grep -w %s %s", a, "$dat") using 1:3 \
     with linespoints title a
unset logscale y
set ylabel "structure memory (MB)"
plot for [a in "grid hierarchical"] sprintf("< grep -w %s %s", a, "$dat") using 1:4 \
     with linespoints title a
unset multiplot
EOF
echo "table: $out; data: $dat; plot: docs/img/figure5.png" >&2
