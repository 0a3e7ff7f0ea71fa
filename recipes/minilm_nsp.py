"""minilm-nsp (lecture 7): all-MiniLM-L6-v2 adapted for next-sentence prediction (NSP) with LoRA.

BERT's second pre-training task: given [CLS] A [SEP] B [SEP], did B follow A in the text (IsNext, label 0) or is it
a random sentence from elsewhere (NotNext, label 1)? MiniLM has no NSP head. Here it is loaded as transformers'
BertForNextSentencePrediction: its own pooler (dense + tanh on [CLS], MiniLM's weights as the start) and a new
Linear(d_model, 2). As for fill-mask, LoRA adapters on every Linear of the six blocks, the encoder's biases and
LayerNorms, the pooler and the 2-way layer are trained; the pretrained weight matrices stay frozen.

Pairs (course.bert_tasks.sentence_pairs): half consecutive sentences of a document, half a sentence followed by a
random sentence of another document of the same corpus, so that style alone does not give NotNext away. Documents:
Moby-Dick's chapters other than 10, 20, ..., 130, the chapters of Austen's six novels, the SpamAssassin e-mails
outside the classify task's held-out split and, with --story-pairs, the everyday stories of recipes.minilm_nsp_stories
on its training topics. Tests: 360 pairs each from Moby-Dick's held-out chapters, the held-out e-mails and the
stories of the held-out topics, against a rule that needs no training: IsNext when MiniLM's sentence similarity
exceeds its median over training pairs. data/checkpoints/minilm-nsp/README.md gives the two commands that made the
shipped checkpoint (without apt-get, run them with --austen-pairs 0).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from recipes import fast_path  # noqa: F401  (first: MKL's fast path, before torch loads)
from recipes.common import checkpoint_folder, cli, eval_history, load_stage, save_lora_stage

# isort: split
import torch
import torch.nn.functional as F
from transformers import AutoModel, AutoTokenizer, BertForNextSentencePrediction

from course import assets, corpora
from course.bert_tasks import sentence_pairs
from course.checkpoints import NSP_HEADS, is_next_probability, minilm_for
from scratch.l06_training import Run, hf_loss, lr_factor

MAX_TOKENS = 128
QUICK_SAMPLE = 200  # the first test pairs, re-scored by tests/test_bert.py
LECTURE_PAIRS = [
    ("I went to the store to buy some groceries.", "When I got home, I realized I forgot to buy milk."),
    ("I went to the store to buy some groceries.", "The weather was perfect for a hike in the mountains."),
]


@dataclass
class Config:
    out: Path = checkpoint_folder("minilm-nsp")
    init_from: Path | None = None  # continue from the checkpoint in this folder (model.safetensors, metrics.json)
    moby_pairs: int = 4000  # (Moby-Dick's training chapters give 4,610)
    austen_pairs: int = 12000  # (Austen's six novels give 20,861)
    email_pairs: int = 16000  # (the training e-mails give 40,604)
    story_pairs: int = 0  # pairs from the everyday stories on the training topics
    stories: Path = checkpoint_folder("minilm-nsp") / "stories.json.gz"
    test_pairs: int = 360  # (the held-out chapters give 365)
    epochs: int = 1
    batch: int = 16
    rank: int = 16
    alpha: float = 32.0
    lr: float = 3e-4  # peak learning rate (cosine decay to 10 %)
    warmup: int = 50
    eval_every: int = 250
    same_chapter_share: float = 0.0  # share of the NotNext B drawn far away in A's own document (hard negatives)
    calibration_pairs: int = 500  # training pairs per corpus on which the similarity rule sets its threshold
    seed: int = 0
    threads: int = 1


def load_stories(path: Path) -> list[dict]:
    """The stories, each marked held_out when its topic is one of every ten (topics 0, 10, 20, ...): the test
    stories are on topics the head never trained on. The lecture's sentences must not be among them."""
    stories = json.loads(gzip.open(path, "rt", encoding="utf-8").read())["stories"]
    topics = list(dict.fromkeys(s["topic"] for s in stories))
    for s in stories:
        s["held_out"] = topics.index(s["topic"]) % 10 == 0
        if any(sentence in s["text"] for pair in LECTURE_PAIRS for sentence in pair):
            raise SystemExit(f"a story contains a lecture sentence: {s['text']!r}")
    return [s for s in stories if s["text"]]


def accuracy(model, tokenizer, pairs) -> float:
    p_next = is_next_probability(model, tokenizer, [(a, b) for a, b, _ in pairs])
    return ((p_next < 0.5).long() == torch.tensor([label for *_, label in pairs])).float().mean().item()


@torch.no_grad()
def similarity(minilm, tokenizer, pairs) -> torch.Tensor:
    """Cosine of MiniLM's mean-pooled sentence vectors of A and B (lecture 7's sentence similarity)."""
    vectors = []
    for side in (0, 1):
        enc = tokenizer([p[side] for p in pairs], padding=True, truncation=True, max_length=64, return_tensors="pt")
        hidden = torch.cat(
            [
                minilm(
                    input_ids=enc.input_ids[i : i + 64], attention_mask=enc.attention_mask[i : i + 64]
                ).last_hidden_state
                for i in range(0, len(pairs), 64)
            ]
        )
        mask = enc.attention_mask[..., None].float()
        vectors.append(F.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1))
    return (vectors[0] * vectors[1]).sum(-1)


def similarity_rule(minilm, tokenizer, calibration, test) -> tuple[float, float]:
    """IsNext when the pair's cosine exceeds its median over the calibration pairs (training pairs of the same
    corpus). Returns (accuracy on the test pairs, the threshold)."""
    threshold = similarity(minilm, tokenizer, calibration).median()
    labels = torch.tensor([label for *_, label in test])
    return ((similarity(minilm, tokenizer, test) < threshold).long() == labels).float().mean().item(), threshold.item()


def main(config: Config) -> dict:
    tokenizer = AutoTokenizer.from_pretrained(assets.minilm_dir())
    train_chapters, held_chapters = corpora.heldout_chapters(corpora.moby_dick_chapters())
    emails = [corpora.email_text(e, max_chars=None) for e in corpora.spam_emails()]
    share = config.same_chapter_share
    # NotNext sentences come from the same corpus as A (as in the tests), so style alone does not give them away
    corpus_texts = {"moby_dick": ([c["text"] for c in train_chapters], config.moby_pairs, config.seed)}
    if config.austen_pairs:  # all six novels: no Austen test pairs, so every chapter may train
        texts = [c["text"] for c in corpora.austen_chapters()]
        corpus_texts["austen"] = (texts, config.austen_pairs, config.seed + 20)
    corpus_texts["emails"] = ([t for t in emails if not corpora.is_held_out(t)], config.email_pairs, config.seed + 10)
    tests = {
        "test": sentence_pairs([c["text"] for c in held_chapters], config.test_pairs, seed=config.seed + 1),
        "email_test": sentence_pairs(
            [t for t in emails if corpora.is_held_out(t)], config.test_pairs, seed=config.seed + 1
        ),
    }
    if config.story_pairs:
        stories = load_stories(config.stories)
        texts = [s["text"] for s in stories if not s["held_out"]]
        corpus_texts["stories"] = (texts, config.story_pairs, config.seed + 30)
        held_stories = [s["text"] for s in stories if s["held_out"]]
        tests["story_test"] = sentence_pairs(held_stories, config.test_pairs, seed=config.seed + 1)
    by_corpus = {
        corpus: sentence_pairs(texts, n, seed=seed, same_chapter_share=share)
        for corpus, (texts, n, seed) in corpus_texts.items()
    }
    train = [pair for pairs in by_corpus.values() for pair in pairs]

    torch.manual_seed(config.seed)
    model = minilm_for(BertForNextSentencePrediction, NSP_HEADS, config.rank, config.alpha)
    previous = load_stage(model, config.init_from)  # a second stage starts where the first ended
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=config.lr, weight_decay=0.01)
    steps = config.epochs * math.ceil(len(train) / config.batch)

    def epochs():
        for _ in range(config.epochs):
            order = torch.randperm(len(train)).tolist()
            for i in range(0, len(order), config.batch):
                batch = [train[j] for j in order[i : i + config.batch]]
                enc = tokenizer(
                    [a for a, *_ in batch],
                    [b for _, b, _ in batch],
                    truncation=True,
                    max_length=MAX_TOKENS,
                    padding=True,
                    return_tensors="pt",
                )
                yield [dict(enc) | {"labels": torch.tensor([label for *_, label in batch])}]

    batches = epochs()
    run = Run(
        model, optimizer, steps, lambda step: lr_factor(step, steps, config.warmup), grad_clip=None, loss_fn=hf_loss
    )
    run.train(
        lambda: next(batches), lambda m: {"test_accuracy": accuracy(m, tokenizer, tests["test"])}, config.eval_every
    )

    # the baseline: MiniLM's sentence similarity (mean pooling, as lecture 7), thresholded at the training median
    minilm = AutoModel.from_pretrained(assets.minilm_dir()).eval()
    baseline = {}
    for (test_name, test), corpus in zip(tests.items(), ["moby_dick", "emails", "stories"]):
        prefix = "" if test_name == "test" else test_name.removesuffix("test")
        calibration = by_corpus[corpus][: config.calibration_pairs]
        rule_accuracy, threshold = similarity_rule(minilm, tokenizer, calibration, test)
        baseline |= {f"{prefix}accuracy": rule_accuracy, f"{prefix}threshold": round(threshold, 4)}
    scores = {}
    for test_name, test in tests.items():
        scores |= {f"{test_name}_pairs": len(test), f"{test_name}_accuracy": accuracy(model, tokenizer, test)}
    p_next = is_next_probability(model, tokenizer, LECTURE_PAIRS)
    metrics = {
        "task": "next-sentence prediction: label 0 = IsNext (B follows A in its document), "
        "1 = NotNext (B from another document of the same corpus)",
        "model": "all-MiniLM-L6-v2 as BertForNextSentencePrediction + LoRA adapters on every encoder Linear + "
        "encoder biases/LayerNorms + pooler + 2-way layer",
        **scores,
        "quick_sample_pairs": QUICK_SAMPLE,
        "quick_sample_accuracy": accuracy(model, tokenizer, tests["test"][:QUICK_SAMPLE]),
        "baseline_similarity_threshold": baseline
        | {
            "rule": "IsNext when the cosine of MiniLM's mean-pooled sentence vectors exceeds its median over the "
            f"first {config.calibration_pairs} training pairs of the same corpus"
        },
        "lecture_pairs": [
            {"a": a, "b": b, "p_is_next": round(p, 4)} for (a, b), p in zip(LECTURE_PAIRS, p_next.tolist())
        ],
        "training": {
            "corpus": "Moby-Dick, chapters other than 10, 20, ..., 130 (test: those chapters); "
            + ("Austen's six novels; " if config.austen_pairs else "")
            + "the SpamAssassin e-mails outside the classify task's held-out split (test: that split)"
            + (
                "; SmolLM2's everyday stories (recipes.minilm_nsp_stories) on the training topics (test: the held-out "
                "topics)"
                if config.story_pairs
                else ""
            ),
            "pairs": len(train),
            "pairs_per_corpus": {corpus: len(pairs) for corpus, pairs in by_corpus.items()},
            "epochs": config.epochs,
            "steps": steps,
            "batch": config.batch,
            "lora_rank": config.rank,
            "lora_alpha": config.alpha,
            "lr": config.lr,
            "warmup": config.warmup,
            "schedule": "linear warm-up, cosine decay to 10 % of the peak",
            "trainable_params": sum(p.numel() for p in trainable),
            "threads": config.threads,
            "mkl_cbwr": os.environ.get("MKL_CBWR"),
            "same_chapter_share": share,
            "seed": config.seed,
            "train_s": round(run.seconds),
            "history": eval_history(run.history),
        },
    }
    if config.story_pairs:
        metrics["training"]["stories"] = {
            "file": config.stories.name,
            "sha256": hashlib.sha256(config.stories.read_bytes()).hexdigest(),
            "held_out": "the stories of topics 0, 10, 20, ... of recipes.minilm_nsp_stories' list (test: those)",
        }
    kept = ("test_accuracy", "email_test_accuracy", "baseline_similarity_threshold", "lecture_pairs")
    return save_lora_stage(model, config, metrics, __spec__.name, previous, {k: previous[k] for k in kept if previous})


if __name__ == "__main__":
    result = cli(main, Config, __doc__)
    print({k: v for k, v in result.items() if k.endswith("accuracy")}, result["lecture_pairs"])
