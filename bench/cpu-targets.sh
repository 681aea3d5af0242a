#!/bin/sh
# The grid's speed targets at one SIMD level, in one run, against the
# peers on the same data (docs/design.md, "Figures on this page"):
#   - W1 1M count against the plain scalar grid (build/bench_plain_grid,
#     which times both in one process);
#   - W1 1M sorted pairs and W2 1M (k = 20) lists against nanoflann (queries
#     in tree order) and LAMMPS' neighbour-list build, one-shot and warm
#     (`prox pairs --runs 6`: medians of the runs after the first, timed as
#     LAMMPS' rebuild is);
#   - W1's lists as drawn and in Z-order, W1 as a periodic unit cube;
#   - one thread against two, one-shot, and warm for W1's pairs and W2's
#     lists.
# Each round runs every row once, alternated; prints medians and minima over
# the rounds and the ratios, with the CPU and the level. prox's time is
# build_s + query_s of `prox pairs --stats`.
#
# Usage: bench/cpu-targets.sh [ROUNDS]   (default 5; PROX_SIMD picks the
#        level, default the CPU's best; needs `make`; nanoflann's rows need
#        `make bench-peers`, LAMMPS' rows Debian's lammps (`lmp`), and each
#        is left out without them). Data and samples go to build-targets/.
set -eu
rounds=${1:-5}
prox=build/prox plain=build/bench_plain_grid nanoflann=build-peers-drivers/peer_nanoflann
work=build-targets
if [ ! -x "$prox" ] || [ ! -x "$plain" ]; then
    echo "cpu-targets: run 'make' first" >&2
    exit 2
fi
mkdir -p "$work"

gen() { # NAME GEN_ARGS...: FILE.f64 and FILE.txt in the work folder, once
    name=$1; shift
    [ -s "$work/$name.txt" ] || "$prox" gen "$@" -o "$work/$name.txt"
    [ -s "$work/$name.f64" ] || "$prox" gen "$@" -o "$work/$name.f64"
}
radius_of() { sed -n 's/^# radius=//p' "$work/$1.txt"; }
gen w1 sph3d --n 1000000
gen w1z sph3d --n 1000000 --order z
gen k20 nns2d --n 1000000 --k 20
r1=$(radius_of w1) r2=$(radius_of k20)

level=$("$prox" --version | sed -n 's/.*simd=\([a-z0-9]*\).*/\1/p')
have_nanoflann=0; [ -x "$nanoflann" ] && have_nanoflann=1
have_lammps=0; command -v lmp >/dev/null && have_lammps=1

pairs() { # ROW THREADS ARGS...: one line "ROW seconds"
    row=$1 threads=$2; shift 2
    "$prox" pairs --stats --threads "$threads" "$@" 2>&1 >/dev/null |
        awk -F= -v row="$row" '$1=="build_s"{b=$2} $1=="query_s"{q=$2} END{print row, b + q}'
}
peer_total() { # ROW COMMAND...: one line "ROW total_s"
    row=$1; shift
    echo "$row $("$@" | sed -n 's/.*total_s=\([0-9.]*\).*/\1/p' | head -n 1)"
}

samples=$work/samples.txt
: >"$samples"
r=0
while [ "$r" -lt "$rounds" ]; do
    r=$((r + 1))
    echo "cpu-targets: round $r of $rounds" >&2
    {
        "$plain" "$work/w1.f64" 3 "$r1" 3 |
            sed -n -e 's/^plain grid count: *\([0-9.]*\).*/plain-count \1/p' \
                -e 's/^prox count: *\([0-9.]*\).*/prox-count \1/p'
        for t in 1 2; do
            pairs "w1-pairs-${t}t" "$t" --radius "$r1" -o /dev/null "$work/w1.f64"
            pairs "w1-lists-${t}t" "$t" --lists --radius "$r1" -o /dev/null "$work/w1.f64"
            pairs "w1-count-${t}t" "$t" --count --radius "$r1" "$work/w1.f64"
            pairs "w1-periodic-${t}t" "$t" --periodic 1,1,1 --radius "$r1" -o /dev/null "$work/w1.f64"
            pairs "w2-lists-${t}t" "$t" --dim 2 --lists --radius "$r2" -o /dev/null "$work/k20.f64"
        done
        pairs w1-pairs-warm 1 --runs 6 --radius "$r1" -o /dev/null "$work/w1.f64"
        pairs w1-lists-warm 1 --runs 6 --lists --radius "$r1" -o /dev/null "$work/w1.f64"
        pairs w1z-lists-warm 1 --runs 6 --lists --radius "$r1" -o /dev/null "$work/w1z.f64"
        pairs w2-lists-warm 1 --runs 6 --dim 2 --lists --radius "$r2" -o /dev/null "$work/k20.f64"
        pairs w1-pairs-warm-2t 2 --runs 6 --radius "$r1" -o /dev/null "$work/w1.f64"
        pairs w2-lists-warm-2t 2 --runs 6 --dim 2 --lists --radius "$r2" -o /dev/null "$work/k20.f64"
        if [ "$have_nanoflann" = 1 ]; then
            peer_total w1-nanoflann "$nanoflann" "$work/w1.txt" --radius "$r1" --workload W1 --order tree
            peer_total w2-nanoflann "$nanoflann" "$work/k20.txt" --radius "$r2" --workload W2 --order tree
        fi
        if [ "$have_lammps" = 1 ]; then
            peer_total w1-lammps python3 bench/peers/lammps_driver.py "$work/w1.txt" --radius "$r1" --workload W1
            peer_total w2-lammps python3 bench/peers/lammps_driver.py "$work/k20.txt" --radius "$r2" --workload W2
        fi
    } >>"$samples"
done

echo "# cpu-targets: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //'), simd=$level, $rounds rounds, $(date -u '+%Y-%m-%d %H:%M UTC')"
sort -k1,1 -k2,2n "$samples" | awk -v nf="$have_nanoflann" -v lm="$have_lammps" '
{ n[$1]++; v[$1, n[$1]] = $2 }
END {
    for (k in n) { med[k] = v[k, int((n[k] + 1) / 2)]; low[k] = v[k, 1] }
    printf "%-18s %10s %10s\n", "row", "median_s", "min_s"
    for (k in n) printf "%-18s %10.4f %10.4f\n", k, med[k], low[k] | "sort"
    close("sort")
    print ""
    printf "count / plain grid            %.3f   (target <= 0.35; bench_plain_grid, both in process)\n",
           med["prox-count"] / med["plain-count"]
    if (nf) {
        printf "W1 pairs: nanoflann / prox    one-shot %.1f, warm %.1f   (target >= 16)\n",
               med["w1-nanoflann"] / med["w1-pairs-1t"], med["w1-nanoflann"] / med["w1-pairs-warm"]
        printf "W2 lists: nanoflann / prox    one-shot %.1f, warm %.1f   (target >= 10)\n",
               med["w2-nanoflann"] / med["w2-lists-1t"], med["w2-nanoflann"] / med["w2-lists-warm"]
    }
    if (lm) {
        printf "W1 pairs: LAMMPS / prox       one-shot %.2f, warm %.2f   (target >= 5)\n",
               med["w1-lammps"] / med["w1-pairs-1t"], med["w1-lammps"] / med["w1-pairs-warm"]
        printf "W2 lists: LAMMPS / prox       one-shot %.2f, warm %.2f   (target >= 2)\n",
               med["w2-lammps"] / med["w2-lists-1t"], med["w2-lammps"] / med["w2-lists-warm"]
    }
    printf "W1 lists, drawn / Z-order     one-shot %.4f s, warm %.4f / %.4f s   (target <= 0.2)\n",
           med["w1-lists-1t"], med["w1-lists-warm"], med["w1z-lists-warm"]
    printf "W1 periodic pairs             %.4f s   (target <= 0.25)\n", med["w1-periodic-1t"]
    printf "two threads / one             pairs %.2f, lists %.2f, count %.2f, periodic %.2f, W2 lists %.2f   (target >= 1.8)\n",
           med["w1-pairs-1t"] / med["w1-pairs-2t"], med["w1-lists-1t"] / med["w1-lists-2t"],
           med["w1-count-1t"] / med["w1-count-2t"], med["w1-periodic-1t"] / med["w1-periodic-2t"],
           med["w2-lists-1t"] / med["w2-lists-2t"]
    printf "two threads / one, warm       W1 pairs %.2f, W2 lists %.2f   (target >= 1.8)\n",
           med["w1-pairs-warm"] / med["w1-pairs-warm-2t"], med["w2-lists-warm"] / med["w2-lists-warm-2t"]
}'
