#!/usr/bin/env bash
# Installs the Debian packages anvil needs, only those that are missing (so a
# ready machine pays nothing). The CUDA toolkit is not a package here: the
# build uses it when /usr/local/cuda exists and does without it otherwise.
set -euo pipefail

packages=(
  build-essential cmake ccache
  libopenblas-openmp-dev libdnnl-dev libgloo-dev zlib1g-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  clang libclang-rt-14-dev libomp-14-dev
  dataset-fashion-mnist fortunes fortunes-min
)

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" > /dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
