#!/usr/bin/env bash
# usage: scripts/count_libtorch_oneliners.sh [LIST] [BUILD_DIR]
#   LIST       libtorch one-liners, one a line (default tests/readme/libtorch_oneliners.txt);
#              '#' lines are comments, '## name' lines start a section
#   BUILD_DIR  a configured build tree whose compile_commands.json gives the
#              compiler and flags (default build)
# Compiles each line alone, as the body of a function whose parameters are the
# tensors and the model the lines use, against <anvil/anvil.h> with
# `namespace torch = anvil;` as the only change from libtorch, and prints, per
# section and in all, how many compile; then each line that does not, with the
# compiler's first error. Exit status 0 (the count is the result).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
list=${1:-$root/tests/readme/libtorch_oneliners.txt}
build=${2:-$root/build}
db=$build/compile_commands.json
[ -f "$db" ] || { echo "no $db: configure a build first (scripts/build.sh build)" >&2; exit 2; }

# The flags anvil's own public-API test compiles with (include paths, -std, -f...).
read -r -a flags < <(python3 - "$db" <<'PY'
import json, shlex, sys
for e in json.load(open(sys.argv[1])):
    if e["file"].endswith("tests/readme/test_libtorch_habits.cpp"):
        args = shlex.split(e["command"]) if "command" in e else e["arguments"]
        keep, skip = [], False
        for a in args[1:]:
            if skip: skip = False; continue
            if a in ("-o", "-c"): skip = True; continue
            if a.endswith(".cpp"): continue
            keep.append(a)
        print(args[0], " ".join(keep))
        break
else:
    sys.exit("compile_commands.json has no tests/readme/test_libtorch_habits.cpp")
PY
)
compiler=${flags[0]}
flags=("${flags[@]:1}" -w)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/prelude.h" <<'CPP'
#include <anvil/anvil.h>

#include <iostream>
#include <memory>
#include <tuple>
#include <vector>

namespace torch = anvil;  // the port
using namespace torch::indexing;
namespace F = torch::nn::functional;
CPP
# Precompiled once; each line then costs a fraction of a second.
"$compiler" "${flags[@]}" -x c++-header "$work/prelude.h" -o "$work/prelude.h.gch"

section="" total=0 ok=0
declare -A sec_total sec_ok
order=()
failures=""
stale=""
n=0
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in
    "## "*) section=${line#\#\# }; order+=("$section"); sec_total[$section]=0; sec_ok[$section]=0; continue ;;
    "#"* | "") continue ;;
  esac
  n=$((n + 1))
  src=$work/line$n.cpp
  cat > "$src" <<CPP
#include "prelude.h"
void habit(torch::Tensor x, torch::Tensor y, torch::Tensor mask, torch::Tensor other, torch::Tensor idx,
           torch::Tensor c, torch::Tensor w, torch::Tensor b, torch::Tensor src, torch::Tensor img,
           torch::Tensor seq, torch::Tensor probs, torch::Tensor logp, torch::Tensor q, torch::Tensor a,
           std::shared_ptr<torch::nn::Sequential> model, float* buffer) {
$line
}
CPP
  total=$((total + 1))
  sec_total[$section]=$((sec_total[$section] + 1))
  if err=$(cd "$work" && "$compiler" "${flags[@]}" -include prelude.h -fsyntax-only "$src" 2>&1); then
    ok=$((ok + 1))
    sec_ok[$section]=$((sec_ok[$section] + 1))
    case "$line" in *"// FAILS"*) stale+="  $line"$'\n' ;; esac
  else
    first=$(printf '%s\n' "$err" | grep -m1 'error' | sed "s|$work/||")
    failures+="  $line"$'\n'"      $first"$'\n'
  fi
done < "$list"

for s in "${order[@]}"; do
  printf '%-45s %3d of %3d compile\n' "$s" "${sec_ok[$s]}" "${sec_total[$s]}"
done
printf '%-45s %3d of %3d compile\n' "all" "$ok" "$total"
if [ -n "$failures" ]; then
  echo "does not compile:"
  printf '%s' "$failures"
fi
if [ -n "$stale" ]; then
  echo "marked FAILS but compiles now (drop the marker):"
  printf '%s' "$stale"
fi
