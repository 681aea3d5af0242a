#!/bin/bash
# check-boundaries.sh: every broad-phase driver against prox (brute force) on
# inputs where the library conventions matter, which random workloads almost
# never exercise:
#   W3: unit spheres on a lattice of spacing 2 (every neighbour's box touches
#       exactly, on faces, edges and corners), negative coordinates, extra
#       spheres at half and whole offsets and duplicates;
#   W4: integer boxes (some of zero width or height) and segments lying along
#       box edges, ending exactly on corners, of length 0 on faces, and
#       random ones.
# Each library's convention, corrected as its driver says (README.md), must
# give prox's closed-box count. Also run at a size where the corrections
# cannot hide: W3's lattice put far from the origin (coordinates near 2^20).
#   check-boundaries.sh PROX BIN [WORK]
set -euo pipefail
prox=${1:?usage: check-boundaries.sh PROX BIN [WORK]} bin=${2:?} work=${3:-$(mktemp -d)}
mkdir -p "$work"

lattice() { # OFFSET -> W3 boxes (centre -+ 1, %.17g) on stdout
    awk -v off="$1" 'BEGIN {
        srand(5)
        for (i = 0; i < 12; i++) for (j = 0; j < 12; j++) for (k = 0; k < 12; k++)
            c[n++] = (off + 2 * i - 7) " " (2 * j + 0.5) " " (2 * k - 100)
        split("0 1 2 0.5", step, " ")
        for (e = 0; e < 300; e++)
            c[n++] = (off + 2 * int(12 * rand()) - 7 + step[1 + int(4 * rand())]) " " \
                     (2 * int(12 * rand()) + 0.5) " " (2 * int(12 * rand()) - 100)
        for (i = 0; i < n; i++) {
            split(c[i], x, " ")
            printf "%.17g %.17g %.17g %.17g %.17g %.17g\n",
                   x[1] - 1, x[2] - 1, x[3] - 1, x[1] + 1, x[2] + 1, x[3] + 1
        }
    }'
}
lattice 0 > "$work/lattice.boxes.txt"
lattice 1048576 > "$work/lattice-far.boxes.txt"

awk -v boxes="$work/edges.txt" -v segs="$work/edges.segments.txt" 'BEGIN {
    srand(7)
    split("0 1 2 4 8 32", ws, " "); split("0 1 2 4 8", hs, " ")
    for (i = 0; i < 500; i++) {
        x = int(201 * rand()); y = int(201 * rand())
        w = ws[1 + int(6 * rand())]; h = hs[1 + int(5 * rand())]
        bx[i] = x; by[i] = y; bX[i] = x + w; bY[i] = y + h
        print x, y, x + w, y + h > boxes
    }
    for (s = 0; s < 20000; s++) {
        b = int(500 * rand()); c = rand()
        if (c < 0.3) {          # along the line of a bottom edge
            x0 = int(216 * rand()) - 5
            print x0, by[b], x0 + int(11 * rand()), by[b] > segs
        } else if (c < 0.6) {   # from a top-right corner outwards
            print bX[b], bY[b], bX[b] + int(6 * rand()), bY[b] + int(6 * rand()) > segs
        } else if (c < 0.7) {   # length 0 on the left face
            y0 = by[b] + int((bY[b] - by[b] + 1) * rand())
            print bx[b], y0, bx[b], y0 > segs
        } else {
            x0 = -5 + 215 * rand(); y0 = -5 + 215 * rand()
            printf "%.17g %.17g %.17g %.17g\n", x0, y0, x0 + 32 * rand() - 16,
                   y0 + 32 * rand() - 16 > segs
        }
    }
}'

failed=0
check() { # WANT LABEL COMMAND...
    local want=$1 label=$2 got
    shift 2
    got=$("$@" | tr ' ' '\n' | sed -n 's/^count=//p')
    if [ "$got" != "$want" ]; then
        echo "check-boundaries: $label: '$*' counted ${got:-nothing}, prox $want" >&2
        failed=1
    fi
}

for f in "$work/lattice.boxes.txt" "$work/lattice-far.boxes.txt"; do
    want=$("$prox" collide --algo brute --count --threads 1 "$f")
    [ "$want" -gt 0 ] || { echo "check-boundaries: no pairs in $f" >&2; exit 1; }
    check "$want" "W3 $(basename "$f")" "$bin/peer_cgal_boxes" --workload W3 "$f"
    for v in dbvt dbvt-deferred dbvt-optimized axis-sweep; do
        check "$want" "W3 $(basename "$f")" "$bin/peer_bullet" --workload W3 --variant "$v" "$f"
    done
    for v in dynamic sap hash; do
        check "$want" "W3 $(basename "$f")" "$bin/peer_fcl" --workload W3 --variant "$v" "$f"
    done
done

want=$("$prox" query --algo brute --segments --count --threads 1 "$work/edges.txt" \
       "$work/edges.segments.txt")
check "$want" "W4 edges" "$bin/peer_cgal_boxes" --workload W4 "$work/edges.txt" "$work/edges.segments.txt"
for v in dbvt dbvt-optimized; do
    check "$want" "W4 edges" "$bin/peer_bullet" --workload W4 --variant "$v" "$work/edges.txt" \
        "$work/edges.segments.txt"
done
for v in query raycast; do
    check "$want" "W4 edges" "$bin/peer_box2d" --workload W4 --variant "$v" "$work/edges.txt" \
        "$work/edges.segments.txt"
done
[ "$failed" -eq 0 ] && echo "check-boundaries: every broad-phase driver agrees with prox on touching boxes and segments on faces" >&2
exit "$failed"
