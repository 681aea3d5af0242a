#!/bin/sh
# Usage: at_level.sh EMULATOR SIMD_RUNS LEVEL COMMAND...
# Runs COMMAND with PROX_SIMD=LEVEL, or exits 77 (skipped) when this CPU
# lacks the level (SIMD_RUNS is tests/simd_runs.c's program). EMULATOR
# runs both in a cross build (qemu-aarch64 ...); empty otherwise.
emulator=$1 runs=$2 level=$3
shift 3
PROX_SIMD=$level
export PROX_SIMD
$emulator "$runs" || exit 77
exec $emulator "$@"
