"""anvil next to PyTorch eager on issue 18's memory-bound op set, alternating in one run:
bench_cpu's BM16M_* benchmarks (bench/cpu/memory_bound_16m.cpp) against
bench/pytorch/cpu_ops_16m.py (same names, shapes and byte counts), each side
also measuring a 2-thread 64 MB memcpy in its own process, so every cell can be
read as a percentage of the memory bandwidth that process saw.

PyTorch runs with MALLOC_MMAP_MAX_=0 (glibc keeps freed 64 MB buffers rather
than unmapping them, so PyTorch is not charged page faults for its
allocator), as issue 18 asks, and MALLOC_TRIM_THRESHOLD_ past any size here:
without it a freed output at the top of the heap goes back to the kernel, and
in a filtered run (fewer buffers on the heap) PyTorch's add read 8 GB/s
instead of 27. anvil runs as built (its caching allocator, blocks on huge
pages), and also reports a memcpy between two of its tensors: the ceiling on
that memory, which a copy between std::vectors on 4 KiB pages does not reach.

Usage (repository root, after scripts/build.sh build, on a quiet machine):
  OMP_WAIT_POLICY=PASSIVE python3 bench/compare_cpu_ops.py [--python PY] [--rounds 2] [--filter REGEX]
      [--out bench/results/<date>-cpu-ops-vs-pytorch.md]
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

from compare_cpu import ROOT, cpu_info, run, span

MEMCPY = "BM_memcpy_all_threads/elems:16777216"
MEMCPY_TENSORS = "BM_memcpy_all_threads_tensors/elems:16777216/buffers:1"
# Two pairs rotating: the working set of a forward and backward benchmark
# (four 64 MB tensors), which one pair's copy partly finds in the cache.
MEMCPY_TENSORS_TWO_PAIRS = "BM_memcpy_all_threads_tensors/elems:16777216/buffers:2"
NO_PAGE_FAULTS = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 40)}


def anvil_results(name_filter, threads):
    # Google Benchmark's names go on past ours ("/min_time:0.200/real_time"): no "$".
    # A "$" in the filter becomes "/" here for the same reason.
    memcpys = f"{MEMCPY}/|{MEMCPY_TENSORS}/|{MEMCPY_TENSORS_TWO_PAIRS}/"
    flt = f"^({memcpys}|BM16M_)" if not name_filter else f"^({memcpys})|{name_filter.replace('$', '/')}"
    stdout, _ = run([os.path.join(ROOT, "build/bin/bench_cpu"), f"--benchmark_filter={flt}",
                     "--benchmark_format=json"], {"OMP_NUM_THREADS": str(threads)})
    report = json.loads(stdout)
    results = {"context": report["context"]}
    for b in report["benchmarks"]:
        # Thread-count suffixes (".../threads:2", "/real_time") are not part of the shared name.
        name = b["run_name"] if "run_name" in b else b["name"]
        name = "/".join(p for p in name.split("/") if not p.startswith(("threads:", "min_time:", "min_warmup_time:", "real_time", "process_time")))
        if "bytes_per_second" in b:
            results[name] = b["bytes_per_second"]
    return results


def pytorch_results(python, name_filter, threads):
    args = [python, os.path.join(ROOT, "bench/pytorch/cpu_ops_16m.py"), "--threads", str(threads)]
    if name_filter:
        args += ["--filter", f"{MEMCPY}|{name_filter}"]
    stdout, _ = run(args, NO_PAGE_FAULTS)
    results = {}
    for line in stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            results["torch"] = rec["torch"]
            results[rec["benchmark"]] = rec["bytes_per_second"]
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="a Python with torch")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--filter", default="", help="only benchmarks matching this regex (the memcpy always runs)")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args()

    sides = {"anvil": [], "PyTorch": []}
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}: anvil", file=sys.stderr, flush=True)
        sides["anvil"].append(anvil_results(args.filter, args.threads))
        print(f"round {r + 1}/{args.rounds}: PyTorch", file=sys.stderr, flush=True)
        sides["PyTorch"].append(pytorch_results(args.python, args.filter, args.threads))

    def values(side, name):
        return [s[name] / 1e9 for s in sides[side] if name in s]

    names = sorted({k for s in sides["anvil"] for k in s if k.startswith("BM16M_")} &
                   {k for s in sides["PyTorch"] for k in s if k.startswith("BM16M_")})
    memcpy = {side: statistics.median(values(side, MEMCPY)) for side in sides}
    memcpy_tensors = statistics.median(values("anvil", MEMCPY_TENSORS))
    memcpy_two_pairs = statistics.median(values("anvil", MEMCPY_TENSORS_TWO_PAIRS))

    def same_working_set(name):  # the tensor copy whose working set matches the benchmark's
        return memcpy_two_pairs if "_fwd_bwd/" in name else memcpy_tensors
    model, _ = cpu_info()
    commit = run(["git", "rev-parse", "--short", "HEAD"])[0].strip()
    load = os.getloadavg()
    lines = [f"# anvil vs PyTorch eager: the memory-bound op set at 16M float32, {datetime.date.today().isoformat()}",
             "",
             f"- Commit `{commit}`; CPU: {model}, {os.cpu_count()} cores; {args.threads} threads each side; "
             f"PyTorch {sides['PyTorch'][0].get('torch')} with "
             f"{', '.join(f'`{k}={v}`' for k, v in NO_PAGE_FAULTS.items())}; Python {platform.python_version()}.",
             f"- anvil vector math: {sides['anvil'][0]['context'].get('cpu_isa')}.",
             f"- {args.rounds} rounds, anvil then PyTorch in each; GB/s cells give the range over the rounds, "
             "the ratio and the memcpy percentages use medians.",
             f"- 2-thread memcpy (read + write bytes), median: anvil's processes {memcpy['anvil']:.1f} GB/s, "
             f"PyTorch's {memcpy['PyTorch']:.1f} GB/s; between two anvil tensors (huge pages) {memcpy_tensors:.1f} GB/s, "
             f"and rotating over two such pairs {memcpy_two_pairs:.1f} GB/s. "
             f"Load average at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}.",
             f"- Run: `python3 bench/compare_cpu_ops.py --rounds {args.rounds}"
             f"{' --filter ' + repr(args.filter) if args.filter else ''}`.",
             "- Columns: anvil's and PyTorch's percentages of their own processes' memcpy; anvil's of the copy "
             "between its tensors with the benchmark's working set (two pairs for the forward and backward "
             "benchmarks, which touch four tensors; one pair for the rest).", "",
             "| benchmark | anvil GB/s | PyTorch GB/s | anvil / PyTorch | anvil % of memcpy | "
             "anvil % of memcpy on its tensors, same working set | PyTorch % of memcpy |",
             "|---|---|---|---|---|---|---|"]
    for name in names:
        ours, theirs = values("anvil", name), values("PyTorch", name)
        ratio = statistics.median(ours) / statistics.median(theirs)
        lines.append(f"| {name} | {span(ours, '{:.1f}')} | {span(theirs, '{:.1f}')} | {ratio:.2f}x | "
                     f"{100 * statistics.median(ours) / memcpy['anvil']:.0f}% | "
                     f"{100 * statistics.median(ours) / same_working_set(name):.0f}% | "
                     f"{100 * statistics.median(theirs) / memcpy['PyTorch']:.0f}% |")
    text = "\n".join(lines + [""])
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
