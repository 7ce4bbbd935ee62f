#!/usr/bin/env bash
# Builds the API reference (docs/Doxyfile) over the public headers, the ones
# `cmake --install` installs (cmake/public_headers.cmake), and fails when
# doxygen warns: a public class, function, typedef, enum or data member
# without documentation, or a doc comment doxygen cannot parse. Prints each
# warning once (doxygen repeats an inherited member's for every subclass).
# The pages land in build-docs/api/html (index.html), or in $ANVIL_API_OUT/html.
# About a second.
# usage: scripts/check_api_docs.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v doxygen > /dev/null; then
  echo "check_api_docs: doxygen not found (Debian: apt-get install doxygen, or scripts/setup.sh --tests)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake -DROOT="$PWD" -DOUT="$tmp/headers" -P cmake/print_public_headers.cmake
mapfile -t headers < "$tmp/headers"

export ANVIL_API_OUT=${ANVIL_API_OUT:-build-docs/api}
rm -rf "$ANVIL_API_OUT/html"
mkdir -p "$ANVIL_API_OUT"
export ANVIL_API_ROOT=$PWD
ANVIL_API_HEADERS=$(printf "$PWD/%s " "${headers[@]}")
export ANVIL_API_HEADERS
status=0
doxygen docs/Doxyfile > "$tmp/out" 2> "$tmp/log" || status=$?

# One line per warning, repeats dropped, paths relative to the repository.
awk '!seen[$0]++' "$tmp/log" | sed "s|$PWD/||g" > "$tmp/warnings"
count=$(grep -cE '^[^ ].*: (warning|error): ' "$tmp/warnings" || true)
if [ "$count" -gt 0 ]; then
  cat "$tmp/warnings" >&2
  echo "check_api_docs: $count doxygen warning(s) in the public headers (above). Document each public" \
    "class and function with a /// comment above it (or ///< after it); see CONTRIBUTING.md" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  cat "$tmp/out" "$tmp/warnings" >&2
  echo "check_api_docs: doxygen failed (exit $status)" >&2
  exit 1
fi
echo "check_api_docs: ${#headers[@]} public headers, every public entity documented ($ANVIL_API_OUT/html/index.html)"
