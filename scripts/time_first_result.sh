#!/usr/bin/env bash
# usage: scripts/time_first_result.sh [SOURCE [REF]] [-- JOB ARGS...]
# Time to a first result as a new user sees it: clones SOURCE (default: this
# checkout; a path or URL) at REF (default: HEAD, so commit first) into a
# temporary folder and times `./run.sh` there with ccache disabled
# (CCACHE_DISABLE=1: every translation unit compiled from scratch) until the
# sample prints its first training-step line, then lets the short job finish.
# The job's arguments default to one epoch on the first 6000 training images
# (93 steps at the default batch of 64; a progress line every 50 steps when
# stdout is not a terminal); after -- they replace that.
# Prints each phase (setup, configure, build, to the first step) and the
# total in minutes; the full log stays in the temporary folder, which
# ANVIL_TIME_KEEP=1 keeps (removed otherwise).
# On a machine with every package installed the setup phase is a few dpkg
# checks; run it on a fresh machine to include the apt installs.
# Meant for an otherwise idle machine: it compiles with every core.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source=$root
ref=HEAD
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  source=$1
  shift
fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  ref=$1
  shift
fi
job_args=(--epochs 1 --limit-train 6000 --limit-test 1000)
if [ $# -gt 0 ] && [ "$1" = "--" ]; then
  shift
  job_args=("$@")
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-first-result.XXXXXX")
if [ "${ANVIL_TIME_KEEP:-0}" != 1 ]; then
  trap 'rm -rf "$tmp"' EXIT
fi
git clone -q "$source" "$tmp/anvil"
git -C "$tmp/anvil" checkout -q --detach "$ref"
echo "time_first_result: $(git -C "$tmp/anvil" log -1 --format='%h %s') in $tmp/anvil, $(nproc) cores"
echo "time_first_result: ./run.sh ${job_args[*]}"

log=$tmp/run.log
start=$EPOCHREALTIME
set +e
(
  cd "$tmp/anvil"
  CCACHE_DISABLE=1 ./run.sh "${job_args[@]}" 2>&1
) | while IFS= read -r line; do
  t=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  printf '%8s %s\n' "$t" "$line" >> "$log"
  printf '[%7ss] %s\n' "$t" "$line"
done
status=${PIPESTATUS[0]}
set -e
end=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')

# Seconds since the start of the first log line matching a pattern (empty if none).
at() { awk -v re="$1" '{ t = $1; sub(/^ *[0-9.]+ /, "") } $0 ~ re { print t; exit }' "$log"; }
configure=$(at '^-- ')
generated=$(at '^-- Build files have been written')
built=$(at 'Built target (fashion_mnist|tour)$')
step=$(at '^epoch [0-9]+ step [0-9]+')
[ -n "$step" ] || step=$(at '^epoch [0-9]+ done')
minutes() { [ -n "$1" ] && awk -v s="$1" 'BEGIN { printf "%.1f min (%.0f s)", s / 60, s }' || echo "n/a"; }
delta() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f min (%.0f s)", (b - a) / 60, b - a }' || echo "n/a"; }
echo
echo "time_first_result: setup       $(minutes "${configure:-}")"
echo "time_first_result: configure   $(delta "${configure:-}" "${generated:-}")"
echo "time_first_result: build       $(delta "${generated:-}" "${built:-}")"
echo "time_first_result: first step  $(minutes "${step:-}") after the start"
echo "time_first_result: whole run   $(minutes "$end") (exit status $status)"
echo "time_first_result: compiled $(grep -c -E 'Building (CXX|CUDA|C) object' "$log" || true) translation units"
[ "${ANVIL_TIME_KEEP:-0}" = 1 ] && echo "time_first_result: log $log"
exit "$status"
