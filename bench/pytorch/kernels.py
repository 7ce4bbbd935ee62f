"""PyTorch (eager) side of build/bin/bench_kernels: the same kernels, shapes
and byte/FLOP accounting, timed the same way, printed as JSON with the same
benchmark names so the two can be matched row by row.

Timing (as bench/cuda/bench_cuda_util.h): one untimed warm-up call, then timed
iterations until --min-time seconds of device time have accumulated; each
iteration records a torch.cuda.Event, queues the op `reps` times, records a
second event and synchronizes; the time per op is the batches' total elapsed
time / (iterations * reps). (min_time counts whole batches: counting per-op
times, a 5 us op ran 40k batches of 20 and the script could not finish.)
Host-side benchmarks (alloc/, overhead/) use the host clock.

Names: anvil's Google Benchmark names carry a "/manual_time" or "/real_time"
suffix; strip it to match the names printed here.

Usage:  python3 bench/pytorch/kernels.py [--filter REGEX] [--min-time S] [--out FILE]
Without a CUDA GPU it prints a message and exits 0.
"""

import argparse
import json
import re
import sys
import time

SIZES = [1 << 20, 1 << 24, 1 << 26]  # elements: 4 MB, 64 MB, 256 MB of float32
ROW_WIDTH = 1024                      # softmax / layer_norm rows
VOCAB = 32768                         # cross_entropy classes
GEMM_SIZES = [1024, 2048, 4096]
MEM_REPS = 20
GEMM_REPS = 5
# bench/cuda/attention.cpp's shapes: (batch, heads, seq, head_dim).
ATTENTION_SHAPES = [(8, 12, 512, 64), (4, 16, 2048, 64), (2, 16, 4096, 128)]


def time_on_gpu(torch, op, reps, min_time):
    """Mean device seconds per op (CUDA events), batches of reps ops until min_time."""
    op()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    total, iterations = 0.0, 0
    while total < min_time or iterations < 3:
        start.record()
        for _ in range(reps):
            op()
        stop.record()
        stop.synchronize()
        total += start.elapsed_time(stop) * 1e-3
        iterations += 1
    return total / (iterations * reps), iterations


def copy_bandwidth_gbps(torch):
    nbytes = 256 << 20
    src = torch.ones(nbytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    best = float("inf")
    dst.copy_(src)
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(20):
        start.record()
        dst.copy_(src)
        stop.record()
        stop.synchronize()
        best = min(best, start.elapsed_time(stop) * 1e-3)
    return 2.0 * nbytes / best / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--filter", default="", help="run only benchmarks whose name matches this regex; a leading - runs those that do not, as Google Benchmark's --benchmark_filter does")
    parser.add_argument("--min-time", type=float, default=0.2, help="device seconds per benchmark (default 0.2)")
    parser.add_argument("--out", default="", help="also write the JSON here")
    args = parser.parse_args()

    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("kernels.py: PyTorch is not installed; nothing to benchmark (exit 0).")
        return 0
    if not torch.cuda.is_available():
        print("kernels.py: no CUDA GPU is visible to PyTorch; nothing to benchmark (exit 0).")
        return 0

    torch.backends.cuda.matmul.allow_tf32 = False  # float32 is true FP32, as in anvil and cuBLAS default
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    dev = torch.device("cuda")
    class NameFilter:  # Google Benchmark's rule: "-REGEX" keeps the names REGEX does not match
        def __init__(self, spec):
            self.negated = spec.startswith("-")
            self.regex = re.compile(spec[1:] if self.negated else spec)

        def search(self, name):
            return (self.regex.search(name) is None) == self.negated

    pattern = NameFilter(args.filter)
    results = []
    copy_gbps = copy_bandwidth_gbps(torch)
    print(f"device copy bandwidth: {copy_gbps:.1f} GB/s", file=sys.stderr)

    def run_mem(name, op, nbytes):
        if not pattern.search(name):
            return
        seconds, iterations = time_on_gpu(torch, op, MEM_REPS, args.min_time)
        gbps = nbytes / seconds / 1e9
        results.append({"name": name, "iterations": iterations, "real_time": seconds * 1e6, "time_unit": "us",
                        "GB/s": gbps, "pct_copy_bw": 100.0 * gbps / copy_gbps})
        print(f"{name:45s} {seconds * 1e6:10.2f} us  {gbps:8.1f} GB/s  {100 * gbps / copy_gbps:5.1f}% of copy",
              file=sys.stderr)

    def mem(op, n, dtype="f32"):
        return f"mem/{op}/{dtype}/n={n}"

    for n in SIZES:
        src, dst = torch.randn(n, device=dev), torch.empty(n, device=dev)
        run_mem(mem("copy_d2d", n), lambda: dst.copy_(src), 2.0 * n * 4)
        run_mem(mem("clone", n), lambda: src.clone(), 2.0 * n * 4)
        del src, dst
    for n in SIZES:
        a, b = torch.randn(n, device=dev), torch.randn(n, device=dev)
        run_mem(mem("add", n), lambda: torch.add(a, b), 3.0 * n * 4)
        run_mem(mem("mul", n), lambda: torch.mul(a, b), 3.0 * n * 4)
        run_mem(mem("gelu", n), lambda: F.gelu(a), 2.0 * n * 4)
        run_mem(mem("cast_to_bf16", n), lambda: a.to(torch.bfloat16), 6.0 * n)
        ah, bh = a.to(torch.bfloat16), b.to(torch.bfloat16)
        run_mem(mem("add", n, "bf16"), lambda: torch.add(ah, bh), 3.0 * n * 2)
        del a, b, ah, bh
    for n in SIZES:
        x = torch.randn(n // ROW_WIDTH, ROW_WIDTH, device=dev)
        w, bias = torch.randn(ROW_WIDTH, device=dev), torch.randn(ROW_WIDTH, device=dev)
        run_mem(mem("softmax", n), lambda: torch.softmax(x, -1), 2.0 * n * 4)
        run_mem(mem("layer_norm", n), lambda: F.layer_norm(x, (ROW_WIDTH,), w, bias), 2.0 * n * 4)
        logits = torch.randn(n // VOCAB, VOCAB, device=dev)
        targets = torch.randint(0, VOCAB, (n // VOCAB,), device=dev)
        run_mem(mem("cross_entropy", n), lambda: F.cross_entropy(logits, targets), 1.0 * n * 4)
        del x, logits
    for n in SIZES:
        for fused, label in ((None, "adamw"), (True, "adamw_fused")):
            p = torch.randn(n, device=dev, requires_grad=True)
            p.grad = torch.randn(n, device=dev)
            opt = torch.optim.AdamW([p], lr=1e-3, weight_decay=1e-2, fused=fused)
            run_mem(mem(label, n), opt.step, 7.0 * n * 4)
            del p, opt

    for n in GEMM_SIZES:
        for dtype, short in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
            name = f"gemm/matmul/{short}/{n}"
            if not pattern.search(name):
                continue
            a = torch.rand(n, n, device=dev).to(dtype)
            b = torch.rand(n, n, device=dev).to(dtype)
            seconds, iterations = time_on_gpu(torch, lambda: torch.matmul(a, b), GEMM_REPS, args.min_time)
            tflops = 2.0 * n ** 3 / seconds / 1e12
            results.append({"name": name, "iterations": iterations, "real_time": seconds * 1e6,
                            "time_unit": "us", "TFLOP/s": tflops})
            print(f"{name:45s} {seconds * 1e6:10.2f} us  {tflops:8.1f} TFLOP/s", file=sys.stderr)

    # Attention: FLOPs as bench/cuda/attention.cpp counts them (forward 4*B*H*S*S*E,
    # halved when causal; forward + backward 3.5x that). PyTorch picks its own
    # SDPA backend (flash, cuDNN or memory-efficient); it is printed beside.
    for (batch, heads, seq, dim) in ATTENTION_SHAPES:
        for dtype, short, causals in ((torch.bfloat16, "bf16", (False, True)), (torch.float16, "f16", (False, True)),
                                      (torch.float32, "f32", (False,))):
            for causal in causals:
                shape_name = f"b{batch}h{heads}s{seq}d{dim}" + ("/causal" if causal else "")
                fwd_flops = 4.0 * batch * heads * seq * seq * dim / (2 if causal else 1)
                q, k, v = (torch.randn(batch, heads, seq, dim, device=dev, dtype=dtype) for _ in range(3))
                grad_out = torch.randn_like(q)
                def forward():
                    with torch.no_grad():
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
                def forward_backward():
                    F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal).backward(grad_out)
                    qg.grad = kg.grad = vg.grad = None
                for label, op, flops, reps in (("fwd", forward, fwd_flops, 3),
                                               ("fwdbwd", forward_backward, 3.5 * fwd_flops, 2)):
                    name = f"attn/{label}/{short}/{shape_name}"
                    if not pattern.search(name):
                        continue
                    seconds, iterations = time_on_gpu(torch, op, reps, min(args.min_time, 0.1))
                    tflops = flops / seconds / 1e12
                    results.append({"name": name, "iterations": iterations, "real_time": seconds * 1e6,
                                    "time_unit": "us", "TFLOP/s": tflops})
                    print(f"{name:45s} {seconds * 1e6:10.2f} us  {tflops:8.1f} TFLOP/s", file=sys.stderr)
                del q, k, v, qg, kg, vg, grad_out

    for nbytes in (512, 1 << 20, 64 << 20):
        name = f"alloc/cached/bytes={nbytes}"
        if not pattern.search(name):
            continue
        del_me = torch.empty(nbytes, dtype=torch.uint8, device=dev)  # first one may cudaMalloc
        del del_me
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.min_time:
            for _ in range(1000):
                t = torch.empty(nbytes, dtype=torch.uint8, device=dev)
                del t
            count += 1000
        ns = (time.perf_counter() - start) / count * 1e9
        results.append({"name": name, "iterations": count, "real_time": ns, "time_unit": "ns",
                        "ns_per_alloc_free": ns})
        print(f"{name:45s} {ns:10.1f} ns per empty+free (includes Python)", file=sys.stderr)

    name = "overhead/add_1elem"
    if pattern.search(name):
        a, b = torch.randn(1, device=dev), torch.randn(1, device=dev)
        torch.add(a, b)
        torch.cuda.synchronize()
        calls, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.min_time:
            for _ in range(1000):
                torch.add(a, b)
            torch.cuda.synchronize()
            calls += 1000
        us = (time.perf_counter() - start) / calls * 1e6
        results.append({"name": name, "iterations": calls, "real_time": us, "time_unit": "us", "us_per_op": us})
        print(f"{name:45s} {us:10.2f} us per op (includes Python)", file=sys.stderr)

    props = torch.cuda.get_device_properties(0)
    doc = {"context": {"framework": "pytorch", "torch": torch.__version__, "device": props.name,
                       "compute_capability": f"{props.major}.{props.minor}",
                       "copy_bandwidth_gbps": copy_gbps},
           "benchmarks": results}
    text = json.dumps(doc, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
