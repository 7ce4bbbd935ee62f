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

# Every tree compiles through ccache, its cache in the home folder and paths
# taken relative to the checkout, so a fresh clone (CI's) reuses what any
# earlier build of the same sources compiled.
launcher_args=()
if command -v ccache > /dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
  export CCACHE_BASEDIR=$root
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
  # Trees built with -g (sanitize, emulated) would otherwise hash the build
  # folder into every key and never hit from another checkout.
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  # nvcc writes its temporaries under changing names; compare the sources.
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-include_file_mtime,include_file_ctime,time_macros}
  for lang in C CXX CUDA; do
    launcher_args+=("-DCMAKE_${lang}_COMPILER_LAUNCHER=ccache")
  done
fi

cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" "${launcher_args[@]}" "$@"
# ANVIL_BUILD_TARGETS="a b": build only those targets (a test mode builds what it runs).
targets=()
for t in ${ANVIL_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j"$(nproc)" "${targets[@]}"
