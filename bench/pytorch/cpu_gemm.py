"""PyTorch (eager) side of bench_cpu's BM_matmul_square on the CPU: C = A @ B
for square float32 matrices, 2*n^3 FLOPs each, timed as Google Benchmark
times it (one warm-up call, then repeated calls until --min-time seconds,
wall clock). Prints one readable line and one JSON line per size.

Usage:  python3 bench/pytorch/cpu_gemm.py [--sizes 256 512 ...] [--threads N] [--min-time S]
"""

import argparse
import json
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096])
    parser.add_argument("--threads", type=int, default=0, help="intra-op threads (default: one per core)")
    parser.add_argument("--min-time", type=float, default=0.5)
    args = parser.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for n in args.sizes:
        a, b = torch.randn(n, n), torch.randn(n, n)
        torch.matmul(a, b)
        calls, start = 0, time.perf_counter()
        while True:
            torch.matmul(a, b)
            calls += 1
            seconds = time.perf_counter() - start
            if seconds >= args.min_time and calls >= 3:
                break
        gflops = 2.0 * n ** 3 * calls / seconds / 1e9
        print(f"BM_matmul_square/n:{n} on cpu (PyTorch {torch.__version__}, {torch.get_num_threads()} threads): "
              f"{gflops:.1f} GFLOP/s")
        print(json.dumps({"benchmark": f"BM_matmul_square/n:{n}", "framework": "pytorch",
                          "torch": torch.__version__, "threads": torch.get_num_threads(), "gflops": round(gflops, 1)}))


if __name__ == "__main__":
    main()
