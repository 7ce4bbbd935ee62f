#!/usr/bin/env bash
# ./test.sh             build into build/ (Release, CUDA when available) and
#                       run every test; CUDA tests skip themselves without a GPU.
# ./test.sh --sanitize  build into build-sanitize/ with ASan + UBSan (CPU only,
#                       shared libraries) and run the tests labelled cpu.
# ./test.sh --emulated-gpu  build into build-emulated/ with the CUDA kernels on
#                       the emulated GPU (kernels/cuda/emulator) and run there,
#                       every checker on: the tests labelled cuda (kernels, and
#                       the samples trained on cuda against the CPU) and the
#                       core, nn and distributed tests, whose GPU paths (pinned
#                       memory, non_blocking copies, devices) now have a GPU.
# ./test.sh --tsan      build into build-tsan/ with ThreadSanitizer (CPU only)
#                       and run the threaded code's tests: data loader,
#                       autograd engine and hooks, caching allocator, DDP,
#                       pipelines, store, profiler, Trainer (tests/tsan.supp
#                       lists the third-party reports ignored, with reasons).
# ./test.sh --fuzz [S]  build into build-fuzz/ with clang's libFuzzer, ASan and
#                       UBSan and run every harness in fuzz/ for S seconds
#                       (default 20) from the seed corpora (scripts/fuzz.sh).
# Extra arguments after the mode go to ctest (e.g. -R core).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

mode=plain
if [ "${1:-}" = "--sanitize" ]; then
  mode=sanitize
  shift
elif [ "${1:-}" = "--emulated-gpu" ]; then
  mode=emulated
  shift
elif [ "${1:-}" = "--tsan" ]; then
  mode=tsan
  shift
elif [ "${1:-}" = "--fuzz" ]; then
  mode=fuzz
  shift
fi

# The test, benchmark and format-check packages too; the fuzz tree (no tests,
# benchmarks or samples) needs clang 16 instead.
if [ "$mode" = fuzz ]; then
  scripts/setup.sh --fuzz
else
  scripts/setup.sh --tests
fi

# ctest runs two test processes on what may be two cores: OpenMP workers that
# spin while waiting would then steal each other's cores. Sleep instead.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}

if [ "$mode" = plain ]; then
  scripts/build.sh build
  ctest --test-dir build --output-on-failure -j2 "$@"
elif [ "$mode" = emulated ]; then
  # Only what these tests need: no CPU kernel tests (the plain build runs
  # them), no benchmarks.
  ANVIL_BUILD_TARGETS="anvil_tests_cuda anvil_tests_nn_cuda anvil_tests_core anvil_tests_nn anvil_tests_distributed fashion_mnist char_gpt model_parallel embed" \
    scripts/build.sh build-emulated -DANVIL_CUDA=EMULATOR -DANVIL_BUILD_BENCH=OFF -DANVIL_BUILD_SAMPLES=ON
  ctest --test-dir build-emulated --output-on-failure -j2 -L cuda "$@"
  ctest --test-dir build-emulated --output-on-failure -j2 -R '^(core|nn|distributed)\.' "$@"
elif [ "$mode" = tsan ]; then
  # core_base holds the caching allocator's tests (tests/core/base).
  ANVIL_BUILD_TARGETS="anvil_tests_core_base anvil_tests_core anvil_tests_nn anvil_tests_distributed" \
    scripts/build.sh build-tsan -DANVIL_TSAN=ON -DANVIL_CUDA=OFF -DANVIL_BUILD_BENCH=OFF \
    -DANVIL_BUILD_SAMPLES=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g"
  # OpenMP's runtime (libgomp) is not built for ThreadSanitizer, so its
  # barriers look like races: the kernels' parallel loops run on one thread
  # here. The threads under test (loader workers, autograd, DDP, stores,
  # Gloo's) are anvil's own std::threads.
  export OMP_NUM_THREADS=1
  # halt_on_error=0: every report of a test is printed, and the test still
  # fails (TSan's exit code is 66 when it reported anything).
  # allocator_may_return_null=1: a huge allocation returns null, as malloc
  # does, so the out-of-memory tests see anvil's error instead of TSan's abort.
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0:second_deadlock_stack=1:allocator_may_return_null=1:suppressions=$PWD/tests/tsan.supp}
  # The suites of the threaded code, by name (group.[Instance/]Suite.test):
  # caching and CPU allocators; the autograd engine, its callbacks and its
  # hooks on several threads; data loader; profiler; Trainer, monitor and
  # resume; DDP (overlap on and off), DataParallel, ZeRO; pipeline executor
  # and launches; FileStore, TCPStore, the store contract and hostile
  # clients; Gloo groups, collectives, failures, ring all-reduce; launcher;
  # and the newer strategies listed below.
  suites="CachingAllocator|CachingAllocatorOomMessage|CpuAllocator|CpuCachingAllocator"
  suites+="|Autograd|AutogradCallbacks|AutogradRegressions|AutogradThreads|AnomalyMode"
  suites+="|DataLoader|DataLoaderPinMemory|Profiler|Trainer|TrainerNumericalGuards|TrainerResume|Monitor"
  suites+="|DDP|DataParallel|DataParallelProcesses|ZeroAdamW"
  suites+="|PipelineExecutor|PipelineLaunch|PipelineEquivalence"
  suites+="|FileStore|TCPStore|TCPStoreHostile|StoreContract"
  suites+="|GlooGroup|InitProcessGroup|Collectives|Failures|RingAllReduce|Launcher|LauncherRestarts"
  # ZeRO-2 and FSDP (post-accumulate hooks, prefetching collectives), comm
  # hooks, the parameter server's connection threads (in-process and
  # launched), grouped send/recv, tensor-parallel mappings and layers, and
  # two nodes in network namespaces (one killed).
  suites+="|FSDP|ZeroStage2|DDPCommHooks|PowerSGD|BatchIsendIrecv|Mappings|ParallelLayers"
  suites+="|ParameterServerSync|ParameterServerAsync|ParameterServerHostile|ParameterServerLaunch"
  suites+="|TwoNodes|TwoNodesOneKilled"
  ctest --test-dir build-tsan --output-on-failure -j2 \
    -R "${ANVIL_TSAN_TESTS:-^[a-z_]+\.([A-Za-z0-9_]+/)?($suites)\.}" "$@"
elif [ "$mode" = fuzz ]; then
  seconds=${1:-20}
  [ $# -gt 0 ] && shift
  harnesses=$(sed -n 's/^set(ANVIL_FUZZ_HARNESSES \(.*\))$/\1/p' fuzz/CMakeLists.txt)
  targets="fuzz_seeds"
  for h in $harnesses; do targets="$targets fuzz_$h"; done
  CC=clang-16 CXX=clang++-16 ANVIL_BUILD_TARGETS="$targets" \
    scripts/build.sh build-fuzz -DANVIL_FUZZ=ON -DANVIL_CUDA=OFF -DANVIL_BUILD_TESTS=OFF \
    -DANVIL_BUILD_BENCH=OFF -DANVIL_BUILD_SAMPLES=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g"
  scripts/fuzz.sh build-fuzz "$seconds" $harnesses
else
  # -O1 is what the sanitizer docs recommend: close to Debug's stack traces,
  # several times faster to run. No NDEBUG, so asserts stay on. Shared
  # libraries: the plain build covers the static ones, this tree the shared
  # ones (install_consumer runs in both) without a build of its own.
  scripts/build.sh build-sanitize \
    -DANVIL_SANITIZE=ON -DANVIL_CUDA=OFF -DANVIL_BUILD_BENCH=OFF -DBUILD_SHARED_LIBS=ON \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g"
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  ctest --test-dir build-sanitize --output-on-failure -j2 -L cpu "$@"
fi
