#!/bin/sh
# Usage: at_level.sh SIMD_RUNS LEVEL COMMAND...
# Runs COMMAND with PROX_SIMD=LEVEL, or exits 77 (skipped) when this CPU
# lacks the level (SIMD_RUNS is tests/simd_runs.c's program).
runs=$1 level=$2
shift 2
PROX_SIMD=$level
export PROX_SIMD
"$runs" || exit 77
exec "$@"
