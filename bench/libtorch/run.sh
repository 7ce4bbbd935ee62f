#!/usr/bin/env bash
# usage: bench/libtorch/run.sh [ANVIL_BUILD_DIR]
# Trains the Fashion-MNIST MLP and CNN for the same steps in anvil
# (bench_train) and in libtorch (Debian's libtorch-dev, CPU, OpenBLAS) on this
# machine, one after the other, and prints both sides' samples per second.
# Installs libtorch-dev when missing (it is only needed for this comparison).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
anvil_build=${1:-$root/build}
export OMP_WAIT_POLICY=PASSIVE  # both sides: see README "Performance notes"

if ! dpkg -s libtorch-dev >/dev/null 2>&1; then
  apt-get install -y --no-install-recommends libtorch-dev
fi
cmake -S "$root/bench/libtorch" -B "$anvil_build/libtorch-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$anvil_build/libtorch-bench" -j"$(nproc)"

echo "== libtorch"
"$anvil_build/libtorch-bench/libtorch_train_fashion_mnist"
echo "== anvil"
"$anvil_build/bin/bench_train" --benchmark_filter=fashion_mnist
