#!/usr/bin/env bash
# The one script for a GPU session: build, test, sanitize and benchmark the
# CUDA backend on a machine with a GPU, and print a short table last.
#
#   scripts/gpu_check.sh                       # every device stage, in order
#   scripts/gpu_check.sh build tests           # just these (any order given is kept)
#   scripts/gpu_check.sh bench table           # e.g. a later call on a warm machine
#
# Device stages:
#   info      GPU, driver, nvcc, PyTorch (always runs first; cheap)
#   build     configure + build $BUILD (Release, sm_$CUDA_ARCH, benchmarks on) with
#             only the targets used below; incremental, so a call cut off by the
#             10-minute limit resumes where it stopped. Skipped when prebuilt
#             binaries were carried (gpu-carry/, see `prepare`).
#   tests     anvil_tests_cuda (the cuda-labelled tests), the GPU-dependent
#             core/nn tests (pinned memory, non_blocking, DataLoader pin_memory)
#             and the NCCL tests of anvil_tests_distributed (real NCCL)
#             (CudnnSdpa.* among them: cuDNN's fused attention forced on against the
#             flash kernels and the composed path, and the auto choice's timing)
#   sdpa      fused attention alone, for a short lease: CudnnSdpa.* and CudaAttention.*,
#             then bench_kernels' attn/ rows (auto, /cudnn, /flash, /no_tensor_cores)
#             -> bench_kernels.json; BENCH_FILTER becomes attn/ for the pytorch stage
#             after it, so `scripts/gpu_check.sh build sdpa pytorch table` gives the
#             cuDNN, flash and PyTorch SDPA rows side by side
#   sanitize  anvil_tests_cuda under compute-sanitizer $SANITIZE_TOOLS (memcheck), $SANITIZE_FILTER
#   bench     bench_kernels (or bench_cuda) -> bench_kernels.json
#   pytorch   bench/pytorch/kernels.py (bench_kernels' shapes and names in PyTorch),
#             when python3 has torch with CUDA -> pytorch_kernels.json
#   ncu       kernel_report's launches (the emulated GPU's kernel families) under Nsight
#             Compute, when ncu is present: sectors per request, bank conflicts and DRAM
#             bytes per kernel, appended to gpu_check.log, to set beside the emulator's
#             counters (kernels/cuda/emulator/PROFILING.md)
#   train     bench_train's CNN on cuda (ANVIL_BENCH_DEVICE=cuda) -> bench_train.json,
#             and bench/pytorch/train_fashion_mnist.py --model cnn --device cuda
#             (TRAIN_FILTER='cnn|char_gpt' adds the GPT and train_char_gpt.py)
#   table     anvil next to PyTorch, from the JSON files (scripts/gpu_table.py),
#             and the ncu stage's counters as a table (scripts/ncu_table.py)
#
# Local stage (run on the development machine, not the GPU machine):
#   prepare   when the GPU machine cannot configure the project (its image may
#             lack GTest, Google Benchmark, OpenBLAS...): take the binaries of a
#             local CUDA build ($PREPARE_FROM, default $BUILD, built if missing),
#             strip them, add the shared libraries they need that a CUDA image
#             may lack (OpenBLAS, gfortran, ...; CARRY_DATA="fashion-mnist fortunes",
#             or 1 for both, adds those datasets) and compress it all into
#             gpu-carry/bundle.tar.xz. Then pass carry=["gpu-carry"] to the
#             device call; the script unpacks it there. Prints the size (the
#             working tree plus carried paths must stay under 64 MiB).
#
# Output: $OUT when set (the device tool brings back at most 8 files), else
# bench/results/gpu-<date>/. Files (8, the most that comes back): gpu_check.log,
# build.log, sanitize.log, bench_kernels.json, pytorch_kernels.json,
# bench_train.json, pytorch.jsonl (training), table.md.
#
# Environment knobs: BUILD (build-gpu), CUDA_ARCH (90), JOBS (nproc),
# STAGE_LIMIT (seconds per long stage, 540), SANITIZE_FILTER, SANITIZE_TOOLS, BENCH_FILTER,
# TRAIN_FILTER (cnn), CORE_NN_FILTER (*), CUDA_FILTER (*), PREPARE_FROM.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1

BUILD=${BUILD:-build-gpu}
CUDA_ARCH=${CUDA_ARCH:-90}
JOBS=${JOBS:-$(nproc)}
STAGE_LIMIT=${STAGE_LIMIT:-540}
# The memory checker slows kernels 10-100x: the runtime and the main kernel
# families at test sizes. Out-of-memory is left out on purpose (the failed
# cudaMalloc it provokes is reported as an API error).
SANITIZE_FILTER=${SANITIZE_FILTER:-'*-CudaMemory.OutOfMemory*:*Large*:*Huge*'}
# memcheck by default; racecheck (shared-memory hazards) and synccheck
# (barriers) are slower still: name them with a narrow filter.
SANITIZE_TOOLS=${SANITIZE_TOOLS:-memcheck}
BENCH_FILTER=${BENCH_FILTER:-.}
# The core and nn suites in full by default; a short lease can narrow them to
# the tests whose path changes with a GPU (e.g. '*Cuda*:*Pinned*:*Stream*').
CORE_NN_FILTER=${CORE_NN_FILTER:-*}
# anvil_tests_cuda in full by default; a short lease can check a few suites.
CUDA_FILTER=${CUDA_FILTER:-*}
TRAIN_FILTER=${TRAIN_FILTER:-cnn}
CARRY=gpu-carry

if [ -n "${OUT:-}" ]; then
  out=$OUT
else
  out=$root/bench/results/gpu-$(date +%Y-%m-%d-%H%M%S)
fi
log=$out/gpu_check.log
export OMP_WAIT_POLICY=PASSIVE PYTHONUNBUFFERED=1

say() { echo "== $*" | tee -a "$log"; }
status=()  # "stage: result" lines for the summary
record() { status+=("$1: $2"); say "$1: $2"; }

# Binaries: carried ones win (a prebuilt tree from `prepare`), else the build.
bin_dir() {
  if [ -d "$CARRY/bin" ]; then echo "$root/$CARRY/bin"; else echo "$root/$BUILD/bin"; fi
}

# Shared libraries: carried ones, the CUDA toolkit's, and the cuDNN/cuBLAS that
# come with PyTorch's pip packages when the toolkit has no cuDNN.
setup_libraries() {
  local dirs=()
  [ -d "$root/$CARRY/lib" ] && dirs+=("$root/$CARRY/lib")
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [ -d "$d" ] && dirs+=("$d"); done
  if command -v python3 >/dev/null; then
    local py
    py=$(python3 - 2>/dev/null <<'EOF'
import importlib, os
for name in ("nvidia.cudnn", "nvidia.cublas", "nvidia.cuda_runtime", "nvidia.nccl"):
    try:
        m = importlib.import_module(name)
    except Exception:
        continue
    for p in getattr(m, "__path__", []):
        lib = os.path.join(p, "lib")
        if os.path.isdir(lib):
            print(lib)
EOF
)
    while IFS= read -r d; do [ -n "$d" ] && dirs+=("$d"); done <<<"$py"
  fi
  local joined
  joined=$(IFS=:; echo "${dirs[*]}")
  export LD_LIBRARY_PATH="${joined}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH=/usr/local/cuda/bin:$PATH
}

stage_info() {
  {
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with local changes)')"
    if command -v nvidia-smi >/dev/null; then
      nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv,noheader
    else
      echo "nvidia-smi: not available"
    fi
    nvcc --version 2>/dev/null | tail -1 || echo "nvcc: not found"
    # The cuDNN the binaries load decides what kernels/cudnn/sdpa.cpp can build.
    ls "${LD_LIBRARY_PATH%%:*}"/libcudnn.so.* /usr/local/cuda/lib64/libcudnn.so.* 2>/dev/null | head -2 |
      sed 's/^/cudnn library: /'
    grep -hE '^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ' /usr/local/cuda/include/cudnn_version.h 2>/dev/null |
      awk '{printf "%s%s", (NR > 1 ? "." : "cudnn headers: "), $3} END {if (NR) print ""}'
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())' 2>/dev/null || echo "torch: not importable"
    echo "binaries: $(bin_dir)"
    # The device machine's copy of .git may lag the working tree; prepare
    # records the commit the carried binaries were built from.
    [ -f "$root/$CARRY/BUILT_FROM" ] && echo "binaries built from: $(cat "$root/$CARRY/BUILT_FROM")"
  } 2>&1 | tee -a "$log"
}

stage_build() {
  if [ -d "$CARRY/bin" ]; then
    record build "skipped: using carried binaries in $CARRY/bin"
    return 0
  fi
  local generator=() launchers=()
  command -v ninja >/dev/null && [ ! -f "$BUILD/CMakeCache.txt" ] && generator=(-G Ninja)
  command -v ccache >/dev/null && launchers=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    say "configure $BUILD (sm_$CUDA_ARCH, Release)"
    if ! cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" \
        -DANVIL_CUDA=ON -DANVIL_BUILD_BENCH=ON -DANVIL_BUILD_SAMPLES=ON "${launchers[@]}" \
        -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 -DCMAKE_CUDA20_EXTENSION_COMPILE_OPTION=-std=c++20 \
        >"$out/build.log" 2>&1; then
      tail -25 "$out/build.log" | tee -a "$log"
      rm -f "$BUILD/CMakeCache.txt"  # configure again next time
      record build "FAILED to configure (missing GTest/benchmark/OpenBLAS here? build locally with 'scripts/gpu_check.sh prepare' and carry $CARRY)"
      return 1
    fi
  fi
  # Only what the later stages run; whichever of these the tree defines.
  local available targets=()
  available=$(cmake --build "$BUILD" --target help 2>/dev/null)
  for t in anvil_tests_cuda anvil_tests_nn_cuda anvil_tests_core anvil_tests_nn anvil_tests_distributed bench_kernels bench_cuda bench_train kernel_report; do
    grep -qE "(^|[ .:])$t([ :]|$)" <<<"$available" && targets+=("$t")
  done
  say "build ${targets[*]} (-j$JOBS, at most ${STAGE_LIMIT}s; a rerun resumes)"
  local start=$SECONDS
  timeout "$STAGE_LIMIT" cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}" >>"$out/build.log" 2>&1
  local rc=$?
  if [ $rc -eq 124 ]; then
    record build "INCOMPLETE after ${STAGE_LIMIT}s: run 'scripts/gpu_check.sh build' again to resume"
    return 1
  elif [ $rc -ne 0 ]; then
    grep -E "error|Error" "$out/build.log" | head -30 | tee -a "$log"
    record build "FAILED (see build.log)"
    return 1
  fi
  record build "ok in $((SECONDS - start))s"
}

run_gtest() {  # name binary [gtest args...]
  local name=$1 binary=$2
  shift 2
  if [ ! -x "$binary" ]; then
    record "$name" "missing: $binary"
    return 1
  fi
  local run_log
  run_log=$(mktemp)
  # From where ctest runs them ($BUILD/tests): with CCACHE_BASEDIR, __FILE__
  # is relative to that folder, and fixtures are found through __FILE__.
  mkdir -p "$root/$BUILD/tests"
  (cd "$root/$BUILD/tests" && timeout "$STAGE_LIMIT" "$binary" --gtest_brief=1 "$@") >"$run_log" 2>&1
  local rc=$?
  cat "$run_log" >>"$log"
  tail -40 "$run_log"
  local summary
  summary=$(grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$run_log" | tr '\n' ' ')
  rm -f "$run_log"
  if [ "$rc" -eq 0 ]; then record "$name" "passed ($summary)"; else record "$name" "FAILED rc=$rc ($summary)"; fi
  return "$rc"
}

# Fused attention alone: the tests that compare cuDNN's SDPA with the flash
# kernels (their auto decisions are printed), then the attention benchmarks.
stage_sdpa() {
  local bin rc=0
  bin=$(bin_dir)
  run_gtest tests.sdpa "$bin/anvil_tests_cuda" --gtest_filter='CudnnSdpa.*:CudaAttention.*' || rc=1
  [ "$BENCH_FILTER" = . ] && BENCH_FILTER=attn/
  stage_bench || rc=1
  return $rc
}

stage_tests() {
  local bin rc=0
  bin=$(bin_dir)
  run_gtest tests.cuda "$bin/anvil_tests_cuda" --gtest_filter="$CUDA_FILTER" || rc=1
  # The nn modules on CUDA against the CPU, where the tree has them.
  if [ -x "$bin/anvil_tests_nn_cuda" ]; then run_gtest tests.nn_cuda "$bin/anvil_tests_nn_cuda" || rc=1; fi
  # Core and nn in full: every test whose path changes when a GPU is present
  # (pinned memory, non_blocking copies, best_device, the Trainer) takes it;
  # the emulated GPU runs the same (./test.sh --emulated-gpu).
  run_gtest tests.core-gpu "$bin/anvil_tests_core" --gtest_filter="$CORE_NN_FILTER" || rc=1
  run_gtest tests.nn-gpu "$bin/anvil_tests_nn" --gtest_filter="$CORE_NN_FILTER" || rc=1
  # Real NCCL: the one-rank group runs on one GPU; the multi-rank worker tests
  # skip with their reason unless there is a GPU per rank (CI runs them all on
  # the emulated NCCL).
  if [ -x "$bin/anvil_tests_distributed" ]; then
    run_gtest tests.nccl "$bin/anvil_tests_distributed" --gtest_filter='*Nccl*:*NCCL*' || rc=1
  fi
  return $rc
}

stage_sanitize() {
  local bin tool rc overall=0
  bin=$(bin_dir)
  if ! command -v compute-sanitizer >/dev/null; then
    record sanitize "skipped: compute-sanitizer not found"
    return 0
  fi
  : >"$out/sanitize.log"
  for tool in $SANITIZE_TOOLS; do
    say "compute-sanitizer $tool, filter $SANITIZE_FILTER (at most ${STAGE_LIMIT}s)"
    echo "===== compute-sanitizer --tool $tool" >>"$out/sanitize.log"
    local extra=()
    [ "$tool" = memcheck ] && extra=(--leak-check no --report-api-errors no)
    # racecheck and synccheck judge our kernels: with auto, attention would run
    # cuDNN's generated SDPA kernels, whose hazard reports (seen on an H200,
    # 2026-11-27) are not ours to fix and exhaust --print-limit.
    local backend=${ANVIL_SDPA_BACKEND:-auto}
    [ "$tool" != memcheck ] && backend=flash
    ANVIL_SDPA_BACKEND=$backend timeout "$STAGE_LIMIT" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 86 --print-limit 20 \
      "$bin/anvil_tests_cuda" --gtest_brief=1 --gtest_filter="$SANITIZE_FILTER" >>"$out/sanitize.log" 2>&1
    rc=$?
    sed -n "/===== compute-sanitizer --tool $tool/,\$p" "$out/sanitize.log" |
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED)|Invalid|out of bounds|hazard" | head -20 | tee -a "$log"
    case $rc in
      0) record "sanitize.$tool" "clean" ;;
      86) record "sanitize.$tool" "ERRORS (see sanitize.log)"; overall=1 ;;
      124) record "sanitize.$tool" "INCOMPLETE after ${STAGE_LIMIT}s (narrow SANITIZE_FILTER)"; overall=1 ;;
      *) record "sanitize.$tool" "FAILED rc=$rc (test failures under the sanitizer; see sanitize.log)"; overall=1 ;;
    esac
  done
  return $overall
}

stage_bench() {
  local bin exe=""
  bin=$(bin_dir)
  for b in bench_kernels bench_cuda; do [ -x "$bin/$b" ] && { exe=$bin/$b; break; }; done
  if [ -z "$exe" ]; then
    record bench "missing: no bench_kernels or bench_cuda in $bin"
    return 1
  fi
  say "$(basename "$exe") --benchmark_filter=$BENCH_FILTER"
  timeout "$STAGE_LIMIT" "$exe" --benchmark_filter="$BENCH_FILTER" --benchmark_format=console \
    --benchmark_out="$out/bench_kernels.json" --benchmark_out_format=json 2>&1 | tee -a "$log" | tail -60
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 0 ]; then record bench "ok"; else record bench "FAILED rc=$rc"; fi
  return "$rc"
}

# Nsight Compute on the kernel report's launches: the same kernels at the same
# shapes the emulated GPU counts. The metrics are Nsight Compute's names for
# global load/store requests and sectors, shared-memory bank conflicts and
# DRAM bytes; the CSV goes into gpu_check.log (the device tool brings back at
# most 8 files).
stage_ncu() {
  local bin
  bin=$(bin_dir)
  if ! command -v ncu >/dev/null; then
    record ncu "skipped: ncu (Nsight Compute) not found"
    return 0
  fi
  if [ ! -x "$bin/kernel_report" ]; then
    record ncu "missing: no kernel_report in $bin"
    return 1
  fi
  local metrics=l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
  metrics+=,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
  metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
  metrics+=,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum
  say "ncu --metrics ... kernel_report --elements 1048576 --gemm 256"
  {
    echo "== ncu (kernel_report launches; compare with bench/results/*-kernel-report.md)"
    timeout "$STAGE_LIMIT" ncu --csv --metrics "$metrics" "$bin/kernel_report" --elements 1048576 --gemm 256 2>&1
  } >>"$log"
  local rc=$?
  if [ "$rc" -eq 0 ]; then record ncu "ok (CSV in gpu_check.log)"; else record ncu "FAILED rc=$rc"; fi
  return "$rc"
}

have_torch() { python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; }

# Runs a PyTorch script and keeps its JSON lines (each script prints one JSON
# object per result, last).
run_pytorch() {  # label script [args...]
  local label=$1
  shift
  say "python3 $*"
  timeout "$STAGE_LIMIT" python3 "$@" 2>&1 | tee -a "$log" | grep -E '^\{' >>"$out/pytorch.jsonl"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 0 ]; then record "$label" "ok"; else record "$label" "FAILED rc=$rc"; fi
  return "$rc"
}

stage_pytorch() {
  if ! have_torch; then
    record pytorch "skipped: python3 has no torch with CUDA"
    return 0
  fi
  if [ ! -f bench/pytorch/kernels.py ]; then
    record pytorch "missing: bench/pytorch/kernels.py"
    return 1
  fi
  # bench_kernels' shapes and names, Google Benchmark-like JSON.
  local filter=()
  [ "$BENCH_FILTER" != . ] && filter=("--filter=$BENCH_FILTER")  # one word: a filter may start with "-"
  say "python3 bench/pytorch/kernels.py ${filter[*]}"
  timeout "$STAGE_LIMIT" python3 bench/pytorch/kernels.py "${filter[@]}" --out "$out/pytorch_kernels.json" \
    >>"$log" 2>&1
  local rc=$?
  grep -E "GB/s|TFLOP/s|per op|empty\+free" "$log" | tail -40
  if [ $rc -eq 0 ]; then record pytorch.kernels "ok"; else record pytorch.kernels "FAILED rc=$rc"; fi
  return $rc
}

stage_train() {
  local bin rc=0
  bin=$(bin_dir)
  # The real images when carried (gpu-carry/data/fashion-mnist); bench_train
  # reports an error for the model otherwise, PyTorch uses random images.
  if [ -d "$CARRY/data/fashion-mnist" ] && [ ! -e /usr/share/datasets/fashion-mnist ]; then
    mkdir -p /usr/share/datasets 2>/dev/null && ln -s "$root/$CARRY/data/fashion-mnist" /usr/share/datasets/fashion-mnist
  fi
  # Likewise Debian's fortunes for the char_gpt model (both sides read it).
  if [ -d "$CARRY/data/fortunes" ] && [ ! -e /usr/share/games/fortunes ]; then
    mkdir -p /usr/share/games 2>/dev/null && ln -s "$root/$CARRY/data/fortunes" /usr/share/games/fortunes
  fi
  if [ -x "$bin/bench_train" ]; then
    say "bench_train --benchmark_filter=$TRAIN_FILTER on cuda"
    ANVIL_BENCH_DEVICE=cuda timeout "$STAGE_LIMIT" "$bin/bench_train" --benchmark_filter="$TRAIN_FILTER" \
      --benchmark_out="$out/bench_train.json" --benchmark_out_format=json 2>&1 | tee -a "$log" | tail -20
    local brc=${PIPESTATUS[0]}
    if [ "$brc" -eq 0 ]; then record train.anvil "ok"; else record train.anvil "FAILED rc=$brc"; rc=1; fi
  else
    record train.anvil "missing: $bin/bench_train"
    rc=1
  fi
  if have_torch; then
    if grep -qE 'cnn' <<<"$TRAIN_FILTER"; then
      run_pytorch train.pytorch bench/pytorch/train_fashion_mnist.py --model cnn --device cuda || rc=1
    fi
    if grep -qE 'gpt' <<<"$TRAIN_FILTER"; then
      run_pytorch train.pytorch_gpt bench/pytorch/train_char_gpt.py --device cuda || rc=1
    fi
  else
    record train.pytorch "skipped: python3 has no torch with CUDA"
  fi
  return $rc
}

stage_table() {
  python3 "$root/scripts/gpu_table.py" "$out" | tee "$out/table.md"
  # Nsight Compute's counters per launch, when the ncu stage ran in this $OUT
  # (set beside the emulated GPU's in bench/results/*-kernel-report.md).
  if grep -q '^"ID","Process ID"' "$log" 2>/dev/null; then
    { echo; echo "### Nsight Compute, per launch of kernel_report"; echo; python3 "$root/scripts/ncu_table.py" "$log"; } |
      tee -a "$out/table.md"
  fi
}

stage_prepare() {
  local from=${PREPARE_FROM:-$BUILD}
  if [ ! -x "$from/bin/anvil_tests_cuda" ]; then
    echo "== building $from (sm_$CUDA_ARCH) under the build lock"
    flock /tmp/anvil-build.lock scripts/build.sh "$from" -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" \
      -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 -DCMAKE_CUDA20_EXTENSION_COMPILE_OPTION=-std=c++20 \
      -DANVIL_BUILD_BENCH=ON -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache || return 1
  fi
  local available wanted=()
  available=$(cmake --build "$from" --target help 2>/dev/null)
  for t in anvil_tests_cuda anvil_tests_nn_cuda anvil_tests_core anvil_tests_nn anvil_tests_distributed bench_kernels bench_train kernel_report; do
    grep -qE "(^|[ .:])$t([ :]|$)" <<<"$available" && wanted+=("$t")
  done
  echo "== building ${wanted[*]} in $from under the build lock"
  flock /tmp/anvil-build.lock cmake --build "$from" -j"$JOBS" --target "${wanted[@]}" >/dev/null || return 1
  grep -qx "/$CARRY/" .git/info/exclude 2>/dev/null || echo "/$CARRY/" >>.git/info/exclude
  local stage
  stage=$(mktemp -d)
  mkdir -p "$stage/bin" "$stage/lib"
  local b
  for b in anvil_tests_cuda anvil_tests_nn_cuda anvil_tests_core anvil_tests_nn anvil_tests_distributed bench_kernels bench_train kernel_report; do
    [ -x "$from/bin/$b" ] && strip -o "$stage/bin/$b" "$from/bin/$b"
  done
  # Libraries outside glibc/libstdc++/the CUDA toolkit, which a CUDA image may lack.
  ldd "$stage"/bin/* 2>/dev/null | awk '/=> \// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so|/usr/local/cuda|libcuda\.so' |
    while read -r lib; do cp -L "$lib" "$stage/lib/"; done
  local data=${CARRY_DATA:-}
  [ "$data" = 1 ] && data="fashion-mnist fortunes"
  if [[ " $data " == *" fashion-mnist "* ]] && [ -d /usr/share/datasets/fashion-mnist ]; then
    mkdir -p "$stage/data/fashion-mnist"  # 26 MB that xz cannot shrink
    cp /usr/share/datasets/fashion-mnist/train-* "$stage/data/fashion-mnist/"
  fi
  if [[ " $data " == *" fortunes "* ]] && [ -d /usr/share/games/fortunes ]; then
    mkdir -p "$stage/data" && cp -rL /usr/share/games/fortunes "$stage/data/fortunes"  # under 1 MB compressed
  fi
  du -sh "$stage"/*
  # One compressed bundle: the binaries share their CUDA kernels, and xz
  # finds that (three test binaries of ~30 MB each come to ~23 MB in all).
  rm -rf "$CARRY"
  mkdir -p "$CARRY"
  echo "== compressing (a minute or two)"
  # One stream with a dictionary larger than any binary (xz -T0 would cut
  # it into blocks and lose the sharing: 74 MB instead of about 35).
  tar -C "$stage" -cf - . | xz -T1 --lzma2=preset=6,dict=256MiB >"$CARRY/bundle.tar.xz"
  rm -rf "$stage"
  echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!scripts' || echo ' with local changes') on $(date -u '+%Y-%m-%d %H:%M UTC')" >"$CARRY/BUILT_FROM"
  du -sh "$CARRY/bundle.tar.xz"
  echo "== carry [\"$CARRY\"] in the device call; the tree plus carried paths must stay under 64 MiB"
}

# A carried bundle is unpacked once, on the GPU machine.
unpack_carry() {
  if [ -f "$CARRY/bundle.tar.xz" ] && [ ! -d "$CARRY/bin" ]; then
    tar -C "$CARRY" -xJf "$CARRY/bundle.tar.xz" && echo "== unpacked $CARRY/bundle.tar.xz"
  fi
}

# CMake before 3.26 knows no C++20 flag for nvcc; the two
# CMAKE_CUDA20_*_COMPILE_OPTION settings in the configure line supply it.

# --- main ---
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(build tests sanitize bench ncu pytorch train table)
if [ "${stages[*]}" = prepare ]; then
  stage_prepare
  exit $?
fi

for s in "${stages[@]}"; do
  case $s in
    build | tests | sdpa | sanitize | bench | ncu | pytorch | train | table) ;;
    prepare) echo "prepare runs alone, on the development machine"; exit 2 ;;
    *) echo "unknown stage '$s' (build tests sdpa sanitize bench ncu pytorch train table | prepare)"; exit 2 ;;
  esac
done

mkdir -p "$out"  # not before: `prepare` writes no results
unpack_carry
setup_libraries
say "gpu_check: ${stages[*]} -> $out"
stage_info
overall=0
for s in "${stages[@]}"; do
  case $s in
    build) stage_build || { overall=1; break; } ;;  # nothing else can run without binaries
    tests) stage_tests || overall=1 ;;
    sdpa) stage_sdpa || overall=1 ;;
    sanitize) stage_sanitize || overall=1 ;;
    bench) stage_bench || overall=1 ;;
    ncu) stage_ncu || overall=1 ;;
    pytorch) stage_pytorch || overall=1 ;;
    train) stage_train || overall=1 ;;
    table) ;;  # printed last, below
  esac
done

echo
echo "== summary"
printf '  %s\n' "${status[@]}" | tee -a "$log"
for s in "${stages[@]}"; do
  [ "$s" = table ] && { echo; stage_table; }
done
exit $overall
