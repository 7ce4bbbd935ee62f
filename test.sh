#!/usr/bin/env bash
# ./test.sh             build into build/ (Release, CUDA when available) and
#                       run every test; CUDA tests skip themselves without a GPU.
# ./test.sh --sanitize  build into build-sanitize/ with ASan + UBSan (CPU only)
#                       and run the tests labelled cpu.
# Extra arguments after the mode go to ctest (e.g. -R core).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

mode=plain
if [ "${1:-}" = "--sanitize" ]; then
  mode=sanitize
  shift
fi

scripts/setup.sh

# ctest runs two test processes on what may be two cores: OpenMP workers that
# spin while waiting would then steal each other's cores. Sleep instead.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}

if [ "$mode" = plain ]; then
  scripts/build.sh build
  ctest --test-dir build --output-on-failure -j2 "$@"
else
  # -O1 is what the sanitizer docs recommend: close to Debug's stack traces,
  # several times faster to run. No NDEBUG, so asserts stay on.
  scripts/build.sh build-sanitize \
    -DANVIL_SANITIZE=ON -DANVIL_CUDA=OFF -DANVIL_BUILD_BENCH=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g"
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  ctest --test-dir build-sanitize --output-on-failure -j2 -L cpu "$@"
fi
