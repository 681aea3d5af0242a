#!/bin/bash
# check-boundaries.sh: every neighbour-search driver against prox on lattices
# where many pairs lie at exactly distance r (r = 0.5, 1, sqrt 2 on lattices
# of spacing 1 in 3D and 0.5 in 2D, negative coordinates included): each
# library's boundary convention, corrected as its driver says, must give
# prox's closed-ball count. Random workloads almost never test that. Also
# degenerate inputs: no point, one point, coincident points, coordinates 1e9.
#   check-boundaries.sh PROX BIN [WORK]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prox=${1:?usage: check-boundaries.sh PROX BIN [WORK]} bin=${2:?} work=${3:-$(mktemp -d)}
mkdir -p "$work"
lat3="$work/lattice3.txt" lat2="$work/lattice2.txt"
awk 'BEGIN { print "# dim=3"; for (i = 0; i < 12; i++) for (j = 0; j < 12; j++)
             for (k = 0; k < 12; k++) print i - 5, j, k - 7 }' > "$lat3"
awk 'BEGIN { print "# dim=2"; for (i = 0; i < 40; i++) for (j = 0; j < 40; j++)
             print i * 0.5 - 3, j * 0.5 }' > "$lat2"
# Degenerate inputs: no point, one point, coincident points, a lattice far
# from the origin (1e9 + small: spacing 1 stays exact there).
far="$work/far3.txt" empty="$work/empty3.txt" one="$work/one2.txt" dup="$work/dup2.txt"
awk 'BEGIN { print "# dim=3"; for (i = 0; i < 8; i++) for (j = 0; j < 8; j++)
             for (k = 0; k < 8; k++) printf "%d %d %d\n", 1e9 + i, -1e9 + j, 1e9 + k }' > "$far"
printf '# dim=3\n' > "$empty"
printf '# dim=2\n3 4\n' > "$one"
printf '# dim=2\n3 4\n3 4\n3 4\n3.5 4\n3 5\n' > "$dup"
drivers=("$bin/peer_nanoflann --order input" "$bin/peer_nanoflann --order tree"
         "$bin/peer_flann" "/usr/bin/python3 $here/scipy_driver.py --task pairs"
         "/usr/bin/python3 $here/scipy_driver.py --task lists"
         "/usr/bin/python3 $here/lammps_driver.py"
         "/usr/bin/python3 $here/lammps_driver.py --ranks 2")
failed=0
for f in "$lat3" "$lat2" "$far" "$empty" "$one" "$dup"; do
    for r in 0.5 1 1.4142135623730951; do
        want=$("$prox" pairs --count --threads 1 --radius "$r" "$f")
        for d in "${drivers[@]}"; do
            got=$($d "$f" --radius "$r" | tr ' ' '\n' | sed -n 's/^count=//p')
            if [ "$got" != "$want" ]; then
                echo "check-boundaries: $(basename "$f") r=$r: '$d' counted $got, prox $want" >&2
                failed=1
            fi
        done
    done
done
[ "$failed" -eq 0 ] && echo "check-boundaries: every driver agrees with prox on pairs at exactly r" >&2
exit "$failed"
