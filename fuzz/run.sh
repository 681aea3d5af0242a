#!/bin/sh
# Run the fuzz targets built by fuzz/build.sh, each for SECONDS (default 60):
#   fuzz/run.sh [SECONDS [TARGET...]]        TARGET: point_file row_file points broad
# Each starts from its committed seeds (fuzz/corpus/TARGET) plus what earlier
# runs found (OUT/corpus/TARGET, not committed); a finding is written to
# OUT/artifacts/ and ends the run with a non-zero status. OUT: build-fuzz.
set -eu
cd "$(dirname "$0")/.."
OUT=${OUT:-build-fuzz}
SECONDS_EACH=${1:-60}
[ $# -gt 0 ] && shift
TARGETS=${*:-point_file row_file points broad}
# OpenMP threads sleep at once instead of spinning: the targets start and
# stop parallel regions thousands of times a second.
export OMP_WAIT_POLICY=passive KMP_BLOCKTIME=0
mkdir -p "$OUT/artifacts"
status=0
for t in $TARGETS; do
  mkdir -p "$OUT/corpus/$t"
  echo "fuzz_$t: ${SECONDS_EACH} s"
  # -timeout: an input running 10 s is a hang; -rss_limit_mb: a runaway allocation;
  # -seed: the same mutations on every run (FUZZ_SEED=0 draws a new seed).
  if ! "$OUT/fuzz_$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
      -seed="${FUZZ_SEED:-1}" \
      -max_len=4096 -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$t-" \
      "$OUT/corpus/$t" "fuzz/corpus/$t" > "$OUT/fuzz_$t.log" 2>&1; then
    echo "fuzz_$t: FINDING (see $OUT/fuzz_$t.log and $OUT/artifacts/)"
    grep -E 'ERROR|MISMATCH|runtime error|unescaped' "$OUT/fuzz_$t.log" | head -5
    status=1
  fi
  grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$OUT/fuzz_$t.log" | tr '\n' ' '
  echo
done
exit $status
