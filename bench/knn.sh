#!/bin/bash
# knn.sh: k nearest neighbours, prox against nanoflann (tree and input
# order), scipy's cKDTree (workers=1) and pykdtree, on the same files, one
# thread (prox also on two), medians of R runs of build + search; every
# row's checksum of the neighbours must equal prox's (exit 1 if not).
#   bench/knn.sh [--reps R] [--n N] [--work DIR] [--prox-build DIR] [--splice FILE] [--part P]
# Workloads: W1 (sph3d, uniform in the unit cube) at k = 16, the same
# points in Z-order, 40 Gaussian blobs of N points at k = 16, W2 (nns2d,
# 2D over 2^20 x 2^20) at k = 8; then cells (part `cells`): W1 in the
# periodic unit box (prox_knn's minimum images, prox_cell_knn's images of
# the cube, scipy's boxsize) and W1 mapped into the triclinic cell of
# docs/workloads.md (prox_cell_knn). P: all (default), plain or cells.
# Prints Markdown sections; --splice FILE writes each into FILE between
# its markers (appended when absent), as bench/report/report.sh does for
# docs/benchmarks.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
reps=3 n=1000000 work="$root/build-knn-work" build="$root/${BUILD:-build}" splice="" part=all
while [ $# -gt 0 ]; do
    case "$1" in
    --reps) reps=${2:?}; shift ;;
    --n) n=${2:?}; shift ;;
    --work) work=${2:?}; shift ;;
    --prox-build) build=${2:?}; shift ;;
    --splice) splice=${2:?}; shift ;;
    --part) part=${2:?}; shift ;;
    *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
    shift
done
log() { echo "[knn.sh $(date -u +%H:%M:%S)] $*" >&2; }
"$root/tools/deps.sh" libnanoflann-dev python3-numpy python3-scipy python3-pykdtree >&2
[ -x "$build/prox" ] && [ -x "$build/bench_knn_points" ] ||
    { echo "knn.sh: no $build/prox or $build/bench_knn_points (make checks builds them)" >&2; exit 1; }
mkdir -p "$work"
cmake -S "$here/peers" -B "$work/drivers" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/drivers" --target peer_nanoflann_knn -j2 >/dev/null

log "generating N=$n"
"$build/prox" gen sph3d --n "$n" -o "$work/w1.f64" 2>/dev/null
"$build/prox" gen sph3d --n "$n" --order z -o "$work/w1z.f64" 2>/dev/null
"$build/prox" gen nns2d --n "$n" -o "$work/w2.f64" 2>/dev/null
/usr/bin/python3 - "$work/blobs.f64" "$n" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(40)
n = int(sys.argv[2])
centres = rng.random((40, 3))
which = rng.integers(0, 40, n)
(centres[which] + 0.01 * rng.standard_normal((n, 3))).astype("<f8").tofile(sys.argv[1])
PY

# NAME FILE DIM K: every row's median result line fields into $work/rows.txt
median_row() { # runs the command R times, prints the line of the median total_s
    local lines=() t
    for _ in $(seq "$reps"); do lines+=("$("$@")"); done
    printf '%s\n' "${lines[@]}" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^total_s=/) { split($i, a, "="); print a[2] "\t" $0 } }' |
        sort -g | awk -v m=$(( (reps + 1) / 2 )) 'NR == m' | cut -f2-
}
: > "$work/rows.txt"
: > "$work/cell-rows.txt"
run_case() { # LABEL FILE DIM K
    local label=$1 file=$2 dim=$3 k=$4
    log "$label k=$k"
    {
        median_row "$build/bench_knn_points" "$file" "$dim" "$k" 1 1 "$label"
        median_row "$build/bench_knn_points" "$file" "$dim" "$k" 1 2 "$label" | sed 's/^library=prox /library=prox-2-threads /'
        median_row "$work/drivers/peer_nanoflann_knn" "$file" "$dim" "$k" tree "$label"
        median_row "$work/drivers/peer_nanoflann_knn" "$file" "$dim" "$k" input "$label"
        median_row /usr/bin/python3 "$here/peers/knn_driver.py" "$file" "$dim" "$k" scipy "$label"
        median_row /usr/bin/python3 "$here/peers/knn_driver.py" "$file" "$dim" "$k" pykdtree "$label"
    } | sed "s/^/k=$k /" >> "$work/rows.txt"
}
# W1 periodic: the unit box as prox_knn's period and as a cube cell, and
# scipy's boxsize (the same neighbours); W1 in the triclinic cell.
run_cells() { # FILE K
    local file=$1 k=$2
    log "W1 in cells k=$k"
    {
        median_row "$build/bench_knn_points" "$file" 3 "$k" 1 1 W1-periodic box
        median_row "$build/bench_knn_points" "$file" 3 "$k" 1 1 W1-periodic cell-cube | sed 's/^library=prox /library=prox-cell-knn /'
        median_row /usr/bin/python3 "$here/peers/knn_driver.py" "$file" 3 "$k" scipy W1-periodic --boxsize 1
        median_row "$build/bench_knn_points" "$file" 3 "$k" 1 1 W1-triclinic cell-tri
        median_row "$build/bench_knn_points" "$file" 3 "$k" 1 2 W1-triclinic cell-tri | sed 's/^library=prox /library=prox-2-threads /'
    } | sed "s/^/k=$k /" >> "$work/cell-rows.txt"
}
if [ "$part" != cells ]; then
    run_case W1 "$work/w1.f64" 3 16
    run_case W1-z-order "$work/w1z.f64" 3 16
    run_case blobs-40 "$work/blobs.f64" 3 16
    run_case W2 "$work/w2.f64" 2 8
fi
[ "$part" = plain ] || run_cells "$work/w1.f64" 16

cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)
# section ROWS TITLE MARKER INTRO: the Markdown section of the rows (exit 1
# when a row's checksum differs from its group's prox row).
section() {
    /usr/bin/python3 - "$1" "$cpu" "$("$build/prox" --version | head -1)" "$reps" \
        "$(cut -d' ' -f1-3 /proc/loadavg)" "$2" "$3" "$4" <<'PY'
import sys
rows = []
for line in open(sys.argv[1]):
    f = dict(w.split("=", 1) for w in line.split())
    rows.append(f)
title, marker, intro = sys.argv[6], sys.argv[7], sys.argv[8]
out = [f"## {title}", "", f"<!-- {marker} section: written by bench/knn.sh -->", "",
       f"{intro}, build and search together, one "
       f"thread unless named, medians of {sys.argv[4]} runs; {sys.argv[3]}; CPU: {sys.argv[2]}; "
       f"load average {sys.argv[5]}. `bench/knn.sh` writes this section; every row's checksum "
       f"of the neighbours' indices equals prox's.", ""]
bad = False
base_of = {}
for w in dict.fromkeys(r["workload"] for r in rows):
    group = [r for r in rows if r["workload"] == w]
    base = base_of[w] = next(r for r in group if r["library"] == "prox")
    out += [f"### {w}, N = {base['N']}, k = {group[0]['k']}", "",
            "| library | build s | search s | total s | prox is faster by | peak RSS MiB |",
            "|---|---:|---:|---:|---:|---:|"]
    for r in group:
        ratio = float(r["total_s"]) / float(base["total_s"])
        bad |= r["count"] != base["count"]
        out.append(f"| {r['library']} | {float(r['build_s']):.3f} | {float(r['query_s']):.3f} | "
                   f"{float(r['total_s']):.3f} | {ratio:.1f}x | {float(r['peak_rss_mb']):.0f} |")
    out += ["", f"prox: `{base.get('method')}`, {base.get('candidates_per_query')} candidates a "
            f"query, {base.get('index_bytes_per_point')} bytes a point beyond the output.", ""]
if "W1-triclinic" in base_of and "W1-periodic" in base_of:
    ratio = float(base_of["W1-triclinic"]["total_s"]) / float(base_of["W1-periodic"]["total_s"])
    out += [f"W1 in the triclinic cell (`prox_cell_knn`) takes {ratio:.2f} times W1 in the "
            f"periodic unit box (`prox_knn`), in the same run.", ""]
out.append(f"<!-- end of the {marker} section -->")
print("\n".join(out))
sys.exit(1 if bad else 0)
PY
}
# splice FILE TITLE MARKER SECTION_FILE: the section between its markers.
splice_into() {
    /usr/bin/python3 - "$1" "$2" "$3" "$4" <<'PY'
import os, sys
path, title, marker = sys.argv[1:4]
section = open(sys.argv[4]).read().strip()
text = open(path).read() if os.path.exists(path) else ""
begin = f"## {title}\n\n<!-- {marker} section: written by bench/knn.sh -->"
end = f"<!-- end of the {marker} section -->"
if begin in text and end in text:
    text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
else:
    text = text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
PY
    log "spliced '$2' into $1"
}
emit() { # ROWS TITLE MARKER INTRO
    local text
    text=$(section "$@") || { echo "knn.sh: a row's checksum differs from prox's" >&2; printf '%s\n' "$text"; exit 1; }
    printf '%s\n\n' "$text"
    if [ -n "$splice" ]; then
        printf '%s\n' "$text" > "$work/section.md"
        splice_into "$splice" "$2" "$3" "$work/section.md"
    fi
}
[ "$part" = cells ] || emit "$work/rows.txt" "k nearest neighbours" knn \
    "Every point's k nearest others (itself left out)"
[ "$part" = plain ] || emit "$work/cell-rows.txt" "k nearest neighbours in a cell" knn-cell \
    "Every point's k nearest images in a periodic cell (itself left out)"
