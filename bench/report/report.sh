#!/bin/bash
# report.sh: run prox's own benchmarks, the peers on the standard workloads
# (docs/workloads.md) and the Python module's benchmark, and write
# docs/benchmarks.md from them.
#   bench/report/report.sh [--quick|--full|--tiny] [--reps R] [--out FILE] [--prox PATH]
#                          [--python-only]
#   make bench-report [ARGS="--quick"]
# --quick: the quick sizes (under 30 minutes on a 2-core machine); --full: every
# size of docs/workloads.md; --tiny: sizes of a few seconds, to check the script
# itself (its figures mean nothing). --python-only: only the Python section
# (bench/python_bench.py, with the module built beside the CLI in PATH's
# folder), written into FILE in place of its Python section; the rest of FILE is
# kept. The introduction is bench/report/intro.md; all else in the output is
# generated. Plots go to docs/img/benchmarks-*.png (beside FILE's img/ folder),
# and the summary into the README beside FILE's folder, between its bench-report
# markers. Work files: build-report/ (git-ignored).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mode=quick reps=3 out="$root/docs/benchmarks.md" prox="$root/${BUILD:-build}/prox" python_only=0
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) mode=quick ;;
    --full) mode=full ;;
    --tiny) mode=tiny ;;
    --reps) reps=${2:?}; shift ;;
    --out) out=${2:?}; shift ;;
    --prox) prox=${2:?}; shift ;;
    --python-only) python_only=1 ;;
    -h|--help) usage ;;
    *) echo "report.sh: unknown argument '$1'" >&2; usage ;;
    esac
    shift
done
case "$reps" in ''|*[!0-9]*|0) echo "report.sh: --reps must be a positive integer" >&2; exit 2 ;; esac
[ -x "$prox" ] || { echo "report.sh: no prox CLI at $prox (run make first)" >&2; exit 1; }
prox=$(cd "$(dirname "$prox")" && pwd)/$(basename "$prox")
# The Python section needs the module and the C driver that `make` builds
# beside the CLI (python/CMakeLists.txt, PROX_BUILD_PYTHON; the bench drivers
# with the examples), and scipy and ASE, the peers it runs.
builddir=$(dirname "$prox")
if [ ! -f "$builddir/python/prox/__init__.py" ] || ! ls "$builddir"/python/prox/_prox*.so >/dev/null 2>&1; then
    echo "report.sh: no Python module in $builddir/python (make builds it when python3-dev and python3-numpy are found, PROX_BUILD_PYTHON=ON)" >&2
    exit 1
fi
[ -x "$builddir/bench_oneshot_points" ] ||
    { echo "report.sh: no $builddir/bench_oneshot_points (make checks builds it, PROX_BUILD_EXAMPLES=ON)" >&2; exit 1; }
"$root/tools/deps.sh" python3-numpy python3-scipy python3-ase
if [ "$python_only" = 1 ] && [ ! -f "$out" ]; then
    echo "report.sh: --python-only rewrites the Python section of a report; there is no $out" >&2
    exit 1
fi

work="$root/build-report"
own="$work/own" peers="$work/peers" py="$work/python"
rm -rf "$own" "$peers" "$py"
mkdir -p "$own" "$peers" "$py"
log() { echo "[report.sh $(date -u +%H:%M:%S)] $*" >&2; }
started=$(date -u +%s)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$root" diff --quiet HEAD -- src include tools bench python CMakeLists.txt 2>/dev/null || commit="$commit+dirty"

# ---- prox's own benchmarks: one file per command, its first line the command
# (as a user types it), the rest its stdout.
own_bench() { # NAME WORKLOAD ARGS...
    local name=$1 w=$2; shift 2
    log "$w: prox $*"
    {
        echo "$w prox $*"
        (cd "$own" && "$prox" "$@" 2>/dev/null)
    } > "$own/$name.txt"
}
if [ "$python_only" = 1 ]; then
    : # the Python section alone
elif [ "$mode" = tiny ]; then
    runs=1
    own_bench w1 W1 bench sph3d --n 20000 --threads 1 --runs $runs
    own_bench w2-k1 W2 bench nns2d --n 20000 --k 1 --threads 1 --runs $runs
    own_bench w3 W3 bench spheres3d --table 2 --n 10000 --threads 1 --runs $runs
    own_bench w4 W4 bench mixed2d --n 1000 --queries 10000 --threads 1 --runs $runs
    own_bench w5 W5 demo fluid --particles 2000 --frames 10 --algo all --threads 1 --quiet
    own_bench w6 W6 bench dem3d --n 1000 --steps 20 --threads 1 --runs 1
    export PEERS_W1_N="10000 20000" PEERS_W2_N=20000 PEERS_W2_K=5 PEERS_W3_N="5000 10000"
    export PEERS_W4_N=1000 PEERS_W4_Q=10000
elif [ "$mode" = quick ]; then
    runs=3
    own_bench w1 W1 bench sph3d --n 1000000 --threads 1 --runs $runs
    own_bench w2-k1 W2 bench nns2d --n 1000000 --k 1 --threads 1 --runs $runs
    own_bench w2-k20 W2 bench nns2d --n 1000000 --k 20 --threads 1 --runs $runs
    own_bench w3 W3 bench spheres3d --table 2 --n 1000000 --threads 1 --runs $runs
    own_bench w4 W4 bench mixed2d --n 10000 --queries 1000000 --threads 1 --runs $runs
    own_bench w5 W5 demo fluid --particles 50000 --frames 120 --algo all --threads 1 --quiet
    own_bench w6 W6 bench dem3d --n 10000 --threads 1 --runs 1
else
    runs=5
    own_bench w1 W1 bench sph3d --n 1000000 --threads 1 --runs $runs
    own_bench w1-4m W1 bench sph3d --n 4000000 --threads 1 --runs $runs
    for k in 1 5 20; do
        own_bench w2-k$k W2 bench nns2d --n 1000000 --k $k --threads 1 --runs $runs
    done
    own_bench w3 W3 bench spheres3d --table 2 --threads 1 --runs $runs
    own_bench w4 W4 bench mixed2d --n 10000 --queries 1000000 --threads 1 --runs $runs
    own_bench w5 W5 demo fluid --algo all --threads 1 --quiet
    own_bench w6 W6 bench dem3d --n 10000 --threads 1 --runs 3
fi

# ---- particles of different sizes (bench/sizes.sh): W7's contacts against
# CGAL's box intersection plus the exact test, equal radii against the
# single-radius path, a 1:100 spread against 1:2
if [ "$python_only" = 0 ]; then
    case "$mode" in tiny) sizes_n=20000 ;; *) sizes_n=1000000 ;; esac
    log "W7: bench/sizes.sh --n $sizes_n --runs $reps"
    {
        echo "W7 bench/sizes.sh --n $sizes_n --runs $reps"
        "$root/bench/sizes.sh" --n "$sizes_n" --runs "$reps" --build "$builddir" 2>/dev/null
    } > "$own/w7.txt"
fi

# ---- the Python module (bench/python_bench.py): W1 1M through Python against
# the same call in C, on one thread and on every core; prox against scipy's
# cKDTree and ASE's neighbor_list at 10^4, 10^5 and 10^6 points (ASE under a
# memory cap and a time limit, each size in a process of its own).
case "$mode" in
tiny) py_args=(--n-c 20000 --sizes "1e3,1e4" --runs 1) ;;
quick) py_args=(--n-c 1e6 --sizes "1e4,1e5,1e6" --runs 5) ;;
*) py_args=(--n-c 1e6 --sizes "1e4,1e5,1e6" --runs 9) ;;
esac
log "python: bench/python_bench.py ${py_args[*]}"
/usr/bin/python3 "$root/bench/python_bench.py" --section --build "$builddir" --c-threads 1,0 \
    "${py_args[@]}" --tmp "$py" -o "$py/section.md"
rm -f "$py"/w1-*.f64

# ---- cells of any shape (bench/cell_bench.py): W1 in a triclinic cell against
# the orthogonal periodic W1, MDAnalysis' FastNS, the batch of small cells,
# LAMMPS' neighbour count on a triclinic box; its section is appended to the
# report below.
case "$mode" in
tiny) cell_args=(--n 2e4 --small 20 --runs 1 --lammps-n 5e3 --ase-structures 2) ;;
quick) cell_args=(--n 1e6 --small 1000 --runs 3 --lammps-n 1e5) ;;
*) cell_args=(--n 1e6 --small 1000 --runs 5 --lammps-n 1e6) ;;
esac
log "cells: bench/cell_bench.py ${cell_args[*]}"
PATH="$builddir:$PATH" PYTHONPATH="$builddir/python" /usr/bin/python3 -W ignore \
    "$root/bench/cell_bench.py" "${cell_args[@]}" -o "$py/cell.md" >/dev/null

# ---- the peers: bench/peers/run.sh, its CSV into build-report/peers/
if [ "$python_only" = 0 ]; then
    log "peers: bench/peers/run.sh --$mode --reps $reps"
    peers_mode=$mode
    [ "$mode" != tiny ] || peers_mode=quick # with the sizes set above
    PEERS_COMMIT=$commit "$root/bench/peers/run.sh" "--$peers_mode" --reps "$reps" --prox "$prox" \
        --results "$peers" >/dev/null
    csv=$(ls "$peers"/peers-*.csv | grep -v skipped | head -1)
    skipped=${csv%.csv}.skipped.csv
    inputs=(--csv "$csv" --skipped "$skipped" --own "$own")
else
    inputs=(--python-only)
fi

# ---- the machine header, then the report
elapsed=$(( $(date -u +%s) - started ))
cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)
family=$(sed -n 's/^cpu family[^:]*: //p' /proc/cpuinfo | head -1)
model=$(sed -n 's/^model[^a-z:]*: //p' /proc/cpuinfo | head -1)
cpu="$cpu (cpu family $family, model $model)"
flags=$(sed -n 's/^flags[^:]*: //p' /proc/cpuinfo | head -1)
isa=baseline
for f in avx2 avx512f; do case " $flags " in *" $f "*) isa=$f ;; esac; done
version=$("$prox" --version 2>/dev/null | head -1)
simd=$(printf '%s\n' "$version" | tr ' ' '\n' | sed -n 's/^simd=//p' | head -1)
simd=${simd:+simd=$simd}
simd=${simd:-"simd=native build (unknown)"}
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$(dirname "$prox")/CMakeCache.txt" 2>/dev/null || true)
cc=$(${cc:-cc} --version | head -1)
mkdir -p "$(dirname "$out")/img"
/usr/bin/python3 "$here/report.py" "${inputs[@]}" --python "$py/section.md" \
    --intro "$here/intro.md" --out "$out" --img "$(dirname "$out")/img" \
    --readme "$(dirname "$out")/../README.md" \
    --cpu "$cpu" --isa "$isa" --simd "$simd" --cores "$(nproc)" --compiler "$cc" \
    --version "$version" --commit "$commit" --mode "$mode" --reps "$reps" \
    --elapsed "$elapsed" \
    --load "$load_before at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
# the cells' section last, in place of the one a --python-only run kept
/usr/bin/python3 - "$out" "$py/cell.md" <<'PY'
import re, sys
out, cell = sys.argv[1], open(sys.argv[2]).read()
text = re.sub(r"\n## Cells of any shape\n.*?(?=\n## |\Z)", "\n", open(out).read(), flags=re.S)
open(out, "w").write(text.rstrip("\n") + "\n\n" + cell)
PY
# ---- k nearest neighbours (bench/knn.sh): its section spliced into the report
if [ "$python_only" = 0 ]; then
    knn_n=1000000
    [ "$mode" != tiny ] || knn_n=20000
    log "knn: bench/knn.sh --n $knn_n --reps $reps"
    "$root/bench/knn.sh" --n "$knn_n" --reps "$reps" --work "$work/knn" \
        --prox-build "$builddir" --splice "$out" >/dev/null
fi
log "done in ${elapsed}s: $out"
