#!/usr/bin/env python3
"""Prints anvil's GPU benchmark results next to PyTorch's, as Markdown.

usage: scripts/gpu_table.py RESULTS_DIR   (what scripts/gpu_check.sh wrote)

Reads, when present:
  bench_kernels.json, bench_train.json   Google Benchmark JSON (anvil)
  pytorch_kernels.json                   bench/pytorch/kernels.py (same layout)
  pytorch.jsonl                          one JSON object per line (PyTorch training)

Rows are matched by name: a Google Benchmark name without its "BM_" prefix
and run options ("/iterations:3", "/real_time"), its arguments joined by "_",
equals the PyTorch object's "benchmark" (both lower case, other characters
as "_"): BM_softmax/4096/real_time meets "softmax_4096". A PyTorch kernel script joins the table by printing
{"benchmark": "<name>", ...} with one of the metrics below; the first metric
both sides have is compared.
"""
import json
import math
import os
import re
import sys

# (key, label, higher is better). Google Benchmark counters and PyTorch keys
# share these names; "time_s" is filled from real_time for anvil.
METRICS = [
    ("samples_per_second", "samples/s", True),
    ("tokens_per_second", "tokens/s", True),
    ("TFLOP/s", "TFLOP/s", True),
    ("GB/s", "GB/s", True),
    ("bytes_per_second", "B/s", True),
    ("items_per_second", "items/s", True),
    ("ns_per_alloc_free", "ns/alloc+free", False),
    ("us_per_op", "us/op", False),
    ("epoch_seconds", "s/epoch", False),
    ("step_seconds", "s/step", False),
    ("time_s", "time (s)", False),
]

UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def key(name: str) -> str:
    """BM_softmax/4096/real_time -> softmax_4096 (run options dropped)."""
    name = re.sub(r"^BM_", "", name)
    parts = [p for p in name.split("/")
             if ":" not in p and p not in ("real_time", "process_time", "manual_time")]
    return re.sub(r"[^0-9a-z]+", "_", "_".join(parts).lower()).strip("_")


def read_google_benchmark(path: str) -> dict:
    rows = {}
    if not os.path.exists(path):
        return rows
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        print(f"(could not read {path}: {e})", file=sys.stderr)
        return rows
    for b in data.get("benchmarks", []):
        # With repetitions, keep the median; otherwise the single run.
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        if b.get("error_occurred"):
            rows[key(b["name"])] = {"name": b["name"], "error": b.get("error_message", "error")}
            continue
        row = {"name": b.get("run_name", b["name"])}
        for k, v in b.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                row[k] = v
        if "real_time" in b:
            row["time_s"] = b["real_time"] * UNIT_SECONDS.get(b.get("time_unit", "ns"), 1e-9)
        if "step_time" in row:
            row["step_seconds"] = row["step_time"]
        rows[key(row["name"])] = row
    return rows


def read_jsonl(path: str) -> dict:
    rows = {}
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "benchmark" in obj:
                rows[key(obj["benchmark"])] = obj
    return rows


def fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:.2f}G"
    if a >= 1e6:
        return f"{v / 1e6:.2f}M"
    if a >= 1e3:
        return f"{v:,.0f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


# Rows that time one path of an op (bench/cuda/attention.cpp: /cudnn, /flash,
# /no_tensor_cores) sit beside PyTorch's row for the op.
PATH_SUFFIXES = ("_cudnn", "_flash", "_no_tensor_cores")


def match(anvil_key: str, pytorch: dict):
    if anvil_key in pytorch:
        return pytorch[anvil_key]
    for suffix in PATH_SUFFIXES:
        if anvil_key.endswith(suffix):
            return pytorch.get(anvil_key[: -len(suffix)])
    return None


def table(title: str, anvil: dict, pytorch: dict, used: set) -> list:
    if not anvil:
        return []
    lines = [f"### {title}", "", "| benchmark | metric | anvil | pytorch | anvil/pytorch |", "| --- | --- | ---: | ---: | ---: |"]
    for k, row in anvil.items():
        if "error" in row:
            lines.append(f"| {row['name']} | error | {row['error'][:60]} | | |")
            continue
        other = match(k, pytorch)
        if other is not None:
            used.add(key(other["benchmark"]))
        metric = None
        for m, label, higher in METRICS:
            if m in row and (other is None or m in other):
                metric = (m, label, higher)
                break
        if metric is None:
            continue
        m, label, higher = metric
        a = row[m]
        p = other.get(m) if other else None
        ratio = ""
        if isinstance(p, (int, float)) and p:
            r = a / p if higher else p / a
            ratio = f"{r:.2f}x"
        lines.append(f"| {row['name']} | {label} | {fmt(a)} | {fmt(p)} | {ratio} |")
    return lines + [""]


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    d = sys.argv[1]
    pytorch = read_jsonl(os.path.join(d, "pytorch.jsonl"))
    for k, row in read_google_benchmark(os.path.join(d, "pytorch_kernels.json")).items():
        row.setdefault("benchmark", row["name"])
        pytorch[k] = row
    used = set()
    out = ["## anvil vs PyTorch on the GPU", "", "anvil/pytorch > 1: anvil is faster.", ""]
    out += table("kernels", read_google_benchmark(os.path.join(d, "bench_kernels.json")), pytorch, used)
    out += table("training", read_google_benchmark(os.path.join(d, "bench_train.json")), pytorch, used)
    alone = [v for k, v in pytorch.items() if k not in used]
    if alone:
        out += ["### PyTorch only (no anvil row of that name)", ""]
        for v in alone:
            metric = next(((m, label) for m, label, _ in METRICS if m in v), None)
            out.append(f"- {v['benchmark']}: " + (f"{fmt(v[metric[0]])} {metric[1]}" if metric else json.dumps(v)[:120]))
        out.append("")
    if len(out) == 4:
        out.append("(no results found in " + d + ")")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
