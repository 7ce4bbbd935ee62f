#!/usr/bin/env bash
# usage: scripts/compile_times.sh BUILD_DIR [REGEX] [COUNT]
# Recompiles each translation unit of BUILD_DIR whose source matches REGEX
# (default: CUDA sources, '\.cu$') one at a time, without ccache, and prints
# the COUNT (default 15) slowest with their wall-clock seconds. The build must
# have been configured (compile_commands.json); objects are written to a
# temporary folder, so the build tree is left as it was.
set -euo pipefail

build_dir=$(cd "$1" && pwd)
regex=${2:-'\.cu$'}
count=${3:-15}
db=$build_dir/compile_commands.json
[ -f "$db" ] || { echo "compile_times: $db not found (configure the build first)" >&2; exit 1; }
export PATH=/usr/local/cuda/bin:$PATH

python3 - "$db" "$regex" "$count" <<'PY'
import json, os, re, shlex, subprocess, sys, tempfile, time

db, regex, count = sys.argv[1], re.compile(sys.argv[2]), int(sys.argv[3])
entries = [e for e in json.load(open(db)) if regex.search(e["file"])]
root = os.path.commonpath([e["file"] for e in entries]) if entries else ""
results = []
with tempfile.TemporaryDirectory() as tmp:
    for i, e in enumerate(entries):
        args = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
        if os.path.basename(args[0]) == "ccache":
            args = args[1:]
        out = args.index("-o")
        args[out + 1] = os.path.join(tmp, f"tu{i}.o")
        # Dependency files would be written next to the build's own.
        args = [a for j, a in enumerate(args) if a not in ("-MD", "-MMD") and not (j > 0 and args[j - 1] in ("-MF", "-MT"))
                and a not in ("-MF", "-MT")]
        start = time.monotonic()
        proc = subprocess.run(args, cwd=e["directory"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        seconds = time.monotonic() - start
        if proc.returncode != 0:
            print(f"compile_times: {e['file']} failed:\n{proc.stderr}", file=sys.stderr)
            sys.exit(1)
        results.append((seconds, os.path.relpath(e["file"], root)))
        print(f"  {seconds:6.1f} s  {os.path.relpath(e['file'], root)}", file=sys.stderr, flush=True)
results.sort(reverse=True)
print(f"{len(results)} translation units matching {regex.pattern}, {sum(r[0] for r in results):.0f} s in all; slowest:")
for seconds, name in results[:count]:
    print(f"{seconds:7.1f} s  {name}")
PY
