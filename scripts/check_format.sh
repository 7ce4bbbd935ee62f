#!/usr/bin/env bash
# Fails when a tracked C++ or CUDA source is not formatted as .clang-format
# says; prints the files and the command that fixes them. Checks the whole
# tree (a few seconds), so a clone of main and a branch are held to the same.
# usage: scripts/check_format.sh [--fix]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

formatter=${CLANG_FORMAT:-clang-format}
if ! command -v "$formatter" > /dev/null; then
  echo "check_format: $formatter not found (Debian: apt-get install clang-format)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if [ "${1:-}" = "--fix" ]; then
  "$formatter" -i "${files[@]}"
  exit 0
fi
unformatted=()
for f in "${files[@]}"; do
  if ! "$formatter" --dry-run -Werror "$f" > /dev/null 2>&1; then unformatted+=("$f"); fi
done
if [ ${#unformatted[@]} -gt 0 ]; then
  echo "check_format: ${#unformatted[@]} file(s) not formatted as .clang-format says:" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  echo "fix with: scripts/check_format.sh --fix (or $formatter -i FILE)" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
