#!/usr/bin/env bash
# Installs a build of anvil into a temporary prefix, then configures, builds
# and runs tests/install/consumer against it, the way a user project would.
# usage: run_consumer.sh BUILD_DIR CONSUMER_SOURCE_DIR CXX_COMPILER [BUILD_TYPE]
set -euo pipefail

build_dir=$1
consumer_src=$2
cxx=$3
build_type=${4:-Release}

work=$(mktemp -d "${TMPDIR:-/tmp}/anvil-install-XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== installing $build_dir into $work/prefix"
cmake --install "$build_dir" --prefix "$work/prefix" > "$work/install.log" \
  || { cat "$work/install.log"; exit 1; }

echo "== configuring the consumer"
cmake -S "$consumer_src" -B "$work/build" \
  -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE="$build_type"

echo "== building the consumer"
cmake --build "$work/build" -j2

echo "== running the consumer"
"$work/build/consumer"
