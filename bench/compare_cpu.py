"""anvil next to PyTorch eager on this machine's CPU, alternating in one run:
SGEMM 256-4096 (bench_cpu's BM_matmul_square against bench/pytorch/cpu_gemm.py),
the three training workloads (bench_train against bench/pytorch/train_*.py) and
all-MiniLM-L6-v2 sentence embedding (bench_train's BM_minilm_encode_fortunes
against bench/pytorch/minilm_speed.py, sentence-transformers).

Each round runs every configuration once, in turn, so slow drift of the
machine touches all of them alike; the table gives each one's range over the
rounds. anvil runs as built (oneDNN GEMM and conv, kernels/cpu/README.md) and,
with --openblas-alone, as it ran before: float32 GEMM and conv on OpenBLAS
without the core guard, here told to use its generic Prescott kernels (what
it picks by itself on a CPU model it does not know).

Usage (repository root, after scripts/build.sh build):
  OMP_WAIT_POLICY=PASSIVE python3 bench/compare_cpu.py --python /path/to/python-with-torch \
      [--rounds 2] [--openblas-alone] [--out bench/results/<date>-cpu-vs-pytorch.md]
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPENBLAS_ALONE = {"ANVIL_CPU_GEMM": "openblas", "ANVIL_CPU_CONV": "im2col", "ANVIL_OPENBLAS_GUARD": "off",
                  "OPENBLAS_CORETYPE": "Prescott"}
# Rows of the table: (label, anvil benchmark name prefix, anvil counter, PyTorch name, PyTorch field).
ROWS = [(f"SGEMM {n} (GFLOP/s)", f"BM_matmul_square/n:{n}/", "FLOP/s", f"BM_matmul_square/n:{n}", "gflops")
        for n in (256, 512, 1024, 2048, 4096)] + [
    ("Fashion-MNIST MLP, bs 64 (samples/s)", "BM_train_fashion_mnist_mlp", "samples_per_second",
     "train_fashion_mnist_mlp", "samples_per_second"),
    ("Fashion-MNIST CNN, bs 64 (samples/s)", "BM_train_fashion_mnist_cnn", "samples_per_second",
     "train_fashion_mnist_cnn", "samples_per_second"),
    ("char_gpt (tokens/s)", "BM_train_char_gpt", "tokens_per_second", "train_char_gpt_4x128", "tokens_per_second"),
    ("all-MiniLM-L6-v2, 256 fortunes, bs 64 (sentences/s)", "BM_minilm_encode_fortunes", "sentences_per_second",
     "minilm_encode_fortunes", "sentences_per_second"),
]


def run(cmd, env_extra=None):
    env = dict(os.environ, **(env_extra or {}))
    out = subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return out.stdout, out.stderr


def anvil_results(env_extra):
    results = {}
    for binary, flt in (("bench_cpu", "BM_matmul_square"), ("bench_train", ".")):
        stdout, stderr = run([os.path.join(ROOT, "build/bin", binary), f"--benchmark_filter={flt}",
                              "--benchmark_format=json"], env_extra)
        report = json.loads(stdout)
        for b in report["benchmarks"]:
            for _, prefix, counter, _, _ in ROWS:
                if b["name"].startswith(prefix) and counter in b:
                    value = b[counter] / 1e9 if counter == "FLOP/s" else b[counter]
                    results[prefix] = value
        results["context"] = report["context"]
    return results


def pytorch_results(python):
    results = {}
    for script in ("cpu_gemm.py", "train_fashion_mnist.py", "train_char_gpt.py", "minilm_speed.py"):
        args = [python, os.path.join(ROOT, "bench/pytorch", script)] + ([] if script == "cpu_gemm.py" else
                                                                          ["--device", "cpu"])
        stdout, _ = run(args)
        for line in stdout.splitlines():
            if not line.startswith("{"):
                continue
            rec = json.loads(line)
            results["torch"] = rec.get("torch")
            for _, prefix, _, torch_name, field in ROWS:
                if rec["benchmark"] == torch_name:
                    results[prefix] = rec[field]
    return results


def cpu_info():
    model, flags = "unknown", ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "unknown":
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = line.split(":", 1)[1].strip()
    return model, flags


def span(values, fmt):
    if not values:
        return "n/a"
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}-{fmt.format(hi)}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="a Python with torch and numpy")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--openblas-alone", action="store_true", help="also run anvil on OpenBLAS alone (Prescott)")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args()

    configs = [("anvil", {})] + ([("anvil, OpenBLAS alone as Prescott", OPENBLAS_ALONE)] if args.openblas_alone
                                 else []) + [("PyTorch eager", None)]
    samples = {name: [] for name, _ in configs}
    for r in range(args.rounds):
        for name, env_extra in configs:
            print(f"round {r + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
            samples[name].append(pytorch_results(args.python) if env_extra is None else anvil_results(env_extra))

    model, flags = cpu_info()
    commit = run(["git", "rev-parse", "--short", "HEAD"])[0].strip()
    anvil_context = samples["anvil"][0]["context"]
    torch_version = samples["PyTorch eager"][0].get("torch")
    lines = [f"# anvil vs PyTorch eager on the CPU, {datetime.date.today().isoformat()}", "",
             f"- Commit `{commit}`; CPU: {model}, {os.cpu_count()} cores; Python {platform.python_version()}, "
             f"PyTorch {torch_version}.",
             f"- anvil: float32 GEMM {anvil_context.get('float32_gemm')}, conv2d {anvil_context.get('conv2d')}, "
             f"CPU ISA {anvil_context.get('cpu_isa')}.",
             f"- `OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}`; {args.rounds} rounds, "
             "each running every column once in turn; cells give the range over the rounds.",
             f"- Run: `python3 bench/compare_cpu.py --rounds {args.rounds}"
             f"{' --openblas-alone' if args.openblas_alone else ''}`.", "",
             "| workload | " + " | ".join(name for name, _ in configs) + " | anvil / PyTorch |",
             "|---|" + "---|" * (len(configs) + 1)]
    for label, prefix, counter, _, _ in ROWS:
        cells = []
        for name, _ in configs:
            values = [s[prefix] for s in samples[name] if prefix in s]
            cells.append(span(values, "{:.1f}" if counter == "FLOP/s" else "{:,.0f}"))
        ours = [s[prefix] for s in samples["anvil"] if prefix in s]
        theirs = [s[prefix] for s in samples["PyTorch eager"] if prefix in s]
        ratio = f"{sum(ours) / len(ours) / (sum(theirs) / len(theirs)):.2f}x" if ours and theirs else "n/a"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")
    lines += ["", f"CPU flags: `{flags}`", ""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
