#!/bin/sh
# Run the fuzz targets built by fuzz/build.sh, each for SECONDS (default 60):
#   fuzz/run.sh [--afl] [SECONDS [TARGET...]]    TARGET: point_file row_file points broad cells
# libFuzzer by default (OUT: build-fuzz); --afl runs the AFL++ build of
# `fuzz/build.sh --afl` under afl-fuzz (OUT: build-afl). Each starts from its
# committed seeds (fuzz/corpus/TARGET) plus what earlier runs in OUT found
# (not committed). A finding (a crash, or an input running over 10 s) is
# written to OUT/artifacts/ (libFuzzer) or OUT/afl/TARGET/default/crashes
# and hangs (AFL++) and ends with a non-zero status.
set -eu
cd "$(dirname "$0")/.."
AFL=0
if [ "${1:-}" = --afl ]; then
  AFL=1
  shift
fi
if [ $AFL = 1 ]; then OUT=${OUT:-build-afl}; else OUT=${OUT:-build-fuzz}; fi
SECONDS_EACH=${1:-60}
[ $# -gt 0 ] && shift
TARGETS=${*:-point_file row_file points broad cells}
# OpenMP threads sleep at once instead of spinning: the targets start and
# stop parallel regions thousands of times a second.
export OMP_WAIT_POLICY=passive KMP_BLOCKTIME=0
# The same mutations on every run (FUZZ_SEED=0 draws a new seed).
SEED=${FUZZ_SEED:-1}
status=0

run_libfuzzer() {
  t=$1
  mkdir -p "$OUT/artifacts" "$OUT/corpus/$t"
  # -timeout: an input running 10 s is a hang; -rss_limit_mb: a runaway allocation.
  if ! "$OUT/fuzz_$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
      -seed="$SEED" \
      -max_len=4096 -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$t-" \
      "$OUT/corpus/$t" "fuzz/corpus/$t" > "$OUT/fuzz_$t.log" 2>&1; then
    echo "fuzz_$t: FINDING (see $OUT/fuzz_$t.log and $OUT/artifacts/)"
    grep -E 'ERROR|MISMATCH|runtime error|unescaped' "$OUT/fuzz_$t.log" | head -5
    status=1
  fi
  grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$OUT/fuzz_$t.log" | tr '\n' ' '
  echo
}

# Files of DIR other than AFL++'s README.txt.
count_files() {
  find "$1" -maxdepth 1 -type f ! -name README.txt 2>/dev/null | wc -l
}

run_afl() {
  t=$1
  seeds="$OUT/afl-seeds/$t" dir="$OUT/afl/$t"
  rm -rf "$seeds"
  mkdir -p "$seeds" "$OUT/afl"
  cp fuzz/corpus/"$t"/* "$seeds"/
  # what the last run in OUT kept, as libFuzzer keeps OUT/corpus
  [ -d "$dir/default/queue" ] && find "$dir/default/queue" -maxdepth 1 -type f -name 'id*' \
    -exec sh -c 'for f; do cp "$f" "$0/q_$(basename "$f" | cut -c4-9)"; done' "$seeds" {} +
  rm -rf "$dir"
  # -t: an input running 10 s is a hang; -G: inputs up to 4096 bytes, as libFuzzer's.
  set -- -i "$seeds" -o "$dir" -V "$SECONDS_EACH" -t 10000 -m none -G 4096
  [ "$SEED" != 0 ] && set -- "$@" -s "$SEED"
  # The defaults suit a VM without a CPU frequency governor, cores shared with
  # other jobs, and a core_pattern that pipes cores to a handler: AFL++
  # would otherwise refuse to start or bind to a busy core.
  if ! AFL_NO_UI=1 AFL_SKIP_CPUFREQ=${AFL_SKIP_CPUFREQ:-1} AFL_NO_AFFINITY=${AFL_NO_AFFINITY:-1} \
      AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=${AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES:-1} \
      afl-fuzz "$@" -- "$OUT/fuzz_$t" > "$OUT/afl_$t.log" 2>&1; then
    echo "fuzz_$t: afl-fuzz failed (see $OUT/afl_$t.log)"
    tail -5 "$OUT/afl_$t.log"
    status=1
    return
  fi
  crashes=$(count_files "$dir/default/crashes") hangs=$(count_files "$dir/default/hangs")
  if [ "$crashes" -gt 0 ] || [ "$hangs" -gt 0 ]; then
    echo "fuzz_$t: FINDING: $crashes crashes, $hangs hangs (see $dir/default/crashes, hangs)"
    status=1
  fi
  grep -E '^(run_time|execs_done|execs_per_sec|corpus_count|saved_crashes|saved_hangs|bitmap_cvg) ' \
    "$dir/default/fuzzer_stats" | sed 's/  *: /=/' | tr '\n' ' '
  echo
}

for t in $TARGETS; do
  echo "fuzz_$t: ${SECONDS_EACH} s$([ $AFL = 1 ] && echo ' (AFL++)')"
  if [ $AFL = 1 ]; then run_afl "$t"; else run_libfuzzer "$t"; fi
done
exit $status
