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

# A clang without its own OpenMP (no omp.h in its resource folder): clang 16
# next to libomp-dev, whose LLVM 14 OpenMP conflicts with libomp-16-dev
# (scripts/setup.sh --fuzz keeps the one installed). Use the newest LLVM
# OpenMP present: its omp.h copied alone into the build folder (its own
# folder also holds that clang's builtin headers) and its libomp.so.
# The compiler is the configured tree's (CMake ignores a changed CXX), else $CXX.
openmp_args=()
cxx=${CXX:-}
if [ -f "$build_dir/CMakeCache.txt" ]; then
  cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
fi
if [ -n "$cxx" ] && resource=$("$cxx" -print-resource-dir 2> /dev/null) && [ -n "$resource" ]; then
  if [ ! -f "$resource/include/omp.h" ]; then
    omp_lib=
    omp_header=
    for lib in $(ls -d /usr/lib/llvm-*/lib/libomp.so 2> /dev/null | sort -V); do
      header=$(ls -d "${lib%/libomp.so}"/clang/*/include/omp.h 2> /dev/null | sort -V | tail -1)
      if [ -n "$header" ]; then
        omp_lib=$lib
        omp_header=$header
      fi
    done
    if [ -n "$omp_lib" ]; then
      echo "build: $cxx has no OpenMP of its own; using $omp_lib and $omp_header"
      mkdir -p "$build_dir/anvil-openmp"
      cp "$omp_header" "$build_dir/anvil-openmp/omp.h"
      openmp_args=(-DOpenMP_CXX_FLAGS=-fopenmp -DOpenMP_CXX_LIB_NAMES=omp "-DOpenMP_omp_LIBRARY=$omp_lib"
        "-DOpenMP_CXX_INCLUDE_DIR=$(cd "$build_dir" && pwd)/anvil-openmp")
    else
      echo "build: $cxx has no OpenMP (omp.h) and no LLVM OpenMP is installed (Debian: libomp-16-dev for clang-16)" >&2
    fi
  elif [ -f "$build_dir/CMakeCache.txt" ] && grep -q '^OpenMP_CXX_INCLUDE_DIR.*/anvil-openmp$' "$build_dir/CMakeCache.txt"; then
    # The clang has its own OpenMP now: forget the stand-in, find it again.
    openmp_args=(-U 'OpenMP_*')
  fi
fi

cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" "${launcher_args[@]}" \
  "${openmp_args[@]}" "$@"
# ANVIL_BUILD_TARGETS="a b": build only those targets (a test mode builds what it runs).
targets=()
for t in ${ANVIL_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j"$(nproc)" "${targets[@]}"
