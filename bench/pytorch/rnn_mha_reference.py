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
    mha_bias_kv.*   nn.MultiheadAttention(16, 4, add_bias_kv=True) weights (bias_k, bias_v [1, 1, 16]), sequence-first
    mha_bias_kv.query / .key / .value, .attn_mask (float [5, 7], added)
    mha_bias_kv.out, .weights          forward(q, k, v, attn_mask=attn_mask) (weights [2, 5, 8])
    mha_both.*      nn.MultiheadAttention(16, 4, batch_first=True, add_bias_kv=True, add_zero_attn=True) weights
    mha_both.query / .key / .value, .key_padding_mask, .attn_mask (uint8, 1 = may not attend)
    mha_both.out, .weights             forward(..., average_attn_weights=False) (weights [2, 4, 5, 9])
    mha_both.fused_out                 the same with need_weights=False
    mha_zero.*      nn.MultiheadAttention(16, 4, batch_first=True, add_zero_attn=True, kdim=10, vdim=12) weights
    mha_zero.query / .key / .value, .key_padding_mask (uint8), mha_zero.out, .weights

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

        # add_bias_kv / add_zero_attn (after the modules above, so their values stay as they were).
        mha = torch.nn.MultiheadAttention(16, 4, add_bias_kv=True).eval()
        tensors.update(prefixed("mha_bias_kv", mha))
        q, k, v = torch.randn(5, 2, 16), torch.randn(7, 2, 16), torch.randn(7, 2, 16)
        attn_mask = torch.randn(5, 7)
        out, weights = mha(q, k, v, attn_mask=attn_mask)
        tensors.update({"mha_bias_kv.query": q, "mha_bias_kv.key": k, "mha_bias_kv.value": v,
                        "mha_bias_kv.attn_mask": attn_mask, "mha_bias_kv.out": out, "mha_bias_kv.weights": weights})

        mha = torch.nn.MultiheadAttention(16, 4, batch_first=True, add_bias_kv=True, add_zero_attn=True).eval()
        tensors.update(prefixed("mha_both", mha))
        q, k, v = torch.randn(2, 5, 16), torch.randn(2, 7, 16), torch.randn(2, 7, 16)
        padding = torch.zeros(2, 7, dtype=torch.bool)
        padding[0, 4:] = True
        padding[1, :2] = True
        attn_mask = torch.rand(5, 7) < 0.3  # True: may not attend; the appended keys keep every row open
        out, weights = mha(q, k, v, key_padding_mask=padding, attn_mask=attn_mask, average_attn_weights=False)
        fused_out, _ = mha(q, k, v, key_padding_mask=padding, attn_mask=attn_mask, need_weights=False)
        tensors.update({"mha_both.query": q, "mha_both.key": k, "mha_both.value": v,
                        "mha_both.key_padding_mask": padding.to(torch.uint8),
                        "mha_both.attn_mask": attn_mask.to(torch.uint8), "mha_both.out": out,
                        "mha_both.weights": weights, "mha_both.fused_out": fused_out})

        mha = torch.nn.MultiheadAttention(16, 4, batch_first=True, add_zero_attn=True, kdim=10, vdim=12).eval()
        tensors.update(prefixed("mha_zero", mha))
        q, k, v = torch.randn(2, 5, 16), torch.randn(2, 6, 10), torch.randn(2, 6, 12)
        padding = torch.zeros(2, 6, dtype=torch.bool)
        padding[1, 3:] = True
        out, weights = mha(q, k, v, key_padding_mask=padding)
        tensors.update({"mha_zero.query": q, "mha_zero.key": k, "mha_zero.value": v,
                        "mha_zero.key_padding_mask": padding.to(torch.uint8), "mha_zero.out": out,
                        "mha_zero.weights": weights})

    metadata = {"generator": "bench/pytorch/rnn_mha_reference.py",
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "torch": torch.__version__, "safetensors": safetensors.__version__,
                "python": platform.python_version(), "device": "cpu", "dtype": "float32"}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: t.contiguous() for k, t in tensors.items()}, str(OUT), metadata=metadata)
    print(f"wrote {OUT}: {len(tensors)} tensors")


if __name__ == "__main__":
    main()
