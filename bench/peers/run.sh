#!/bin/bash
# run.sh: prox and its peer libraries side by side on the same workload files
# (issue 5; the contract with the drivers is README.md beside this script).
#   bench/peers/run.sh [--quick|--full] [--only W1,W2,...] [--reps R]
#                      [--work DIR] [--prox PATH] [--results DIR]
# --prox PATH uses an already built prox CLI instead of building build/prox.
# PEERS_COMMIT=TEXT replaces the commit the report names (default: HEAD, with
# +dirty when the checkout has changes); PEERS_MANIFESTS="FILE..." replaces
# bench/peers/*.drivers (e.g. to try one driver).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mode=quick only="W1,W2,W3,W4" reps=3 work="$root/build-peers-work" prox="" results="$root/bench/results"
usage() { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) mode=quick ;;
    --full) mode=full ;;
    --only) only=${2:?}; shift ;;
    --reps) reps=${2:?}; shift ;;
    --work) work=${2:?}; shift ;;
    --prox) prox=${2:?}; shift ;;
    --results) results=${2:?}; shift ;;
    -h|--help) usage ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage ;;
    esac
    shift
done
case "$reps" in ''|*[!0-9]*|0) echo "run.sh: --reps must be a positive integer" >&2; exit 2 ;; esac

# ---- sizes (README.md); PEERS_* variables override -----------------------
if [ "$mode" = quick ]; then
    W1_N=${PEERS_W1_N:-"100000 1000000"}
    W2_N=${PEERS_W2_N:-"1000000"}; W2_K=${PEERS_W2_K:-"20"}
    W3_N=${PEERS_W3_N:-"50000 100000"}; W3_D=${PEERS_W3_D:-"0.1"}
    W4_N=${PEERS_W4_N:-"1000 10000"}; W4_Q=${PEERS_W4_Q:-"100000"}
else
    W1_N=${PEERS_W1_N:-"100000 1000000 4000000"}
    W2_N=${PEERS_W2_N:-"1000000"}; W2_K=${PEERS_W2_K:-"1 5 20"}
    W3_N=${PEERS_W3_N:-"10000 50000 100000 500000 1000000 5000000"}; W3_D=${PEERS_W3_D:-"0.1"}
    W4_N=${PEERS_W4_N:-"1000 10000 100000"}; W4_Q=${PEERS_W4_Q:-"1000000"}
fi
ROW_TIMEOUT=${PEERS_TIMEOUT:-1800} # seconds per driver run

# Debian packages of every peer; the broad-phase drivers' list may grow here.
PEER_DEPS="build-essential g++ cmake pkg-config libcmocka-dev util-linux coreutils
    libnanoflann-dev libflann-dev liblz4-dev python3-numpy python3-scipy lammps openmpi-bin
    libcgal-dev libbullet-dev libbox2d-dev libfcl-dev gnuplot-nox"

log() { echo "[run.sh $(date -u +%H:%M:%S)] $*" >&2; }
die() { echo "run.sh: $*" >&2; exit 1; }

# ---- build --------------------------------------------------------------
"$root/tools/deps.sh" $PEER_DEPS
if [ -z "$prox" ]; then
    log "building prox (make -C $root build)"
    make -s -C "$root" build >&2
    prox="$root/${BUILD:-build}/prox"
fi
[ -x "$prox" ] || die "no prox CLI at $prox"
prox=$(cd "$(dirname "$prox")" && pwd)/$(basename "$prox")
bin="$root/build-peers-drivers"
log "building the drivers in $bin"
cmake -S "$here" -B "$bin" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$bin" -j "$(nproc)" >&2
mkdir -p "$work" "$results"

# ---- the manifests --------------------------------------------------------
# Rows of one workload: "LIBRARY<TAB>THREADS<TAB>COMMAND", the `prox`
# one-thread row first (the reference), then manifest order.
rows_of() {
    # shellcheck disable=SC2086 # PEERS_MANIFESTS: space-separated files
    cat ${PEERS_MANIFESTS:-"$here"/*.drivers} | awk -v w="$1" '
        /^[ \t]*#/ || NF < 4 { next }
        $1 == w {
            lib = $2; thr = $3
            sub(/^[ \t]*[^ \t]+[ \t]+[^ \t]+[ \t]+[^ \t]+[ \t]+/, "")
            line = lib "\t" thr "\t" $0
            if (lib == "prox" && thr == 1 && ref == "") ref = line; else rest[++n] = line
        }
        END {
            if (ref == "" && n > 0) { print "NO_PROX_ROW"; exit }
            if (ref != "") print ref
            for (i = 1; i <= n; i++) print rest[i]
        }'
}

# ---- workload files (cached) ---------------------------------------------
header_value() { sed -n "s/^#.*\\b$2=\\([^ ]*\\).*/\\1/p" "$1" | head -1; }

gen_once() { # FILE GEN_ARGS...: prox gen into the cache unless there
    local f=$1; shift
    if [ ! -s "$f" ]; then
        log "generating $(basename "$f")"
        "$prox" gen "$@" -o "$f"
    fi
}

# Sets the placeholders' values for workload $1, size N=$2, parameter $3.
prepare_case() {
    local w=$1 n=$2 p=$3
    file="" boxes="" queries="" radius="" k="" d=""
    case "$w" in
    W1) file="$work/sph3d-$n.txt"; gen_once "$file" sph3d --n "$n"
        radius=$(header_value "$file" radius) ;;
    W2) k=${p#k=}; file="$work/nns2d-$n-k$k.txt"; gen_once "$file" nns2d --n "$n" --k "$k"
        radius=$(header_value "$file" radius) ;;
    W3) d=${p#d=}; file="$work/spheres3d-$n-d$d.txt"; gen_once "$file" spheres3d --n "$n" --d "$d"
        radius=2 boxes="$work/spheres3d-$n-d$d.boxes.txt"
        if [ ! -s "$boxes" ]; then # the unit spheres' boxes, centre -+ 1 in double
            awk '/^#/ { print; next } { printf "%.17g %.17g %.17g %.17g %.17g %.17g\n",
                 $1 - 1, $2 - 1, $3 - 1, $1 + 1, $2 + 1, $3 + 1 }' "$file" > "$boxes.tmp"
            mv "$boxes.tmp" "$boxes"
        fi ;;
    W4) local q=${p#q=}
        file="$work/mixed2d-$n-q$q.txt"; queries="$work/mixed2d-$n-q$q.segments.txt"
        boxes=$file
        [ -s "$queries" ] || rm -f "$file"
        gen_once "$file" mixed2d --n "$n" --queries "$q" --queries-out "$queries" ;;
    esac
    [ -s "$file" ] || die "could not generate $file"
    if [ "$w" = W1 ] || [ "$w" = W2 ]; then
        [ -n "$radius" ] || die "$file has no '# radius=' header"
    fi
}

substitute() { # COMMAND THREADS N -> the command with its placeholders set
    local c=$1
    c=${c//\{prox\}/$prox}; c=${c//\{bin\}/$bin}; c=${c//\{here\}/$here}
    c=${c//\{file\}/$file}; c=${c//\{boxes\}/$boxes}; c=${c//\{queries\}/$queries}
    c=${c//\{n\}/$3}; c=${c//\{radius\}/$radius}; c=${c//\{k\}/$k}; c=${c//\{d\}/$d}
    c=${c//\{threads\}/$2}
    printf '%s' "$c"
}

value_of() { # LINE KEY
    printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}

# ---- running --------------------------------------------------------------
host=$(hostname -s)
stamp=$(date -u +%Y%m%d-%H%M)
base="$results/peers-$host-$stamp"
csv="$base.csv"
skipped="$base.skipped.csv" # rows whose driver declined the size (exit 77)
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$root" diff --quiet HEAD 2>/dev/null || commit="$commit+dirty"
commit=${PEERS_COMMIT:-$commit} # e.g. when --prox was built from a clean export
echo "workload,n,param,library,threads,rep,build_s,query_s,total_s,count,peak_rss_mb,extra" > "$csv"
echo "workload,n,param,library,threads,reason" > "$skipped"
started=$(date -u +%s)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

run_row() { # LIBRARY THREADS COMMAND W N PARAM REP -> one CSV line; echoes the count
    local lib=$1 thr=$2 cmd=$3 w=$4 n=$5 p=$6 rep=$7 cpus=0 out err status=0
    [ "$thr" -ge 2 ] && cpus=0-$((thr - 1))
    err=$(mktemp)
    out=$(OMP_NUM_THREADS=$thr timeout "$ROW_TIMEOUT" taskset -c "$cpus" sh -c "$cmd" 2>"$err") ||
        status=$?
    if [ "$status" -eq 77 ]; then # the driver declines this size (quadratic peers' --max-n)
        echo "$w,$n,$p,$lib,$thr,$(tail -1 "$err" | tr ',' ';')" >> "$skipped"
        rm -f "$err"
        printf 'SKIPPED'
        return
    fi
    if [ "$status" -ne 0 ]; then
        echo "run.sh: $w N=$n $lib (threads $thr) failed with status $status:" >&2
        echo "  $cmd" >&2
        tail -20 "$err" >&2
        rm -f "$err"
        exit 1
    fi
    rm -f "$err"
    local line
    line=$(printf '%s\n' "$out" | grep '^library=' | tail -1)
    [ -n "$line" ] || die "$w N=$n $lib printed no result line; its stdout was: $out"
    local b q t c m
    b=$(value_of "$line" build_s); q=$(value_of "$line" query_s); t=$(value_of "$line" total_s)
    c=$(value_of "$line" count); m=$(value_of "$line" peak_rss_mb)
    for v in "$b" "$q" "$t" "$c" "$m"; do
        [ -n "$v" ] || die "$w N=$n $lib: incomplete result line: $line"
    done
    [ "$(value_of "$line" N)" = "$n" ] || die "$w $lib: result line says N=$(value_of "$line" N), expected $n"
    local extra
    extra=$(printf '%s\n' "$line" | cut -d' ' -f9- | tr ',' ';')
    echo "$w,$n,$p,$lib,$thr,$rep,$b,$q,$t,$c,$m,$extra" >> "$csv"
    printf '%s' "$c"
}

run_case() { # W N PARAM
    local w=$1 n=$2 p=$3 rows ref_count="" lib thr cmd count rep
    prepare_case "$w" "$n" "$p"
    rows=$(rows_of "$w")
    [ -n "$rows" ] || { log "$w: no manifest rows"; return; }
    [ "$rows" != NO_PROX_ROW ] || die "$w: the manifests have no one-thread 'prox' row (the reference)"
    log "$w N=$n${p:+ $p}: $(printf '%s\n' "$rows" | wc -l) rows x $reps reps"
    for rep in $(seq 1 "$reps"); do
        while IFS=$'\t' read -r lib thr cmd; do
            count=$(run_row "$lib" "$thr" "$(substitute "$cmd" "$thr" "$n")" "$w" "$n" "$p" "$rep")
            if [ "$count" = SKIPPED ]; then
                [ "$rep" -gt 1 ] || log "  $lib/$thr: skipped at N=$n (the driver's size limit)"
                continue
            fi
            [ -n "$ref_count" ] || ref_count=$count # the prox row runs first
            if [ "$count" != "$ref_count" ]; then
                echo "run.sh: COUNT MISMATCH on $w N=$n${p:+ ($p)}: $lib (threads $thr) counted $count, prox counted $ref_count" >&2
                echo "  partial results: $csv" >&2
                exit 1
            fi
            log "  rep $rep $lib/$thr: count=$count $(tail -1 "$csv" | cut -d, -f9)s"
        done <<< "$rows"
    done
}

selected() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

if selected W1 || selected W2; then # boundary conventions, before any timing
    log "checking the neighbour-search drivers on pairs at exactly r"
    "$here/check-boundaries.sh" "$prox" "$bin" "$work/boundaries" || die "boundary check failed"
fi

for w in W1 W2 W3 W4; do
    selected "$w" || continue
    case "$w" in
    W1) for n in $W1_N; do run_case W1 "$n" ""; done ;;
    W2) for n in $W2_N; do for k in $W2_K; do run_case W2 "$n" "k=$k"; done; done ;;
    W3) for n in $W3_N; do for d in $W3_D; do run_case W3 "$n" "d=$d"; done; done ;;
    W4) for n in $W4_N; do for q in $W4_Q; do run_case W4 "$n" "q=$q"; done; done ;;
    esac
done

# ---- report ----------------------------------------------------------------
elapsed=$(( $(date -u +%s) - started ))
cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)
cc=$(c++ --version | head -1)
prox_version=$("$prox" --version 2>/dev/null | head -1 || true)
case "$prox_version" in
*simd=native*) prox_build="a PROX_NATIVE build (Release, -O3 -march=native)" ;;
*) prox_build="the default build (Release, -O3, every SIMD level, one chosen at run time)" ;;
esac
# the environment that changed what ran: sizes and a forced SIMD level
overrides=$(env | grep -E '^(PEERS_[A-Z0-9_]+|PROX_SIMD)=' | sort | tr '\n' ' ' || true)
/usr/bin/python3 "$here/report.py" "$csv" "$base" \
    --machine "$host: $cpu, $(nproc) CPUs, $(free -g | awk '/^Mem:/ {print $2}') GiB" \
    --compiler "$cc; drivers -O3 -march=native -ffp-contract=off; prox: $prox_version, $prox_build" \
    --command "${overrides}bench/peers/run.sh --$mode --only $only --reps $reps" \
    --commit "$commit" --elapsed "$elapsed" --skipped "$skipped" \
    --load "load average $load_before at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
log "done in ${elapsed}s: $csv, $base.md"
