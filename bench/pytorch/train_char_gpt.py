"""Training throughput of the char_gpt sample's GPT in PyTorch eager.

The PyTorch side of bench/train/char_gpt.cpp: the same model
(samples/models.h: token + position embeddings, pre-LN transformer blocks
with causal self-attention and a tanh-GELU MLP, a final LayerNorm, a linear
head; GPT-2's N(0, 0.02) init of every 2-D weight), char_gpt's defaults
(block 64, 4 layers, 128-wide embeddings, 4 heads, dropout 0.1, batch 32),
cross-entropy over every position, AdamW (lr 1e-3, weight decay 0.1) with
gradients clipped to norm 1, 20 steps per timed iteration. Prints tokens per
second and the seconds one of the sample's epochs (200 steps) would take.

    python3 bench/pytorch/train_char_gpt.py
    python3 bench/pytorch/train_char_gpt.py --device cuda

The batches are random windows of Debian's fortunes when present (whose 114
distinct bytes are the vocabulary), else random tokens of that vocabulary.
"""

import argparse
import math
import os

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from common import add_common_args, report, setup, time_training

FORTUNES_DIR = "/usr/share/games/fortunes"
FORTUNES_VOCAB = 114  # distinct bytes of Debian's fortunes: the vocabulary without the corpus
STEPS_PER_EPOCH = 200  # char_gpt's --steps default


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float):
        super().__init__()
        self.n_head, self.dropout = n_head, dropout
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (p.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
                   for p in self.qkv(x).chunk(3, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        y = y.transpose(1, 2).reshape(b, t, c)
        return F.dropout(self.proj(y), self.dropout, self.training)


class TransformerBlock(nn.Module):
    def __init__(self, n_embd: int, n_head: int, dropout: float):
        super().__init__()
        self.ln1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.ln2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    def __init__(self, vocab: int, block: int, n_embd: int, n_head: int, n_layer: int, dropout: float):
        super().__init__()
        self.block = block
        self.tok = nn.Embedding(vocab, n_embd)
        self.pos = nn.Embedding(block, n_embd)
        self.blocks = nn.ModuleList(TransformerBlock(n_embd, n_head, dropout) for _ in range(n_layer))
        self.ln = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab)
        for name, p in self.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        t = tokens.size(1)
        assert t <= self.block, f"Gpt: sequence of {t} tokens is longer than the block size {self.block}"
        x = self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def read_corpus(path: str) -> bytes:
    """A file, or every file without an extension in a folder, in name order (as char_gpt reads it)."""
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path)
                       if os.path.isfile(os.path.join(path, n)) and not os.path.splitext(n)[1])
        return b"".join(open(os.path.join(path, n), "rb").read() for n in names)
    with open(path, "rb") as f:
        return f.read()


def training_batches(text_path: str, steps: int, batch_size: int, block: int, seed: int, device: torch.device):
    """(vocab, `steps` batches of (tokens [B, T], next tokens [B, T]) int64 on the device)."""
    rng = np.random.default_rng(seed)
    if os.path.exists(text_path):
        vocab, ids = np.unique(np.frombuffer(read_corpus(text_path), dtype=np.uint8), return_inverse=True)
        ids = ids.astype(np.int64)
        # Windows starting in the first 90% of the text, as the sample's training split.
        windows = (len(ids) - block) * 9 // 10 - block
        starts = rng.permutation(windows)[:steps * batch_size]
        tokens = torch.from_numpy(np.stack([ids[s:s + block + 1] for s in starts]))
        vocab_size, source = len(vocab), f"random windows of {text_path}"
    else:
        vocab_size, source = FORTUNES_VOCAB, f"random tokens (no text at {text_path})"
        tokens = torch.randint(0, vocab_size, (steps * batch_size, block + 1))
    print(f"batches: {steps} x {batch_size} x {block} tokens, vocabulary {vocab_size}, {source}")
    batches = [(w[:, :-1].contiguous().to(device), w[:, 1:].contiguous().to(device))
               for w in tokens.split(batch_size)]
    return vocab_size, batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", default=FORTUNES_DIR, help="a text file, or a folder of text files")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--block", type=int, default=64, help="context length in bytes")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--embd", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--dropout", type=float, default=0.1)
    add_common_args(parser, steps=20, iterations=0)
    args = parser.parse_args()
    device = setup(args)

    vocab, batches = training_batches(args.text, args.steps, args.batch_size, args.block, args.seed, device)
    torch.manual_seed(args.seed)
    gpt = Gpt(vocab, args.block, args.embd, args.heads, args.layers, args.dropout).to(device).train()
    optimizer = torch.optim.AdamW(gpt.parameters(), lr=1e-3, weight_decay=0.1)
    print(f"model: {sum(p.numel() for p in gpt.parameters()):,} parameters "
          f"(uniform-guess loss {math.log(vocab):.2f})")

    def step(batch):
        tokens, targets = batch
        logits = gpt(tokens).float()
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(gpt.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    iterations = args.iterations or 3
    seconds = time_training(step, batches, iterations)
    report(f"train_char_gpt_{args.layers}x{args.embd}", device, len(batches), iterations, seconds,
           args.batch_size * args.block, "tokens", STEPS_PER_EPOCH)


if __name__ == "__main__":
    main()
