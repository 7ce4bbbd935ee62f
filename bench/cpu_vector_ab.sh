#!/usr/bin/env bash
# usage: bench/cpu_vector_ab.sh BUILD_DIR OUT_DIR REPS FILTER_REGEX   (then bench/cpu_vector_ab_table.py OUT_DIR)
# Each selected benchmark runs scalar (ANVIL_CPU_VECTOR=off) then vector, REPS times in turn,
# next to each other in time; the 2-thread memcpy runs in the same process each time.
set -u
b=$1; out=$2; reps=$3; filter=$4
mkdir -p "$out"
export OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE
mapfile -t names < <("$b/bin/bench_cpu" --benchmark_list_tests --benchmark_filter="$filter" 2>/dev/null)
i=0
for n in "${names[@]}"; do
  i=$((i+1))
  esc=$(printf '%s' "$n" | sed 's/[][\.*^$()+?{}|]/\\&/g')
  for r in $(seq 1 "$reps"); do
    for mode in off on; do
      ANVIL_CPU_VECTOR=$mode "$b/bin/bench_cpu" --benchmark_filter="^BM_memcpy_all_threads/elems:16777216/|^${esc}\$" \
        --benchmark_out="$out/${mode}_${i}_${r}.json" --benchmark_out_format=json > /dev/null 2>&1
    done
  done
done
