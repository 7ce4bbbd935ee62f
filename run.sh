#!/usr/bin/env bash
# Builds anvil (Release, CUDA when available) and runs the main job: the
# Fashion-MNIST sample, or the tour until that sample exists. Extra
# arguments go to the job.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

scripts/setup.sh
# OpenMP threads sleep rather than spin between parallel regions: spinning
# threads stall every op when anything else is using a core.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
scripts/build.sh build

if [ -x build/bin/fashion_mnist ]; then
  exec build/bin/fashion_mnist "$@"
fi
exec build/bin/tour "$@"
