"""minilm-lora-mlm (lecture 7): all-MiniLM-L6-v2 adapted for fill-mask with LoRA.

MiniLM ships no masked-LM head, and its last training stage (sentence similarity) never asked its output at a [MASK]
to name the hidden word: a head trained on the frozen encoder reached 4.4 % top-1 (minilm-mlm-head). Here the
encoder itself is adapted, cheaply: low-rank adapters (scratch.l07_lora) on every Linear of the 6 blocks, plus the
encoder's biases and LayerNorms and BERT's MLM head, whose decoder is the frozen word-embedding table and whose
bias starts at the log unigram frequencies of the training tokens. Training is BERT's masked LM with dynamic
masking: every batch draws a fresh share of its tokens (--mask-prob; 80 % [MASK], 10 % random, 10 % kept).

Text: Moby-Dick (chapters 10, 20, ..., 130 held out) and, where apt-get exists, Jane Austen's six novels (chapters
10, 20, ... of each held out). Test: the held-out Moby-Dick words of course.bert_tasks.masked_word_eval_set (15 %
of the whole alphabetic single-token words per 64-token window, hidden behind [MASK]), and 400 windows of Austen's.
data/checkpoints/minilm-lora-mlm/README.md gives the two commands that made the shipped checkpoint.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from recipes import fast_path  # noqa: F401  (first: MKL's fast path, before torch loads)
from recipes.common import checkpoint_folder, cli, eval_history, load_stage, save_lora_stage

# isort: split
import torch
import torch.nn.functional as F
from transformers import AutoTokenizer, BertForMaskedLM, pipeline

from course import assets, corpora
from course.bert_tasks import masked_word_eval_set, word_targets
from course.checkpoints import MLM_HEADS, minilm_for
from course.metrics import context_free_baselines, fill_mask_accuracy
from course.runs import SavedRun
from scratch.l06_training import lr_factor
from scratch.l07_masking import IGNORE_INDEX, mask_tokens

MAX_LEN = 64
QUICK_SAMPLE = 64  # the first held-out windows, re-scored by tests/test_bert.py
AUSTEN_TEST_WINDOWS = 400  # of the 1,306 held-out Austen windows, the first 400 are scored
EXAMPLES = [
    "The capital of France is [MASK].",
    "Call me [MASK].",
    "The sea was [MASK] and calm.",
    "I went to the [MASK] to buy some groceries.",
    "The dog ate the [MASK] because it was hungry.",
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a [MASK].",
]


@dataclass
class Config:
    out: Path = checkpoint_folder("minilm-lora-mlm")
    init_from: Path | None = None  # continue from the checkpoint in this folder (model.safetensors, metrics.json)
    work: Path | None = None  # save the run's state here as it goes, and resume from it
    rank: int = 16
    alpha: float = 32.0
    steps: int = 2400
    batch: int = 16  # windows of 64 tokens per step
    mask_prob: float = 0.3  # share of the tokens picked per window (BERT: 0.15; more labels per forward pass)
    lr: float = 1e-3  # peak learning rate of the adapters, biases and LayerNorms
    head_lr: float = 2e-3
    warmup: int = 30
    moby_share: float | None = None  # draw this share of every batch from Moby-Dick (default: uniformly)
    austen: bool = True  # train and test on Austen's novels too, where apt-get can fetch them
    save_every: int = 100
    max_windows: int | None = None  # use only the first windows of each text (for a quick test of the recipe)
    seed: int = 0
    threads: int = 1


def moby_dick_windows(tokenizer) -> tuple[list, list, list[int]]:
    """Moby-Dick as 64-token windows: (training windows, held-out windows, the held-out chapter numbers)."""
    train, held = corpora.heldout_chapters(corpora.moby_dick_chapters())
    windows = [corpora.token_windows(tokenizer, [c["text"] for c in part], MAX_LEN) for part in (train, held)]
    return *windows, [int(c["chapter"]) for c in held]


@torch.no_grad()
def masked_accuracy(model, examples) -> dict:
    """fill_mask_accuracy's numbers, with vocabulary logits at the masked positions only (cheap, for progress)."""
    model.eval()
    hits = torch.zeros(2)
    n = 0
    for start in range(0, len(examples), 32):
        batch = examples[start : start + 32]
        hidden = model.bert(input_ids=torch.stack([e[0] for e in batch])).last_hidden_state
        for row, (_, positions, targets) in enumerate(batch):
            best = model.cls(hidden[row, positions]).topk(5, dim=-1).indices  # (k, 5)
            hits += torch.stack([(best[:, 0] == targets).sum(), (best == targets[:, None]).any(-1).sum()])
            n += len(targets)
    return {"top1": hits[0].item() / n, "top5": hits[1].item() / n, "n": n}


def masked_lm_loss(model, batch) -> torch.Tensor:
    """Cross-entropy at the picked positions, with the vocabulary logits computed only where they count."""
    inputs, labels = batch
    hidden = model.bert(input_ids=inputs).last_hidden_state
    picked = labels != IGNORE_INDEX
    return F.cross_entropy(model.cls(hidden[picked]), labels[picked])


def main(config: Config) -> dict:
    tokenizer = AutoTokenizer.from_pretrained(assets.minilm_dir())
    use_austen = config.austen and assets.apt_available()
    moby_train, moby_held, held_chapters = moby_dick_windows(tokenizer)
    windows = {"moby_train": moby_train, "moby_held": moby_held}
    split = {"moby_dick_held_out_chapters": held_chapters}
    if use_austen:
        chapters = corpora.austen_chapters()
        for part, held_out in (("austen_train", False), ("austen_held", True)):
            texts = [c["text"] for c in chapters if (c["chapter"] % 10 == 0) == held_out]
            windows[part] = corpora.token_windows(tokenizer, texts, MAX_LEN)
        split["austen_held_out"] = f"chapters 10, 20, ... of each novel; the first {AUSTEN_TEST_WINDOWS} windows"
    windows = {k: v[: config.max_windows] for k, v in windows.items()}
    train = torch.tensor(windows["moby_train"] + windows.get("austen_train", []))
    n_moby = len(windows["moby_train"])
    tests = {"moby_dick": masked_word_eval_set(tokenizer, windows["moby_held"], seed=0)}
    if use_austen:  # a fixed sample of Austen's held-out windows: enough words, a fraction of the time
        tests["austen"] = masked_word_eval_set(tokenizer, windows["austen_held"], seed=0)[:AUSTEN_TEST_WINDOWS]

    torch.manual_seed(config.seed)
    model = minilm_for(BertForMaskedLM, MLM_HEADS, config.rank, config.alpha)
    with torch.no_grad():  # start the output bias at the log unigram frequencies: the context-free prior
        counts = torch.bincount(train.flatten(), minlength=len(tokenizer)).float() + 1.0
        model.cls.predictions.bias.copy_((counts / counts.sum()).log())
    previous = load_stage(model, config.init_from)  # a second stage starts where the first ended
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    body = [p for n, p in trainable if not n.startswith("cls.")]
    head = [p for n, p in trainable if n.startswith("cls.")]
    optimizer = torch.optim.AdamW(
        [{"params": body, "lr": config.lr}, {"params": head, "lr": config.head_lr}], weight_decay=0.01
    )
    special = torch.tensor(tokenizer.all_special_ids)
    generator = torch.Generator().manual_seed(config.seed)

    def next_batches():
        if config.moby_share is None or len(train) == n_moby:
            ids = train[torch.randint(len(train), (config.batch,), generator=generator)]
        else:  # a fixed number of Moby-Dick windows per batch, the rest from Austen
            n_md = round(config.batch * config.moby_share)
            from_austen = n_moby + torch.randint(len(train) - n_moby, (config.batch - n_md,), generator=generator)
            ids = torch.cat([train[torch.randint(n_moby, (n_md,), generator=generator)], train[from_austen]])
        special_mask = torch.isin(ids, special)
        return [mask_tokens(ids, special_mask, tokenizer.mask_token_id, len(tokenizer), config.mask_prob, generator)]

    def evaluate(model) -> dict:
        quick = masked_accuracy(model, tests["moby_dick"][:QUICK_SAMPLE])
        held = masked_accuracy(model, tests["moby_dick"])  # all 2,292 held-out words: the curve
        return {"quick_top1": quick["top1"], "quick_top5": quick["top5"], "top1": held["top1"], "top5": held["top5"]}

    # warm-up, then a cosine to 10 % of the peak one step after the last (as the shipped runs had it)
    schedule = partial(lr_factor, steps=config.steps + 1, warmup=config.warmup, min_factor=0.1)
    run = SavedRun(
        model,
        optimizer,
        config.steps,
        schedule,
        loss_fn=masked_lm_loss,
        folder=config.work,
        save_every=config.save_every,
        rng=generator,
    )
    run.train(next_batches, evaluate, config.save_every, label="fill-mask")

    def guesses_named(baseline: dict) -> dict:
        names = tokenizer.convert_ids_to_tokens(baseline["guesses"])
        return {"top1": baseline["top1"], "top5": baseline["top5"], "guesses": names}

    results = {}
    train_words = {"moby_dick": word_targets(tokenizer, windows["moby_train"])}
    if use_austen:
        train_words["austen"] = word_targets(tokenizer, windows["austen_train"])
    for name, examples in tests.items():
        held = masked_accuracy(model, examples)
        targets = torch.cat([e[2] for e in examples])
        baseline = context_free_baselines(train_words[name], targets)
        oracle = context_free_baselines(targets, targets)  # the best any context-free guess can do
        results[name] = {
            "windows": len(examples),
            "masked_words": held["n"],
            "model": {"top1": held["top1"], "top5": held["top5"]},
            "baseline_from_training_words": guesses_named(baseline),
            "best_context_free_on_test_words": guesses_named(oracle),
        }
        if name == "moby_dick":
            results[name]["quick_sample"] = fill_mask_accuracy(model, examples[:QUICK_SAMPLE])
    fill_mask = pipeline("fill-mask", model=model, tokenizer=tokenizer)
    examples = {text: [[g["token_str"], round(g["score"], 4)] for g in fill_mask(text, top_k=5)] for text in EXAMPLES}
    metrics = {
        "model": "all-MiniLM-L6-v2 + LoRA adapters on every encoder Linear + encoder biases/LayerNorms + MLM head",
        "evaluation": {
            "window_tokens": MAX_LEN,
            "seed": 0,
            "quick_sample_windows": QUICK_SAMPLE,
            "rule": "15 % of the whole alphabetic words that are single WordPiece tokens, replaced by [MASK]",
            **split,
        },
        "results": results,
        "examples": examples,
        "training": {
            "corpora": ["Moby-Dick"] + (["Jane Austen (six novels)"] if use_austen else []),
            "windows": len(train),
            "steps": config.steps,
            "batch": config.batch,
            "masking": f"dynamic: a fresh {config.mask_prob:.0%} of the tokens per batch; 80 % [MASK], "
            "10 % random, 10 % kept",
            "lora_rank": config.rank,
            "lora_alpha": config.alpha,
            "lr": config.lr,
            "head_lr": config.head_lr,
            "warmup": config.warmup,
            "schedule": "linear warm-up, cosine decay to 10 % of the peak",
            "trainable_params": sum(p.numel() for _, p in trainable),
            "threads": config.threads,
            "mkl_cbwr": os.environ.get("MKL_CBWR"),
            "seed": config.seed,
            "train_s": round(run.seconds),
            "history": eval_history(run.history),
        },
    }
    if config.moby_share is not None:
        metrics["training"]["moby_share"] = config.moby_share
    kept = {"results": previous["results"], "examples": previous["examples"]} if previous else {}
    return save_lora_stage(model, config, metrics, __spec__.name, previous, kept)


if __name__ == "__main__":
    result = cli(main, Config, __doc__)
    print({name: r["model"] for name, r in result["results"].items()})
