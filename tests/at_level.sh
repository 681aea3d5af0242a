#!/bin/sh
# Usage: at_level.sh EMULATOR SIMD_RUNS LEVEL COMMAND...
# Runs COMMAND with PROX_SIMD=LEVEL, or exits 77 (skipped) when this CPU
# lacks the level, or when LEVEL is the one prox runs by default (the
# suite's plain run covers it). SIMD_RUNS is tests/simd_runs.c's program;
# EMULATOR runs both in a cross build (qemu-aarch64 ...), empty otherwise.
emulator=$1 runs=$2 level=$3
shift 3
default=$(env -u PROX_SIMD $emulator "$runs" --default) || exit 1
if [ "$default" = "$level" ]; then
    echo "skipped: $level is the default level here, run by the plain test"
    exit 77
fi
PROX_SIMD=$level
export PROX_SIMD
$emulator "$runs"
status=$?
[ $status -eq 0 ] || exit $status # 77: skipped; anything else: the runner itself failed
exec $emulator "$@"
