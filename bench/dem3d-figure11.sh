#!/bin/sh
# Poirrier 2009, Figure 11, from prox: W6 (the falling spheres) at several N, ms per
# step of every broad-phase structure over steps 0-10 (a) and 50-60 (b),
# from `prox bench dem3d`, drawn by gnuplot as the paper draws it (time
# against N, one line per structure).
#
# usage: bench/dem3d-figure11.sh [PROX] [OUT.png] [N...]
#   PROX    the prox binary (default build/prox)
#   OUT.png the chart (default docs/img/dem3d-figure11.png); the tables go to
#           OUT.txt and the plotted numbers to OUT.dat
#   N...    sizes (default 5000 10000 20000 30000, the paper's N < 30000)
# Environment: ARGS (default "--threads 1 --cpu-time --runs 3"), extra
# options for every `prox bench dem3d` run; TABLES="FILE..." draws the
# outputs of earlier `prox bench dem3d` runs instead of running it.
set -eu
prox=${1:-build/prox}
out=${2:-docs/img/dem3d-figure11.png}
[ $# -gt 2 ] && shift 2 || set --
sizes=${*:-5000 10000 20000 30000}
args=${ARGS:---threads 1 --cpu-time --runs 3}
base=${out%.png}
command -v gnuplot >/dev/null || tools/deps.sh gnuplot

: > "$base.txt"
if [ -n "${TABLES:-}" ]; then
    cat $TABLES >> "$base.txt" # outputs of earlier runs, as they are
else
    for n in $sizes; do
        # shellcheck disable=SC2086
        "$prox" bench dem3d --n "$n" $args >> "$base.txt"
        echo >> "$base.txt"
    done
fi
# "workload: W6 dem3d n=N ..." then rows "| name | m0 +- s0 | m1 +- s1 | ..."
# -> "N name m0 s0 m1 s1"
awk -F'|' '/^workload: W6 dem3d/ { split($0, w, "n="); split(w[2], v, " "); n = v[1] }
    $2 ~ /^ [a-z]+ $/ && $3 ~ /\+-/ {
        split($3, a, "[+][-]"); split($4, b, "[+][-]");
        gsub(/ /, "", $2); printf "%s %s %g %g %g %g\n", n, $2, a[1], a[2], b[1], b[2] }' \
    "$base.txt" | sort -k2,2 -k1,1n -s |
    awk 'NR > 1 && $2 != last { printf "\n\n" } { print; last = $2 }' > "$base.dat"
# one block per structure (gnuplot's index), in the order of the file
names=$(awk 'NF { print $2 }' "$base.dat" | uniq | tr '\n' ' ')

gnuplot <<EOF
set terminal pngcairo size 1100,480 font ',10'
set output '$out'
names = '$names'
set multiplot layout 1,2 title 'W6 falling spheres (Poirrier 2009, Figure 11): broad phase ms per step, mean and sd over the steps and runs'
set xlabel 'N (spheres)'
set ylabel 'ms per step'
set logscale y
set grid
set key top left
set title 'a. steps 0-10'
plot for [i=1:words(names)] '$base.dat' index (i-1) using 1:3:4 with yerrorlines title word(names, i)
set title 'b. steps 50-60'
plot for [i=1:words(names)] '$base.dat' index (i-1) using 1:5:6 with yerrorlines title word(names, i)
unset multiplot
EOF
echo "chart: $out (tables: $base.txt, numbers: $base.dat)"
