#!/usr/bin/env bash
# usage: scripts/fuzz.sh BUILD_DIR SECONDS HARNESS...
# Runs each libFuzzer harness (BUILD_DIR/bin/fuzz_<name>) for SECONDS from
# three corpora: BUILD_DIR/fuzz-corpus/<name> (what earlier runs found; new
# inputs go there), the seeds fuzz_seeds writes, and fuzz/corpus/<name>
# (inputs that once found a bug: replayed first, on every run). Stops at the
# first harness that finds a crash, leak, timeout or sanitizer report, with
# the input saved under BUILD_DIR/fuzz-crashes/. Prints each harness's
# executions and coverage. FUZZ_RUNS=N also stops a harness after N
# executions (the long campaign: FUZZ_RUNS=10000000 with SECONDS=3600 stops
# at whichever comes first).
set -euo pipefail
build=$1
seconds=$2
shift 2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seeds=$build/fuzz-seeds
rm -rf "$seeds"
"$build/bin/fuzz_seeds" "$seeds"
mkdir -p "$build/fuzz-crashes"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for name in "$@"; do
  work=$build/fuzz-corpus/$name
  mkdir -p "$work" "$seeds/$name" "$root/fuzz/corpus/$name"
  log=$build/fuzz-$name.log
  echo "fuzz: $name for ${seconds}s"
  # -rss_limit_mb: an input that makes a reader allocate gigabytes is a bug
  # (a length field trusted before it is checked against the data).
  if ! "$build/bin/fuzz_$name" -max_total_time="$seconds" ${FUZZ_RUNS:+-runs=$FUZZ_RUNS} -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$build/fuzz-crashes/$name-" \
      "$work" "$seeds/$name" "$root/fuzz/corpus/$name" >"$log" 2>&1; then
    tail -60 "$log"
    echo "fuzz: $name FAILED (input under $build/fuzz-crashes/; add it to fuzz/corpus/$name/ once fixed)"
    exit 1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  echo "fuzz: $name ok: $execs executions, $cov, corpus $(ls "$work" | wc -l) inputs"
done
