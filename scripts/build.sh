#!/usr/bin/env bash
# usage: scripts/build.sh BUILD_DIR [extra cmake args...]
# Configures (CUDA found when /usr/local/cuda has nvcc) and builds anvil with
# every core. Shared by run.sh and test.sh so both build the same way.
set -euo pipefail

build_dir=$1
shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

cuda_args=()
if [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
  cuda_args=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi

cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" "$@"
cmake --build "$build_dir" -j"$(nproc)"
