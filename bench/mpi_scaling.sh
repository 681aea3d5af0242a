#!/bin/sh
# The distributed layer's scaling (docs/scaling.md): strong and weak
# scaling of W1 (sph3d) and W3 (spheres3d) on 1-4 ranks of one thread, and
# the 2-rank overhead against one 2-thread process on W1 1M. Ranks beyond
# the cores are oversubscribed (mpirun --oversubscribe): the output says how
# many cores there are. Every line is one bench_mpi_scaling run: medians
# over REPS of the slowest rank per phase, then each rank's figures.
# Usage: bench/mpi_scaling.sh [BUILD_DIR [REPS]]   (run it under
#   flock /work/bench.lock on a shared machine)
set -eu
B=${1:-build}
REPS=${2:-5}
BENCH=$B/bench_mpi_scaling
[ -x "$BENCH" ] || { echo "no $BENCH: build with MPI first (make checks)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

ranks() { # NP WORKLOAD N [SINK]
    # ranks yield while they wait: on a machine shared with other work (or
    # oversubscribed) a spinning rank takes the core its peer needs
    mpirun --oversubscribe --mca mpi_yield_when_idle 1 -np "$1" "$BENCH" "$2" "$3" "$REPS" 1 \
        "${4:-count}"
}
serial() { # THREADS WORKLOAD N [SINK]
    OMP_NUM_THREADS=$1 "$BENCH" --serial "$2" "$3" "$REPS" "$1" "${4:-count}"
}

echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(grep -c ^processor /proc/cpuinfo) cores"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg); reps $REPS; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "## overhead: W1 1M, 2 ranks x 1 thread against 1 process x 2 threads"
for sink in count buffer; do
    serial 2 sph3d 1000000 $sink
    ranks 2 sph3d 1000000 $sink
done
echo "## strong scaling (1 thread a rank)"
for np in 1 2 3 4; do ranks $np sph3d 1000000; done
for np in 1 2 3 4; do ranks $np sph3d-periodic 1000000; done
for np in 1 2 3 4; do ranks $np spheres3d 500000; done
serial 1 sph3d 1000000
serial 1 spheres3d 500000
echo "## weak scaling: W1 250,000 and W3 125,000 points a rank"
for np in 1 2 3 4; do ranks $np sph3d $((250000 * np)); done
for np in 1 2 3 4; do ranks $np spheres3d $((125000 * np)); done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
