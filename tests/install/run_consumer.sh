#!/usr/bin/env bash
# Installs a build of anvil into a temporary prefix, then configures, builds
# and runs tests/install/consumer against it, the way a user project would:
# it sees only the installed headers and libraries.
# usage: run_consumer.sh BUILD_DIR CONSUMER_SOURCE_DIR CXX_COMPILER BUILD_TYPE LIBRARY_KIND [FLAGS]
#   LIBRARY_KIND  static or shared: what the build made (checked in the install)
#   FLAGS         compile and link flags for the consumer; a sanitized anvil
#                 needs its sanitizers' (-fsanitize=...) to link and run
set -euo pipefail

build_dir=$1
consumer_src=$2
cxx=$3
build_type=$4
kind=$5
flags=${6:-}

work=$(mktemp -d "${TMPDIR:-/tmp}/anvil-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

fail() {
  echo "install_consumer: $*" >&2
  exit 1
}

echo "== installing $build_dir into $prefix"
cmake --install "$build_dir" --prefix "$prefix" > "$work/install.log" \
  || { cat "$work/install.log"; exit 1; }
echo "$(find "$prefix/include" -type f | wc -l) headers installed (the public API: cmake/public_headers.cmake)"

libdir=$(dirname "$(find "$prefix" -name 'libanvil_core.*' -print -quit)")
[ -d "$libdir" ] || fail "no libanvil_core in $prefix"
if [ "$kind" = shared ]; then
  # Each installed library loads from there alone: its RUNPATH finds its
  # anvil siblings ($ORIGIN) and its dependencies, none in the build tree.
  for lib in "$libdir"/libanvil_*.so; do
    if ldd "$lib" | grep -q 'not found'; then
      ldd "$lib"
      fail "$(basename "$lib") has unresolved dependencies"
    fi
    if readelf -d "$lib" | grep -E 'R(UN)?PATH' | grep -qF "$(cd "$build_dir" && pwd)"; then
      readelf -d "$lib" | grep -E 'R(UN)?PATH'
      fail "$(basename "$lib") still points into the build tree"
    fi
  done
  ! ls "$libdir"/libanvil_*.a > /dev/null 2>&1 || fail "a shared build installed static libraries"
else
  [ -f "$libdir/libanvil_core.a" ] || fail "a static build installed no libanvil_core.a"
fi

echo "== configuring the consumer"
cmake -S "$consumer_src" -B "$work/build" \
  -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE="$build_type" \
  -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags"

echo "== building the consumer"
cmake --build "$work/build" -j2

if [ "$kind" = shared ]; then
  core=$(ldd "$work/build/consumer" | awk '/libanvil_core\.so/ { print $3 }')
  [[ "$core" == "$libdir"/libanvil_core.so* ]] || fail "the consumer loads libanvil_core.so from '$core', not the install"
fi

echo "== running the consumer"
mkdir "$work/scratch"
"$work/build/consumer" "$work/scratch"
