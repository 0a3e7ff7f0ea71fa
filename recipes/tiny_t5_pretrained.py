"""tiny-t5-pretrained (lecture 9): the tiny T5 pre-trained the way T5 was made, by span corruption of unlabelled
text, and what that pre-training is worth on one downstream task.

Stages, each written to --work and skipped when its output is already there (an interrupted run resumes: the
trainings save their state every --save-every steps):

1. tokenizer  a SentencePiece-style Unigram vocabulary (the `tokenizers` library; Metaspace "▁" marks a word start)
              of --vocab-size pieces, learned from the pre-training text and generated inputs of the five
              text-to-text tasks (so the task prefixes and common words are whole pieces), as transformers'
              T5Tokenizer with T5's 100 sentinels <extra_id_0..99> (<extra_id_0> the last id, as in T5);
2. pretrain   a T5 from random weights trained on span corruption (scratch.l09_span_corruption: 15 % noise, mean span
              length 3) of windows of --window pieces: Moby-Dick (every 10th chapter held out) and the texts of the
              classify task's training e-mails. The schedule spans --pretrain-steps; --stop-after ends earlier;
3. transfer   fine-tune (a) the pre-trained model and (b) the same architecture from random weights, with the same
              tokenizer, steps, batch and schedule, on the classify task with --sizes training e-mails (nested
              sets), --transfer-repeats times (each repeat its own e-mails, start and batch order); greedy exact
              match on every distinct held-out e-mail after each run;
4. export     the pre-trained model, its tokenizer and metrics.json (pre-training and transfer) to --out.

Every random choice comes from --seed. data/checkpoints/tiny-t5-pretrained/README.md gives the command that made
the shipped checkpoint.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import random
import re
import shutil
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from recipes import fast_path  # noqa: F401  (first: MKL's fast path, before torch loads)
from recipes.common import checkpoint_folder, cli, write_json
from recipes.tiny_t5 import new_model, save_folder

# isort: split
import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import AutoTokenizer, T5ForConditionalGeneration, T5Tokenizer

from course import corpora
from course.runs import SavedRun
from course.text_to_text import CLASSIFY, T5_TASKS, spam_examples, text_to_text_accuracy, text_to_text_example
from scratch.l06_training import decay_groups, hf_loss, lr_factor
from scratch.l07_masking import IGNORE_INDEX
from scratch.l09_span_corruption import corrupt_ids, sentinel_tokens

N_SENTINELS = 100
EMAIL_PRETRAIN_CHARS = 1000  # characters of each e-mail used as pre-training text


@dataclass
class Config:
    work: Path = Path("/tmp/tiny-t5-work")  # the stages' outputs, resumable
    out: Path = checkpoint_folder("tiny-t5-pretrained")
    stages: str = "tokenizer,pretrain,transfer,export"
    vocab_size: int = 4000  # learned pieces, <pad> </s> <unk> included
    tokenizer_pairs: int = 5000  # generated inputs per task that the tokenizer learns from
    max_texts: int | None = None  # only the first chapters of each split (for a quick test of the recipe)
    max_number: int = 99_999  # numbers in the tokenizer's task inputs
    d_model: int = 128
    d_ff: int = 512
    layers: int = 3  # encoder blocks = decoder blocks
    heads: int = 4
    window: int = 64  # pieces of text per pre-training example
    pretrain_steps: int = 1200  # the length of the learning-rate schedule
    stop_after: int | None = None  # end pre-training after this step
    pretrain_batch: int = 64
    pretrain_lr: float = 2e-3
    pretrain_eval_every: int = 200
    heldout_windows: int = 512  # held-out windows scored during pre-training
    warmup: int = 100  # warm-up steps of pre-training
    sizes: list[int] = field(default_factory=lambda: [10, 30, 100, 300])  # training e-mails in the transfer runs
    inits: list[str] = field(default_factory=lambda: ["pretrained", "scratch"])  # transfer from which weights
    transfer_repeats: int = 3  # runs per (start, size), each its own draw
    transfer_steps: int = 200
    transfer_batch: int = 16
    transfer_lr: float = 1e-3
    transfer_warmup: int = 20
    export_windows: int = 256  # held-out Moby-Dick windows scored for metrics.json
    save_every: int = 200
    seed: int = 0
    threads: int = 1
    device: str = "cpu"


# ---------------------------------------------------------------- data and tokenizer


def pretraining_texts(split: str, max_texts: int | None = None) -> list[str]:
    """Moby-Dick's chapters (train: all but every 10th) and the e-mails of the classify task's split (all, or the
    first max_texts texts)."""
    train_chapters, held_chapters = corpora.heldout_chapters(corpora.moby_dick_chapters())
    texts = [" ".join(chapter["text"].split()) for chapter in (train_chapters if split == "train" else held_chapters)]
    for email in corpora.spam_emails():
        if corpora.is_held_out(corpora.email_text(email)) == (split == "val"):  # the classify task's split
            texts.append(corpora.email_text(email, EMAIL_PRETRAIN_CHARS))
    return texts[:max_texts]


def text_windows(tokenizer, texts: list[str], length: int) -> list[list[int]]:
    """All texts' pieces, one stream (as T5 packs its corpus), cut into windows of `length` pieces."""
    stream = []
    for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        stream += ids
    return [stream[i : i + length] for i in range(0, len(stream) - length + 1, length)]


def train_tokenizer(config: Config) -> T5Tokenizer:
    rng = random.Random(config.seed)
    corpus = pretraining_texts("train", config.max_texts)
    for _ in range(config.tokenizer_pairs):
        for task in T5_TASKS:
            corpus += text_to_text_example(task, rng, "train", config.max_number)
    tokenizer = Tokenizer(models.Unigram())
    # the same pre-tokenizer as T5Tokenizer: split on whitespace, "▁" in front of every word
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True),
        ]
    )
    trainer = trainers.UnigramTrainer(
        vocab_size=config.vocab_size,
        special_tokens=["<pad>", "</s>", "<unk>"],
        unk_token="<unk>",
        max_piece_length=16,
    )
    tokenizer.train_from_iterator(corpus, trainer)
    vocab = [(piece, score) for piece, score in json.loads(tokenizer.to_str())["model"]["vocab"]]
    # T5's sentinels take the last ids, <extra_id_0> the very last (added in reverse order)
    t5_tokenizer = T5Tokenizer(vocab=vocab, extra_ids=0, additional_special_tokens=sentinel_tokens(N_SENTINELS)[::-1])
    assert (t5_tokenizer.pad_token_id, t5_tokenizer.eos_token_id, t5_tokenizer.unk_token_id) == (0, 1, 2)
    assert t5_tokenizer.convert_tokens_to_ids("<extra_id_0>") == len(t5_tokenizer) - 1
    return t5_tokenizer


def pad_rows(rows: list[list[int]], value: int) -> torch.Tensor:
    width = max(map(len, rows))
    return torch.tensor([row + [value] * (width - len(row)) for row in rows], dtype=torch.long)


def id_batch(inputs: list[list[int]], labels: list[list[int]]) -> dict[str, torch.Tensor]:
    input_ids = pad_rows(inputs, 0)
    return {"input_ids": input_ids, "attention_mask": (input_ids != 0).long(), "labels": pad_rows(labels, IGNORE_INDEX)}


def pretraining_pairs(windows, tokenizer, rng: random.Random) -> tuple[list, list]:
    sentinel_ids = tokenizer.convert_tokens_to_ids(sentinel_tokens(N_SENTINELS))
    pairs = [corrupt_ids(w, sentinel_ids, tokenizer.eos_token_id, 0.15, 3.0, rng) for w in windows]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def t5_run(config: Config, model, steps: int, lr: float, warmup: int, folder: Path, rng: random.Random) -> SavedRun:
    """AdamW (no weight decay on biases and norms), warm-up times a cosine to 0 at the end, gradients clipped to 1."""
    optimizer = torch.optim.AdamW(decay_groups(model, 0.01), lr=lr)
    schedule = partial(lr_factor, steps=steps + 1, warmup=warmup, min_factor=0.0, decay_during_warmup=True)
    return SavedRun(
        model,
        optimizer,
        steps,
        schedule,
        loss_fn=hf_loss,
        folder=folder,
        save_every=config.save_every,
        rng=rng,
        device=config.device,
    )


# ---------------------------------------------------------------- stage 2: pre-training


@torch.no_grad()
def pretraining_eval(model, batches) -> dict:
    """Teacher-forced loss and next-piece accuracy on the targets of fixed corrupted held-out windows."""
    total_loss = correct = count = 0
    for batch in batches:
        out = model(**batch)
        real = batch["labels"] != IGNORE_INDEX
        n = int(real.sum())
        total_loss += out.loss.item() * n
        correct += int(((out.logits.argmax(-1) == batch["labels"]) & real).sum())
        count += n
    return {"heldout_loss": round(total_loss / count, 4), "heldout_piece_accuracy": round(correct / count, 4)}


def pretrain(config: Config, tokenizer, out: Path) -> None:
    windows = text_windows(tokenizer, pretraining_texts("train", config.max_texts), config.window)
    held = text_windows(tokenizer, pretraining_texts("val", config.max_texts), config.window)
    eval_rng = random.Random(config.seed + 7)
    held = eval_rng.sample(held, min(config.heldout_windows, len(held)))
    inputs, labels = pretraining_pairs(held, tokenizer, eval_rng)
    eval_batches = [id_batch(inputs[i : i + 128], labels[i : i + 128]) for i in range(0, len(inputs), 128)]
    rng = random.Random(config.seed + 1)
    torch.manual_seed(config.seed)
    model = new_model(config, len(tokenizer))

    def next_batches():
        windows_drawn = [rng.choice(windows) for _ in range(config.pretrain_batch)]
        return [id_batch(*pretraining_pairs(windows_drawn, tokenizer, rng))]

    run = t5_run(
        config, model, config.pretrain_steps, config.pretrain_lr, config.warmup, out.with_name(out.name + "-state"), rng
    )
    run.train(
        next_batches,
        lambda m: pretraining_eval(m, eval_batches),
        config.pretrain_eval_every,
        stop_after=config.stop_after,
        label="pre-training",
    )
    save_folder(run.model, tokenizer, out)
    info = {
        "windows": len(windows),
        "window": config.window,
        "pieces": len(windows) * config.window,
        "heldout_windows": len(held),
        "steps": run.step,
        "schedule_steps": config.pretrain_steps,
        "batch_size": config.pretrain_batch,
        "lr": config.pretrain_lr,
        "warmup": config.warmup,
        "noise_density": 0.15,
        "mean_span_length": 3.0,
        "train_seconds": round(run.seconds, 1),
        "history": [
            {"step": e["step"], "train_loss": round(run.history.train_loss[e["step"] - 1], 4)} | e
            for e in run.history.evals
        ],
        "examples": span_examples(run.model, tokenizer, held[:4], random.Random(config.seed + 9)),
    }
    write_json(out / "pretraining.json", info)


@torch.no_grad()
def span_examples(model, tokenizer, windows, rng) -> list[dict]:
    """Corrupted held-out windows, the true target and the model's greedy target, as text."""
    examples = []
    for source, target in zip(*pretraining_pairs(windows, tokenizer, rng)):
        out = model.generate(torch.tensor([source]), do_sample=False, max_new_tokens=len(target) + 8)
        predicted = tokenizer.decode(out[0, 1:])
        examples.append({"input": tokenizer.decode(source), "target": tokenizer.decode(target), "predicted": predicted})
    return examples


# ---------------------------------------------------------------- stage 3: transfer to the classify task


def classify_sets(seed: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Distinct training e-mails in a seeded order (the first n are the training set of size n: nested sets)
    and every distinct held-out e-mail, as (source, target) pairs of the classify task."""

    def distinct(pairs):
        first = {}
        for text, label in pairs:
            first.setdefault(text, label)
        return [(f"{CLASSIFY}: {text}", label) for text, label in first.items()]

    train = distinct(spam_examples("train"))
    random.Random(seed).shuffle(train)
    return train, distinct(spam_examples("val"))


def transfer(config: Config, tokenizer, pretrained: Path) -> dict:
    """Fine-tune from the pre-trained and from random weights on `sizes` training e-mails, `transfer_repeats`
    times: repeat r draws its own training e-mails, batch order and random initial weights (seeds + r), so the
    spread between repeats shows how much one run can be trusted. Finished runs are kept in work/transfer.json."""
    results_file = config.work / "transfer.json"
    results = json.loads(results_file.read_text()) if results_file.is_file() else {"runs": []}
    done = {(r["init"], r["size"], r["repeat"]) for r in results["runs"]}
    first_train_pairs, eval_pairs = classify_sets(config.seed + 3)
    labels = [t for _, t in eval_pairs]
    results.update(
        {
            "task": CLASSIFY,
            "sizes": config.sizes,
            "repeats": config.transfer_repeats,
            "steps": config.transfer_steps,
            "batch_size": config.transfer_batch,
            "lr": config.transfer_lr,
            "warmup": config.transfer_warmup,
            "heldout_emails": len(eval_pairs),
            "available": len(first_train_pairs),
            "majority_baseline": round(max(labels.count(w) for w in set(labels)) / len(labels), 4),
        }
    )
    for repeat in range(config.transfer_repeats):
        train_pairs, _ = classify_sets(config.seed + 3 + repeat)
        for size in config.sizes:
            for init in config.inits:
                if (init, size, repeat) in done:
                    continue
                if init == "pretrained":
                    model = T5ForConditionalGeneration.from_pretrained(pretrained, use_safetensors=True)
                else:
                    torch.manual_seed(config.seed + repeat)
                    model = new_model(config, len(tokenizer))
                rng = random.Random(config.seed + 5 + repeat)
                subset = train_pairs[:size]

                def next_batches(subset=subset, rng=rng):
                    pairs = [rng.choice(subset) for _ in range(config.transfer_batch)]
                    encoded = tokenizer([s for s, _ in pairs], text_target=[t for _, t in pairs])
                    return [id_batch(encoded["input_ids"], encoded["labels"])]

                state = config.work / f"transfer-{init}-{size}-{repeat}-state"
                run = t5_run(
                    config, model, config.transfer_steps, config.transfer_lr, config.transfer_warmup, state, rng
                )
                run.train(next_batches, label=f"{init} n={size} repeat {repeat}")
                accuracy = text_to_text_accuracy(run.model.cpu().eval(), tokenizer, eval_pairs)[CLASSIFY]
                run_result = {"init": init, "size": size, "repeat": repeat, "exact_match": round(accuracy, 4)}
                results["runs"].append(run_result | {"train_seconds": round(run.seconds, 1)})
                write_json(results_file, results)
                shutil.rmtree(state, ignore_errors=True)
    results["runs"] = [
        r
        for r in results["runs"]
        if r["size"] in config.sizes and r["init"] in config.inits and r["repeat"] < config.transfer_repeats
    ]
    write_json(results_file, results)
    return results


# ---------------------------------------------------------------- stage 4: export


@torch.no_grad()
def moby_dick_span_eval(model, tokenizer, window: int, n_windows: int, seed: int) -> dict:
    """Span corruption on n_windows held-out Moby-Dick windows: the mean of the per-window losses (each the mean
    over its target pieces) and the next-piece accuracy over all target pieces (teacher forcing)."""
    _, held = corpora.heldout_chapters(corpora.moby_dick_chapters())
    windows = text_windows(tokenizer, [" ".join(chapter["text"].split()) for chapter in held], window)
    rng = random.Random(seed)
    windows = rng.sample(windows, min(n_windows, len(windows)))
    sentinel_ids = tokenizer.convert_tokens_to_ids(sentinel_tokens(N_SENTINELS))
    markers = set(sentinel_ids) | {tokenizer.eos_token_id}
    losses, correct, count, content_correct, content_count = [], 0, 0, 0, 0
    for w in windows:
        inputs, labels = corrupt_ids(w, sentinel_ids, tokenizer.eos_token_id, 0.15, 3.0, rng)
        out = model(input_ids=torch.tensor([inputs]), labels=torch.tensor([labels]))
        losses.append(out.loss.item())
        hits = (out.logits[0].argmax(-1) == torch.tensor(labels)).tolist()
        content = [label not in markers for label in labels]  # the dropped text, not sentinels and </s>
        correct += sum(hits)
        count += len(labels)
        content_correct += sum(h and c for h, c in zip(hits, content))
        content_count += sum(content)
    return {
        "moby_dick_heldout_windows": len(windows),
        "moby_dick_heldout_loss": round(sum(losses) / len(losses), 4),
        "moby_dick_heldout_piece_accuracy": round(correct / count, 4),
        "moby_dick_heldout_content_piece_accuracy": round(content_correct / content_count, 4),
    }


def piece_report(tokenizer) -> dict:
    """How the tokenizer cuts the task prefixes and the most common words of Moby-Dick."""
    words = collections.Counter(re.findall(r"[A-Za-z]+", corpora.moby_dick_text())).most_common(500)
    whole = [len(tokenizer.tokenize(w)) == 1 for w, _ in words]
    return {
        "prefixes": {task: tokenizer.tokenize(f"{task}: ") for task in T5_TASKS},
        "moby_dick_top_100_words_whole": sum(whole[:100]),
        "moby_dick_top_500_words_whole": sum(whole),
    }


def export(config: Config, tokenizer) -> dict:
    source, out = config.work / "pretrained", config.out
    out.mkdir(parents=True, exist_ok=True)
    for name in (
        "model.safetensors",
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ):
        shutil.copy(source / name, out / name)
    model = T5ForConditionalGeneration.from_pretrained(out, use_safetensors=True).eval()
    pretraining = json.loads((source / "pretraining.json").read_text())
    pretraining.update(moby_dick_span_eval(model, tokenizer, config.window, config.export_windows, config.seed + 10))
    settings = dataclasses.asdict(config)
    metrics = {
        "parameters": sum(p.numel() for p in model.parameters()),
        "model_safetensors_bytes": (out / "model.safetensors").stat().st_size,
        "vocab_size": len(tokenizer),
        "sentinels": N_SENTINELS,
        "tokenizer": piece_report(tokenizer),
        "pretraining": pretraining,
        "transfer": json.loads((config.work / "transfer.json").read_text()),
        "device": config.device,
        "threads": config.threads,
        "mkl_cbwr": os.environ.get("MKL_CBWR"),
        "torch": torch.__version__.split("+")[0],
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in settings.items() if k not in ("work", "out")},
    }
    write_json(out / "metrics.json", metrics)
    return metrics


def main(config: Config) -> dict:
    """Run the stages named in config.stages; returns the exported metrics ({} without the export stage)."""
    stages = config.stages.split(",")
    config.work.mkdir(parents=True, exist_ok=True)
    if not (config.work / "tokenizer" / "tokenizer.json").is_file():
        if "tokenizer" not in stages:
            raise SystemExit(f"no tokenizer in {config.work}: run the tokenizer stage first")
        train_tokenizer(config).save_pretrained(config.work / "tokenizer")
    tokenizer = AutoTokenizer.from_pretrained(config.work / "tokenizer")
    if "pretrain" in stages and not (config.work / "pretrained" / "pretraining.json").is_file():
        pretrain(config, tokenizer, config.work / "pretrained")
    if "transfer" in stages:
        transfer(config, tokenizer, config.work / "pretrained")
    return export(config, tokenizer) if "export" in stages else {}


if __name__ == "__main__":
    result = cli(main, Config, __doc__)
    print({k: v for k, v in result.get("pretraining", {}).items() if k.startswith("moby_dick")})
