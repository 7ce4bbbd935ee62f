#!/usr/bin/env bash
# Installs what the main job needs (scripts/setup.sh, no test packages),
# builds only the libraries and the Fashion-MNIST sample (the tour until that
# sample exists) into build-run/ (Release; no tests, no benchmarks), and runs
# it. Extra arguments go to the job.
# CUDA: built when this machine has an NVIDIA GPU (nvidia-smi -L, or
# /dev/nvidia0) and nvcc is found; ANVIL_CUDA=ON|OFF|AUTO|EMULATOR in the
# environment decides instead.
# ./test.sh builds everything, in its own build/, so the two never
# reconfigure each other's tree.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

scripts/setup.sh
# OpenMP threads sleep rather than spin between parallel regions: spinning
# threads stall every op when anything else is using a core.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}

cuda=${ANVIL_CUDA:-}
if [ -z "$cuda" ]; then
  if nvidia-smi -L > /dev/null 2>&1 || [ -e /dev/nvidia0 ]; then
    cuda=AUTO
  else
    cuda=OFF
  fi
fi
job=fashion_mnist
[ -f samples/fashion_mnist.cpp ] || job=tour
# Every option passed each time: the cached ones of an earlier run never linger.
ANVIL_BUILD_TARGETS=$job scripts/build.sh build-run -DANVIL_CUDA="$cuda" \
  -DANVIL_BUILD_TESTS=OFF -DANVIL_BUILD_BENCH=OFF -DANVIL_BUILD_SAMPLES=ON

exec "build-run/bin/$job" "$@"
