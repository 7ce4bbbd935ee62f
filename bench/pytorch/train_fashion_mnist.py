"""Training throughput of the Fashion-MNIST sample's MLP and CNN in PyTorch eager.

The PyTorch side of bench/train/fashion_mnist.cpp: the same models
(samples/models.h), batches of 64 normalised 28x28 images, cross-entropy,
AdamW (lr 1e-3, weight decay 1e-4), dropout on, 50 steps per timed
iteration. Prints samples per second and the seconds one epoch (937 steps)
would take.

    python3 bench/pytorch/train_fashion_mnist.py                      # both models, CPU
    python3 bench/pytorch/train_fashion_mnist.py --model cnn --device cuda

The batches are real training images when the dataset is present (shuffled
with NumPy, so not the very images anvil's loader picks; the speed does not
depend on which), else random data of the same shapes.
"""

import argparse
import gzip
import os

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from common import add_common_args, report, setup, time_training

DATA_DIR = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist
MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST's pixel mean and standard deviation
BATCH_SIZE = 64
STEPS_PER_EPOCH = 60000 // BATCH_SIZE  # 937: the last partial batch is dropped


def make_mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Dropout(0.1),
                         nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))


def make_cnn() -> nn.Module:
    def block(cin: int, cout: int) -> nn.Module:
        return nn.Sequential(nn.Conv2d(cin, cout, kernel_size=3, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(), nn.MaxPool2d(2))

    return nn.Sequential(block(1, 32), block(32, 64), nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
                         nn.Dropout(0.25), nn.Linear(128, 10))


MODELS = {"mlp": make_mlp, "cnn": make_cnn}


def read_idx(path: str) -> np.ndarray:
    """An MNIST-format (idx) file, gzipped or not, as a uint8 array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    dims = raw[3]  # magic: 0, 0, type (0x08 = ubyte), number of dimensions
    shape = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def find_split(data_dir: str, stem: str):
    for name in (f"{stem}.gz", stem):
        if os.path.exists(os.path.join(data_dir, name)):
            return os.path.join(data_dir, name)
    return None


def training_batches(data_dir: str, steps: int, seed: int, device: torch.device):
    """`steps` batches (images [64, 1, 28, 28] float32, labels [64] int64) on the device."""
    images_path = find_split(data_dir, "train-images-idx3-ubyte")
    labels_path = find_split(data_dir, "train-labels-idx1-ubyte")
    n = steps * BATCH_SIZE
    if images_path and labels_path:
        order = np.random.default_rng(seed).permutation(60000)[:n]
        images = read_idx(images_path)[order].astype(np.float32) / 255.0
        images = torch.from_numpy((images - MEAN) / STD).reshape(n, 1, 28, 28)
        labels = torch.from_numpy(read_idx(labels_path)[order].astype(np.int64))
        source = f"Fashion-MNIST from {data_dir}"
    else:
        images = torch.randn(n, 1, 28, 28)
        labels = torch.randint(0, 10, (n,))
        source = f"random data (no Fashion-MNIST in {data_dir})"
    print(f"batches: {steps} x {BATCH_SIZE} images, {source}")
    return [(x.to(device), y.to(device)) for x, y in zip(images.split(BATCH_SIZE), labels.split(BATCH_SIZE))]


def bench_model(name: str, batches, device: torch.device, args: argparse.Namespace) -> None:
    torch.manual_seed(args.seed)
    model = MODELS[name]().to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)

    def step(batch):
        images, labels = batch
        loss = F.cross_entropy(model(images).float(), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    # The MLP's steps are short: more iterations, as bench_train gives it.
    iterations = args.iterations if args.iterations > 0 else (20 if name == "mlp" else 3)
    seconds = time_training(step, batches, iterations)
    report(f"train_fashion_mnist_{name}", device, len(batches), iterations, seconds, BATCH_SIZE, "samples",
           STEPS_PER_EPOCH)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["mlp", "cnn", "all"], default="all")
    parser.add_argument("--data-dir", default=DATA_DIR)
    add_common_args(parser, steps=50, iterations=0)
    args = parser.parse_args()
    device = setup(args)
    batches = training_batches(args.data_dir, args.steps, args.seed, device)
    for name in (["mlp", "cnn"] if args.model == "all" else [args.model]):
        bench_model(name, batches, device, args)


if __name__ == "__main__":
    main()
