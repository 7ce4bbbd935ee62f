"""Reference fixture for anvil's MultiheadAttention, LSTM and GRU (nn/layers/):
modules built and initialised by PyTorch, their weights under PyTorch's
state_dict names, random inputs and PyTorch's outputs, in one safetensors
file with its provenance in the metadata:

  tests/nn/layers/fixtures/pytorch_mha_rnn.safetensors
    mha.*        nn.MultiheadAttention(16, 4, batch_first=True) weights
    mha.query / mha.key / mha.value, mha.key_padding_mask (uint8, 1 = ignore)
    mha.out, mha.weights               forward(q, k, v, key_padding_mask) (weights averaged over heads)
    mha.causal_out                     forward(q, q, q, attn_mask=causal, need_weights=False)
    lstm.*       nn.LSTM(6, 8, num_layers=2, bidirectional=True, batch_first=True) weights
    lstm.input, lstm.h0, lstm.c0, lstm.out, lstm.hn, lstm.cn
    gru.*        nn.GRU(6, 8, num_layers=2, bidirectional=True, batch_first=True) weights
    gru.input, gru.h0, gru.out, gru.hn

All float32 (what users run), eval mode. tests/nn/layers/test_pytorch_fixtures.cpp
loads the weights with load_state_dict and expects the outputs to 1e-5.

    python3 bench/pytorch/rnn_mha_reference.py      (needs torch and safetensors)
"""

import datetime
import pathlib
import platform

import safetensors
import torch
from safetensors.torch import save_file

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/nn/layers/fixtures/pytorch_mha_rnn.safetensors"


def prefixed(prefix, module):
    return {f"{prefix}.{k}": v.detach().contiguous() for k, v in module.state_dict().items()}


def main():
    torch.manual_seed(20261126)
    tensors = {}
    with torch.no_grad():
        mha = torch.nn.MultiheadAttention(16, 4, batch_first=True).eval()
        tensors.update(prefixed("mha", mha))
        q, k, v = torch.randn(2, 5, 16), torch.randn(2, 7, 16), torch.randn(2, 7, 16)
        padding = torch.zeros(2, 7, dtype=torch.bool)
        padding[0, 5:] = True  # batch 0 ignores its last two keys
        padding[1, 6:] = True
        out, weights = mha(q, k, v, key_padding_mask=padding)
        causal = torch.ones(5, 5, dtype=torch.bool).triu(1)  # True: may not attend
        causal_out, _ = mha(q, q, q, attn_mask=causal, need_weights=False)
        tensors.update({"mha.query": q, "mha.key": k, "mha.value": v, "mha.key_padding_mask": padding.to(torch.uint8),
                        "mha.out": out, "mha.weights": weights, "mha.causal_out": causal_out})

        lstm = torch.nn.LSTM(6, 8, num_layers=2, bidirectional=True, batch_first=True).eval()
        tensors.update(prefixed("lstm", lstm))
        x, h0, c0 = torch.randn(3, 4, 6), torch.randn(4, 3, 8), torch.randn(4, 3, 8)
        y, (hn, cn) = lstm(x, (h0, c0))
        tensors.update({"lstm.input": x, "lstm.h0": h0, "lstm.c0": c0, "lstm.out": y, "lstm.hn": hn, "lstm.cn": cn})

        gru = torch.nn.GRU(6, 8, num_layers=2, bidirectional=True, batch_first=True).eval()
        tensors.update(prefixed("gru", gru))
        x, h0 = torch.randn(3, 4, 6), torch.randn(4, 3, 8)
        y, hn = gru(x, h0)
        tensors.update({"gru.input": x, "gru.h0": h0, "gru.out": y, "gru.hn": hn})

    metadata = {"generator": "bench/pytorch/rnn_mha_reference.py",
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "torch": torch.__version__, "safetensors": safetensors.__version__,
                "python": platform.python_version(), "device": "cpu", "dtype": "float32"}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: t.contiguous() for k, t in tensors.items()}, str(OUT), metadata=metadata)
    print(f"wrote {OUT}: {len(tensors)} tensors")


if __name__ == "__main__":
    main()
