"""PyTorch (eager) side of bench_cpu's optimizer steps (bench/cpu/optim.cpp) on the CPU:
one step over parameters of the Fashion-MNIST MLP's sizes (235k float32 in six
tensors, gradients set once), the same names, settings and byte counts.

  BM_adamw_step           AdamW lr 1e-3, weight_decay 1e-4    7 floats an element
  BM_sgd_momentum_step    SGD lr 1e-2, momentum 0.9           5
  BM_adadelta_step        Adadelta lr 1.0                     7
  BM_rmsprop_step         RMSprop lr 1e-2                     5
  BM_adagrad_step         Adagrad lr 1e-2                     5

Bytes are the least each update must move (p, g and the state read, p and the
state written), as bench_cpu counts them. PyTorch's default implementation on
CPU tensors is the per-tensor loop (foreach is its default on CUDA only);
--foreach times its multi-tensor one instead. Timing as Google Benchmark's: one
warm-up step (it allocates the state), then steps until --min-time seconds.

Usage:  python3 bench/pytorch/cpu_optim.py [--threads 2] [--min-time 0.5] [--foreach] [--filter REGEX]
Prints one readable line and one JSON line per benchmark:
{"benchmark", "framework", "torch", "threads", "foreach", "bytes_per_second"}.
"""

import argparse
import json
import re
import time

import torch

FLOAT_BYTES = 4
MLP_SHAPES = [(256, 784), (256,), (128, 256), (128,), (10, 128), (10,)]

# name -> (optimizer class, its settings, floats moved per parameter element)
BENCHMARKS = {
    "BM_adamw_step": (torch.optim.AdamW, {"lr": 1e-3, "weight_decay": 1e-4}, 7),
    "BM_sgd_momentum_step": (torch.optim.SGD, {"lr": 1e-2, "momentum": 0.9}, 5),
    "BM_adadelta_step": (torch.optim.Adadelta, {"lr": 1.0}, 7),
    "BM_rmsprop_step": (torch.optim.RMSprop, {"lr": 1e-2}, 5),
    "BM_adagrad_step": (torch.optim.Adagrad, {"lr": 1e-2}, 5),
}


def mlp_sized_parameters():
    torch.manual_seed(0)
    params = []
    for shape in MLP_SHAPES:
        p = torch.randn(shape, requires_grad=True)
        p.grad = torch.randn(shape)
        params.append(p)
    return params


def steps_per_second(opt, min_time: float) -> float:
    opt.step()
    calls, start = 0, time.perf_counter()
    while True:
        opt.step()
        calls += 1
        seconds = time.perf_counter() - start
        if seconds >= min_time and calls >= 3:
            return calls / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--foreach", action="store_true", help="PyTorch's multi-tensor (foreach) implementation")
    parser.add_argument("--filter", default="", help="only benchmarks whose name matches this regex")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pattern = re.compile(args.filter)
    for name, (optimizer, settings, floats) in BENCHMARKS.items():
        if not pattern.search(name):
            continue
        params = mlp_sized_parameters()
        opt = optimizer(params, **settings, foreach=args.foreach)
        elements = sum(p.numel() for p in params)
        bytes_per_second = floats * elements * FLOAT_BYTES * steps_per_second(opt, args.min_time)
        print(f"{name} on cpu (PyTorch {torch.__version__}, {torch.get_num_threads()} threads"
              f"{', foreach' if args.foreach else ''}): {bytes_per_second / 1e9:.2f} GB/s")
        print(json.dumps({"benchmark": name, "framework": "pytorch", "torch": torch.__version__,
                          "threads": torch.get_num_threads(), "foreach": args.foreach,
                          "bytes_per_second": round(bytes_per_second)}), flush=True)


if __name__ == "__main__":
    main()
