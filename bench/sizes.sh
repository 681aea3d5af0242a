#!/bin/bash
# sizes.sh: the benchmarks of particles of different sizes (issue 45,
# docs/workloads.md W7), one thread, medians, on a quiet machine:
#   bench/sizes.sh [--n N] [--runs R] [--build DIR] [--peers DIR]
# - W7 contacts at N (default 1,000,000) through prox_sized_pairs (count and
#   unsorted buffer), and CGAL's box_self_intersection_d over the spheres'
#   boxes plus the exact test (bench/peers' peer_cgal_boxes --workload W7,
#   built into DIR, default build-peers-drivers/, when CGAL is installed);
# - W1 at N with equal radii r/2 through the sized path against the
#   single-radius path (target: within 1.3x);
# - radii over 1:100 against 1:2 at the same expected contacts (target:
#   at most 2x);
# - W7 moving (20 steps of random motion): a step of prox_sized_skin_list
#   (skin 1) and of a kept prox_sized_grid (update and pairs) against
#   prox_sized_pairs from scratch at every step.
# Needs build/bench_sized_points (make checks). Prints key=value lines and
# the ratios; bench/report/report.sh puts them in docs/benchmarks.md (W7).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
n=1000000 runs=5 build="$root/build" peers="$root/build-peers-drivers"
while [ $# -gt 0 ]; do
    case "$1" in
    --n) n=${2:?}; shift ;;
    --runs) runs=${2:?}; shift ;;
    --build) build=${2:?}; shift ;;
    --peers) peers=${2:?}; shift ;;
    *) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
    shift
done
driver="$build/bench_sized_points"
[ -x "$driver" ] || { echo "sizes.sh: no $driver (make checks builds it)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$driver" w7 "$n" 1 "$work/w7.f64"
pin() { if command -v taskset >/dev/null; then taskset -c 0 "$@"; else "$@"; fi; }
echo "cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1 | tr ' ' '_')" \
     "load=$(cut -d' ' -f1 /proc/loadavg)"
contacts=$(pin "$driver" contacts "$work/w7.f64" "$runs")
echo "$contacts"
prox_line=$(printf '%s\n' "$contacts" | grep W7-buffer)
if [ ! -x "$peers/peer_cgal_boxes" ] && [ -f /usr/include/CGAL/box_intersection_d.h ]; then
    cmake -S "$root/bench/peers" -B "$peers" -DCMAKE_BUILD_TYPE=Release >/dev/null &&
        cmake --build "$peers" --target peer_cgal_boxes >/dev/null || true
fi
if [ -x "$peers/peer_cgal_boxes" ]; then
    best=""
    for _ in $(seq "$runs"); do
        line=$(pin "$peers/peer_cgal_boxes" --workload W7 "$work/w7.f64")
        s=$(printf '%s\n' "$line" | sed -n 's/.*total_s=\([0-9.]*\).*/\1/p')
        best="$best $s"
    done
    echo "$line"
    cgal=$(printf '%s\n' $best | sort -g | sed -n "$(( (runs + 1) / 2 ))p")
    prox_s=$(printf '%s\n' "$prox_line" | sed -n 's/.*seconds=\([0-9.]*\).*/\1/p')
    echo "W7 cgal-box-self median total_s=$cgal; prox x faster=$(echo "$cgal / $prox_s" | bc -l |
        cut -c1-5) (target >= 10)"
else
    echo "W7 cgal-box-self: skipped (CGAL not installed: tools/deps.sh libcgal-dev)"
fi
pin "$driver" equal "$n" "$runs"
pin "$driver" spread "$n" "$runs"
pin "$driver" moving "$work/w7.f64" 20
