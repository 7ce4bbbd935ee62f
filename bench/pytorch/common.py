"""Shared timing and reporting for the PyTorch training benchmarks.

The loop mirrors bench/train/train_bench.h so the two sides measure the same
thing: a few untimed warm-up steps, then `iterations` timed runs of `steps`
optimizer steps over batches already on the device; each run ends by reading
the loss (which waits for the device). The reported rate is all items over
all timed seconds, the mean that Google Benchmark reports for a fixed number
of iterations.
"""

import argparse
import json
import time

import torch

WARMUP_STEPS = 3  # as kWarmupSteps: the first step allocates the optimizer's state


def add_common_args(parser: argparse.ArgumentParser, steps: int, iterations: int) -> None:
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (default: cpu)")
    parser.add_argument("--steps", type=int, default=steps, help="optimizer steps per timed iteration")
    parser.add_argument("--iterations", type=int, default=iterations, help="timed iterations (0: as many as bench_train runs)")
    parser.add_argument("--threads", type=int, default=0,
                        help="CPU intra-op threads (default: PyTorch's choice, one per core)")
    parser.add_argument("--seed", type=int, default=0)


def setup(args: argparse.Namespace) -> torch.device:
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: CUDA is not available to this PyTorch")
    return device


def time_training(step, batches, iterations: int) -> float:
    """Seconds for `iterations` passes over `batches`, one step(batch) each.

    step(batch) does forward, backward and the optimizer step and returns the
    loss tensor.
    """
    for i in range(WARMUP_STEPS):
        loss = step(batches[i % len(batches)])
    float(loss.item())
    seconds = 0.0
    for _ in range(iterations):
        start = time.perf_counter()
        loss = None
        for batch in batches:
            loss = step(batch)
        float(loss.item())  # waits for the device, as logging the loss would
        seconds += time.perf_counter() - start
    return seconds


def report(name: str, device: torch.device, steps: int, iterations: int, seconds: float,
           items_per_step: int, item_name: str, steps_per_epoch: int) -> None:
    """Prints one readable line and one JSON line (the last line) of results."""
    total_steps = steps * iterations
    rate = total_steps * items_per_step / seconds
    step_seconds = seconds / total_steps
    epoch_seconds = step_seconds * steps_per_epoch
    threads = torch.get_num_threads() if device.type == "cpu" else None
    print(f"{name} on {device} (PyTorch {torch.__version__}, eager{f', {threads} threads' if threads else ''}): "
          f"{rate:,.1f} {item_name}/s, {step_seconds * 1e3:.2f} ms per step, "
          f"{epoch_seconds:.1f} s per epoch of {steps_per_epoch} steps "
          f"({iterations} x {steps} timed steps)")
    print(json.dumps({"benchmark": name, "framework": "pytorch", "torch": torch.__version__,
                      "device": str(device), "threads": threads, "steps": steps, "iterations": iterations,
                      f"{item_name}_per_second": round(rate, 1), "step_seconds": step_seconds,
                      "epoch_seconds": epoch_seconds}))
