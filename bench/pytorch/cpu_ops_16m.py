"""PyTorch (eager) side of bench_cpu's issue-18 op set (bench/cpu/memory_bound_16m.cpp):
the same names, shapes and byte counts at 16M float32 elements, beside a memcpy
of the same size measured in the same process.

  BM16M_copy/<clone|float32_to_bfloat16|...>  x.clone() and the casts to and from bfloat16, float16
  BM16M_binary/<add|mul|add_>              a + b, a * b, a.add_(b)
  BM16M_fwd/<op>, BM16M_fwd_bwd/<op>       exp expm1 log log1p tanh sigmoid erf gelu_erf
                                           gelu_tanh silu softplus relu, on 16M elements
  BM16M_rows_fwd[_bwd]/<op>/cols:<n>       softmax log_softmax layer_norm rms_norm over rows of 64, 1024, 4096
  BM16M_reduce/<op>/<last_dim|first_dim|all>  sum mean amax var of a [16384, 1024] tensor
  BM_memcpy_all_threads/elems:16777216     a 64 MB copy (read + write bytes), the bandwidth yardstick

Bytes are the least each op must move, as bench_cpu counts them. Timing as
Google Benchmark's: one warm-up call, then calls until --min-time seconds. Run
it with MALLOC_MMAP_MAX_=0 (bench/compare_cpu_ops.py does) so glibc keeps freed
64 MB buffers instead of returning them to the kernel and page-faulting them
back on the next call, which would charge PyTorch for its allocator, not its kernels.

Usage:  MALLOC_MMAP_MAX_=0 python3 bench/pytorch/cpu_ops_16m.py [--threads 2] [--min-time 0.5] [--filter REGEX]
Prints one JSON line per benchmark: {"benchmark", "framework", "torch", "threads", "bytes_per_second"}.
"""

import argparse
import json
import re
import time

import torch
import torch.nn.functional as F

ELEMS = 16 * 1024 * 1024
FLOAT_BYTES = 4
ROW_WIDTH = 1024  # the reductions' [16384, 1024]

UNARY = {
    "exp": (torch.exp, False), "expm1": (torch.expm1, False), "log": (torch.log, True),
    "log1p": (torch.log1p, True), "tanh": (torch.tanh, False), "sigmoid": (torch.sigmoid, False),
    "erf": (torch.erf, False), "gelu_erf": (lambda x: F.gelu(x), False),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), False), "silu": (F.silu, False),
    "softplus": (F.softplus, False), "relu": (torch.relu, False),
}
# (fn(x, w, b), parameter bytes per column read once per call)
ROWS = {
    "softmax": (lambda x, w, b: torch.softmax(x, -1), 0),
    "log_softmax": (lambda x, w, b: torch.log_softmax(x, -1), 0),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b), 2),
    "rms_norm": (lambda x, w, b: F.rms_norm(x, (x.shape[-1],), w), 1),
}
REDUCE = {
    "sum": lambda x, d: torch.sum(x, d) if d is not None else torch.sum(x),
    "mean": lambda x, d: torch.mean(x, d) if d is not None else torch.mean(x),
    "amax": lambda x, d: torch.amax(x, d) if d is not None else torch.amax(x),
    "var": lambda x, d: torch.var(x, d) if d is not None else torch.var(x),
}


def rate(fn, min_time: float) -> float:
    """Calls per second of fn(), timed as Google Benchmark times a benchmark."""
    fn()
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        seconds = time.perf_counter() - start
        if seconds >= min_time and calls >= 3:
            return calls / seconds


def benchmarks():
    """(name, bytes per call, make) where make() returns the timed callable."""
    def unary(fn, positive, backward):
        def make():
            torch.manual_seed(0)
            x = torch.randn(ELEMS)
            x = x.abs() if positive else x
            if not backward:
                return lambda: fn(x)
            x.requires_grad_()
            dy = torch.randn(ELEMS)

            def step():
                fn(x).backward(dy)
                x.grad = None
            return step
        return make

    def rows(fn, cols, backward):
        def make():
            torch.manual_seed(0)
            x, w, b = torch.randn(ELEMS // cols, cols), torch.randn(cols), torch.randn(cols)
            if not backward:
                return lambda: fn(x, w, b)
            x.requires_grad_()
            dy = torch.randn(ELEMS // cols, cols)

            def step():
                fn(x, w, b).backward(dy)
                x.grad = None
            return step
        return make

    def reduce(fn, dim):
        def make():
            torch.manual_seed(0)
            x = torch.randn(ELEMS // ROW_WIDTH, ROW_WIDTH)
            return lambda: fn(x, dim)
        return make

    def copy(src_dtype, dst_dtype):
        def make():
            torch.manual_seed(0)
            x = torch.randn(ELEMS).to(src_dtype)
            return (lambda: x.clone()) if src_dtype == dst_dtype else (lambda: x.to(dst_dtype))
        return make

    def binary(name):
        def make():
            torch.manual_seed(0)
            a, b = torch.randn(ELEMS), torch.randn(ELEMS)
            return {"add": lambda: a + b, "mul": lambda: a * b, "add_": lambda: a.add_(b)}[name]
        return make

    def memcpy():
        src, dst = torch.randn(ELEMS), torch.empty(ELEMS)
        return lambda: dst.copy_(src)

    yield "BM_memcpy_all_threads/elems:16777216", 2.0 * ELEMS * FLOAT_BYTES, memcpy
    f32, bf16, f16 = torch.float32, torch.bfloat16, torch.float16
    for name, src, dst in (("clone", f32, f32), ("float32_to_bfloat16", f32, bf16), ("bfloat16_to_float32", bf16, f32),
                           ("float32_to_float16", f32, f16), ("float16_to_float32", f16, f32)):
        yield f"BM16M_copy/{name}", 1.0 * ELEMS * (src.itemsize + dst.itemsize), copy(src, dst)
    for name in ("add", "mul", "add_"):
        yield f"BM16M_binary/{name}", 3.0 * ELEMS * FLOAT_BYTES, binary(name)
    for name, (fn, positive) in UNARY.items():
        yield f"BM16M_fwd/{name}", 2.0 * ELEMS * FLOAT_BYTES, unary(fn, positive, False)
        yield f"BM16M_fwd_bwd/{name}", 5.0 * ELEMS * FLOAT_BYTES, unary(fn, positive, True)
    for cols in (64, 1024, 4096):
        for name, (fn, param_bytes) in ROWS.items():
            yield (f"BM16M_rows_fwd/{name}/cols:{cols}", (2.0 * ELEMS + param_bytes * cols) * FLOAT_BYTES,
                   rows(fn, cols, False))
            yield f"BM16M_rows_fwd_bwd/{name}/cols:{cols}", 5.0 * ELEMS * FLOAT_BYTES, rows(fn, cols, True)
    for name, fn in REDUCE.items():
        for where, dim in (("last_dim", -1), ("first_dim", 0), ("all", None)):
            yield f"BM16M_reduce/{name}/{where}", 1.0 * ELEMS * FLOAT_BYTES, reduce(fn, dim)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--filter", default="", help="only benchmarks whose name matches this regex")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pattern = re.compile(args.filter)
    for name, bytes_per_call, make in benchmarks():
        if not pattern.search(name):
            continue
        bytes_per_second = bytes_per_call * rate(make(), args.min_time)
        print(json.dumps({"benchmark": name, "framework": "pytorch", "torch": torch.__version__,
                          "threads": torch.get_num_threads(), "bytes_per_second": round(bytes_per_second)}),
              flush=True)


if __name__ == "__main__":
    main()
