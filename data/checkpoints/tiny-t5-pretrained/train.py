"""Pre-train the course's tiny T5 (lecture 9) the way T5 was made, with span corruption on unlabelled text, and
measure what that pre-training is worth on one downstream task.

Stages, each written to --work and skipped when its output is already there (an interrupted run resumes; training
saves its state every --save-every steps):

1. tokenizer  a SentencePiece-style Unigram vocabulary (Metaspace "▁" marks a word start) of --vocab-size pieces,
              learned from the pre-training text and generated inputs of the course's text-to-text tasks (so the
              task prefixes and common words are whole pieces), wrapped as transformers' T5Tokenizer with T5's
              100 sentinels <extra_id_0..99> (<extra_id_0> is the last id, as in T5);
2. pretrain   T5ForConditionalGeneration from random weights, trained on span corruption
              (scratch.span_corruption: 15 % noise, mean span length 3) of windows of --window pieces of
              public-domain / CC0 text: Moby-Dick (every 10th chapter held out) and the SpamAssassin e-mails'
              texts (the classify task's training e-mails only; its held-out e-mails are never seen). The
              learning-rate schedule spans --pretrain-steps; --stop-after ends the run earlier;
3. transfer   the experiment: fine-tune (a) the pre-trained model and (b) the same architecture from random
              weights, with the same tokenizer, steps, batch and learning-rate schedule, on the classify task
              (scratch.tasks: "classify: <e-mail>" -> "spam" / "ham") with --sizes training e-mails (nested
              sets), --transfer-repeats times (each repeat its own e-mails, start and batch order), and measure
              greedy exact match on every distinct held-out e-mail after each run;
4. export     the pre-trained model, its tokenizer and metrics.json (pre-training and transfer) to --out.

Every random choice comes from --seed. The command that made the shipped checkpoint (CPU, one thread, on a
shared machine, MKL's fast path as set below: the pre-training took 45 minutes, the six transfer runs about a
minute each; the tokenizer stage was reused from the previous checkpoint's work folder, which the same command
made):

    PYTHONPATH=lib .venv/bin/python data/checkpoints/tiny-t5-pretrained/train.py --work /tmp/tiny-t5-work \\
        --pretrain-steps 4000 --sizes 30 100 300

(That run made one transfer run per setting, repeat 0 at 30, 100 and 300 e-mails; the same command with
`--stages transfer` and then `--stages transfer --sizes 10 30 100 300` later added repeats 1 and 2, the
`--transfer-repeats 3` default, and the 10-e-mail runs, on the same work folder. The defaults below now do all of it.)

(The previous checkpoint stopped its pre-training at step 600 of a 1,200-step schedule, on the pinned numeric
path, where a step took 10 s instead of 0.7 s.)

`--device cuda` trains on a GPU; the shipped checkpoint did not use one.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import time
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # the tokenizers library: one thread too
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MKL_CBWR", "AUTO")  # training speed: MKL's fast path, not the lectures' pinned one

import scratch  # noqa: E402,F401  (pins the numeric path and the offline environment before torch loads)

# isort: split
import torch  # noqa: E402

from scratch import assets  # noqa: E402
from scratch.mlm import heldout_chapters  # noqa: E402
from scratch.span_corruption import IGNORE_INDEX, corrupt_ids, sentinel_tokens  # noqa: E402
from scratch.tasks import (  # noqa: E402
    CLASSIFY,
    T5_TASKS,
    email_text,
    is_held_out,
    spam_examples,
    text_to_text_accuracy,
    text_to_text_example,
)

HERE = Path(__file__).resolve().parent
N_SENTINELS = 100
EMAIL_PRETRAIN_CHARS = 1000  # characters of each e-mail used as pre-training text


# ---------------------------------------------------------------- data


def pretraining_texts(split: str) -> list[str]:
    """Moby-Dick's chapters (train: all but every 10th) and the e-mails of the classify task's split."""
    train_chapters, held_chapters = heldout_chapters(assets.moby_dick_chapters())
    chapters = train_chapters if split == "train" else held_chapters
    texts = [" ".join(chapter["text"].split()) for chapter in chapters]
    for email in assets.spam_emails():
        if is_held_out(email_text(email)) == (split == "val"):  # the classify task's split of this e-mail
            texts.append(email_text(email, EMAIL_PRETRAIN_CHARS))
    return texts


def text_windows(tokenizer, texts: list[str], length: int) -> list[list[int]]:
    """All texts' pieces, one stream (as T5 packs its corpus), cut into windows of `length` pieces."""
    stream = []
    for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        stream += ids
    return [stream[i : i + length] for i in range(0, len(stream) - length + 1, length)]


# ---------------------------------------------------------------- stage 1: tokenizer


def train_tokenizer(args):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import T5Tokenizer

    rng = random.Random(args.seed)
    corpus = pretraining_texts("train")
    for _ in range(5000):
        for task in T5_TASKS:
            corpus += text_to_text_example(task, rng, "train", args.max_number)
    tokenizer = Tokenizer(models.Unigram())
    # the same pre-tokenizer as T5Tokenizer: split on whitespace, "▁" in front of every word
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True),
        ]
    )
    trainer = trainers.UnigramTrainer(
        vocab_size=args.vocab_size, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>", max_piece_length=16
    )
    tokenizer.train_from_iterator(corpus, trainer)
    vocab = [(piece, score) for piece, score in json.loads(tokenizer.to_str())["model"]["vocab"]]
    # T5's sentinels take the last ids, <extra_id_0> the very last (added in reverse order)
    t5_tokenizer = T5Tokenizer(vocab=vocab, extra_ids=0, additional_special_tokens=sentinel_tokens(N_SENTINELS)[::-1])
    assert (t5_tokenizer.pad_token_id, t5_tokenizer.eos_token_id, t5_tokenizer.unk_token_id) == (0, 1, 2)
    assert t5_tokenizer.convert_tokens_to_ids("<extra_id_0>") == len(t5_tokenizer) - 1
    return t5_tokenizer


# ---------------------------------------------------------------- model, batches, loops


def new_model(args, tokenizer, seed: int):
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(seed)
    config = T5Config(
        vocab_size=len(tokenizer),
        d_model=args.d_model,
        d_kv=args.d_model // args.heads,
        d_ff=args.d_ff,
        num_layers=args.layers,
        num_decoder_layers=args.layers,
        num_heads=args.heads,
        relative_attention_num_buckets=32,
        relative_attention_max_distance=128,
        dropout_rate=0.0,
        feed_forward_proj="relu",
        tie_word_embeddings=True,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    return T5ForConditionalGeneration(config)


def load_model(folder: Path):
    from transformers import T5ForConditionalGeneration

    return T5ForConditionalGeneration.from_pretrained(folder, use_safetensors=True)


def pad_rows(rows: list[list[int]], value: int) -> torch.Tensor:
    width = max(map(len, rows))
    return torch.tensor([row + [value] * (width - len(row)) for row in rows], dtype=torch.long)


def id_batch(inputs: list[list[int]], labels: list[list[int]]) -> dict[str, torch.Tensor]:
    input_ids = pad_rows(inputs, 0)
    return {
        "input_ids": input_ids,
        "attention_mask": (input_ids != 0).long(),
        "labels": pad_rows(labels, IGNORE_INDEX),
    }  # no loss on padding


def text_batch(tokenizer, pairs: list[tuple[str, str]]) -> dict[str, torch.Tensor]:
    encoded = tokenizer([s for s, _ in pairs], text_target=[t for _, t in pairs])
    return id_batch(encoded["input_ids"], encoded["labels"])


def lr_at(step: int, steps: int, warmup: int) -> float:
    """Linear warm-up over `warmup` steps, then cosine decay to 0 at `steps`."""
    return min((step + 1) / warmup, 1.0) * 0.5 * (1 + math.cos(math.pi * min(step / steps, 1.0)))


class Run:
    """One training run (pre-training or fine-tuning) that saves its state every save_every steps to
    `state_dir` and resumes from it: model, optimizer, the data generator's state, the history."""

    def __init__(self, model, args, state_dir: Path, steps: int, lr: float, warmup: int, rng: random.Random):
        self.model, self.args, self.state_dir = model.to(args.device), args, state_dir
        self.steps, self.warmup, self.rng, self.step, self.history, self.seconds = steps, warmup, rng, 0, [], 0.0
        decay = [p for p in model.parameters() if p.dim() >= 2]
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=lr
        )
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: lr_at(s, steps, warmup))
        if (state_dir / "state.pt").is_file():
            self._load()

    def _load(self):
        from safetensors.torch import load_model as load_weights

        load_weights(self.model, str(self.state_dir / "model.safetensors"))
        state = torch.load(self.state_dir / "state.pt", weights_only=False)  # our own file, written below
        self.optimizer.load_state_dict(state["optimizer"])
        self.schedule.load_state_dict(state["schedule"])
        self.rng.setstate(state["rng"])
        self.step, self.history, self.seconds = state["step"], state["history"], state["seconds"]
        print(f"   resumed {self.state_dir} at step {self.step}", flush=True)

    def save(self):
        from safetensors.torch import save_model

        self.state_dir.mkdir(parents=True, exist_ok=True)
        save_model(self.model, str(self.state_dir / "model.safetensors"))
        torch.save(
            {
                "optimizer": self.optimizer.state_dict(),
                "schedule": self.schedule.state_dict(),
                "rng": self.rng.getstate(),
                "step": self.step,
                "history": self.history,
                "seconds": self.seconds,
            },
            self.state_dir / "tmp.pt",
        )
        os.replace(self.state_dir / "tmp.pt", self.state_dir / "state.pt")

    def train(
        self,
        next_batches,
        evaluate=None,
        eval_every: int = 0,
        log_every: int = 50,
        label: str = "",
        stop_after: int | None = None,
    ):
        """next_batches() -> a list of batches whose mean loss is one step. evaluate(model) -> dict of numbers,
        logged in history. stop_after: end after this step (the schedule still spans self.steps)."""
        start = time.time() - self.seconds
        last = self.steps if stop_after is None else min(stop_after, self.steps)
        while self.step < last:
            self.model.train()
            losses = []
            self.optimizer.zero_grad(set_to_none=True)
            batches = next_batches()
            for batch in batches:
                loss = self.model(**{k: v.to(self.args.device) for k, v in batch.items()}).loss
                (loss / len(batches)).backward()
                losses.append(loss.item())
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
            self.schedule.step()
            self.step += 1
            self.seconds = time.time() - start
            loss = sum(losses) / len(losses)
            if self.step % log_every == 0:
                print(
                    f"{label} step {self.step:5d}  loss {loss:.4f}  {self.step / self.seconds:.2f} steps/s", flush=True
                )
            if evaluate and (self.step % eval_every == 0 or self.step == last):
                self.model.eval()
                with torch.no_grad():
                    result = evaluate(self.model)
                self.history.append({"step": self.step, "train_loss": round(loss, 4), **result})
                print(f"{label}    eval at step {self.step}: {result}", flush=True)
            if self.step % self.args.save_every == 0 or self.step == last:
                self.save()
        self.model.eval()
        return self


# ---------------------------------------------------------------- stage 2: pre-training


def pretraining_pairs(windows, tokenizer, rng: random.Random):
    sentinel_ids = tokenizer.convert_tokens_to_ids(sentinel_tokens(N_SENTINELS))
    pairs = [corrupt_ids(w, sentinel_ids, tokenizer.eos_token_id, 0.15, 3.0, rng) for w in windows]
    return [p[0] for p in pairs], [p[1] for p in pairs]


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


def pretrain(args, tokenizer, out: Path):
    windows = text_windows(tokenizer, pretraining_texts("train"), args.window)
    held = text_windows(tokenizer, pretraining_texts("val"), args.window)
    eval_rng = random.Random(args.seed + 7)
    held = eval_rng.sample(held, min(512, len(held)))
    inputs, labels = pretraining_pairs(held, tokenizer, eval_rng)
    eval_batches = [id_batch(inputs[i : i + 128], labels[i : i + 128]) for i in range(0, len(inputs), 128)]
    print(
        f"pre-training: {len(windows):,} windows of {args.window} pieces ({len(windows) * args.window:,} pieces), "
        f"{len(held)} held-out windows",
        flush=True,
    )
    rng = random.Random(args.seed + 1)
    model = new_model(args, tokenizer, args.seed)

    def next_batches():
        inputs, labels = pretraining_pairs([rng.choice(windows) for _ in range(args.pretrain_batch)], tokenizer, rng)
        return [id_batch(inputs, labels)]

    run = Run(
        model, args, out.with_name(out.name + "-state"), args.pretrain_steps, args.pretrain_lr, args.warmup, rng
    ).train(
        next_batches,
        lambda m: pretraining_eval(m, eval_batches),
        args.pretrain_eval_every,
        label="pretrain",
        stop_after=args.stop_after,
    )
    save_model_folder(run.model, tokenizer, out)
    info = {
        "windows": len(windows),
        "window": args.window,
        "pieces": len(windows) * args.window,
        "heldout_windows": len(held),
        "steps": run.step,
        "schedule_steps": args.pretrain_steps,
        "batch_size": args.pretrain_batch,
        "lr": args.pretrain_lr,
        "warmup": args.warmup,
        "noise_density": 0.15,
        "mean_span_length": 3.0,
        "train_seconds": round(run.seconds, 1),
        "history": run.history,
        "examples": span_examples(run.model, tokenizer, held[:4], random.Random(args.seed + 9)),
    }
    (out / "pretraining.json").write_text(json.dumps(info, indent=1, ensure_ascii=False) + "\n")
    return run.model


@torch.no_grad()
def span_examples(model, tokenizer, windows, rng) -> list[dict]:
    """Corrupted held-out windows, the true target and the model's greedy target, as text."""
    inputs, labels = pretraining_pairs(windows, tokenizer, rng)
    examples = []
    for source, target in zip(inputs, labels):
        out = model.generate(torch.tensor([source]), do_sample=False, max_new_tokens=len(target) + 8)
        examples.append(
            {
                "input": tokenizer.decode(source),
                "target": tokenizer.decode(target),
                "predicted": tokenizer.decode(out[0, 1:]),
            }
        )
    return examples


def save_model_folder(model, tokenizer, folder: Path):
    from transformers import GenerationConfig

    folder.mkdir(parents=True, exist_ok=True)
    model.generation_config = GenerationConfig(
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, do_sample=False, num_beams=1, max_new_tokens=48
    )
    model.cpu().save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)


# ---------------------------------------------------------------- stage 3: transfer to the classify task


def classify_sets(seed: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Distinct training e-mails in a seeded order (the first n are the training set of size n: nested sets)
    and every distinct held-out e-mail, as (source, target) pairs of the classify task."""

    def distinct(pairs):
        seen, out = set(), []
        for text, label in pairs:
            if text not in seen:
                seen.add(text)
                out.append((f"{CLASSIFY}: {text}", label))
        return out

    train = distinct(spam_examples("train"))
    random.Random(seed).shuffle(train)
    return train, distinct(spam_examples("val"))


def classify_accuracy(model, tokenizer, pairs) -> float:
    return text_to_text_accuracy(model.cpu().eval(), tokenizer, pairs)[CLASSIFY]


def transfer(args, tokenizer, pretrained: Path, work: Path) -> dict:
    """Fine-tune from the pre-trained and from random weights on `sizes` training e-mails, `transfer_repeats`
    times: repeat r draws its own training e-mails, batch order and random initial weights (seeds + r; r = 0 is the
    first checkpoint's single run), so the spread between repeats shows how much one run can be trusted."""
    results_file = work / "transfer.json"
    results = json.loads(results_file.read_text()) if results_file.is_file() else {"runs": []}
    for r in results["runs"]:
        r.setdefault("repeat", 0)  # results written before repeats existed
    done = {(r["init"], r["size"], r["repeat"]) for r in results["runs"]}
    first_train_pairs, eval_pairs = classify_sets(args.seed + 3)
    labels = [t for _, t in eval_pairs]
    results.update(
        {
            "task": CLASSIFY,
            "sizes": args.sizes,
            "repeats": args.transfer_repeats,
            "steps": args.transfer_steps,
            "batch_size": args.transfer_batch,
            "lr": args.transfer_lr,
            "warmup": args.transfer_warmup,
            "heldout_emails": len(eval_pairs),
            "available": len(first_train_pairs),
            "majority_baseline": round(max(labels.count(w) for w in set(labels)) / len(labels), 4),
        }
    )
    for repeat in range(args.transfer_repeats):
        train_pairs, _ = classify_sets(args.seed + 3 + repeat)
        for size in args.sizes:
            for init in args.inits:
                if (init, size, repeat) in done:
                    continue
                if init == "pretrained":
                    model = load_model(pretrained)
                else:
                    model = new_model(args, tokenizer, args.seed + repeat)
                rng = random.Random(args.seed + 5 + repeat)
                subset = train_pairs[:size]

                def next_batches(subset=subset, rng=rng):
                    return [text_batch(tokenizer, [rng.choice(subset) for _ in range(args.transfer_batch)])]

                state = work / f"transfer-{init}-{size}-{repeat}-state"
                run = Run(model, args, state, args.transfer_steps, args.transfer_lr, args.transfer_warmup, rng)
                run.train(next_batches, label=f"{init} n={size} repeat {repeat}")
                accuracy = classify_accuracy(run.model, tokenizer, eval_pairs)
                results["runs"].append(
                    {
                        "init": init,
                        "size": size,
                        "repeat": repeat,
                        "exact_match": round(accuracy, 4),
                        "train_seconds": round(run.seconds, 1),
                    }
                )
                print(f"transfer {init} n={size} repeat {repeat}: held-out exact match {accuracy:.4f}", flush=True)
                results_file.write_text(json.dumps(results, indent=1) + "\n")
                shutil.rmtree(state, ignore_errors=True)
    results["runs"] = [
        r
        for r in results["runs"]
        if r["size"] in args.sizes and r["init"] in args.inits and r["repeat"] < args.transfer_repeats
    ]
    results_file.write_text(json.dumps(results, indent=1) + "\n")
    return results


# ---------------------------------------------------------------- stage 4: export


@torch.no_grad()
def moby_dick_span_eval(model, tokenizer, window: int, n_windows: int, seed: int) -> dict:
    """Span corruption on n_windows held-out Moby-Dick windows: the mean of the per-window losses (each the mean
    over its target pieces) and the next-piece accuracy over all target pieces (teacher forcing)."""
    _, held = heldout_chapters(assets.moby_dick_chapters())
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
    import collections
    import re

    words = collections.Counter(re.findall(r"[A-Za-z]+", assets.moby_dick_text())).most_common(500)
    whole = [len(tokenizer.tokenize(w)) == 1 for w, _ in words]
    return {
        "prefixes": {task: tokenizer.tokenize(f"{task}: ") for task in T5_TASKS},
        "moby_dick_top_100_words_whole": sum(whole[:100]),
        "moby_dick_top_500_words_whole": sum(whole),
    }


def export(args, tokenizer, work: Path):
    from transformers import AutoTokenizer

    source, out = work / "pretrained", args.out
    out.mkdir(parents=True, exist_ok=True)
    for name in (
        "model.safetensors",
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ):
        shutil.copy(source / name, out / name)
    reloaded = AutoTokenizer.from_pretrained(out)
    assert reloaded.convert_tokens_to_ids("<extra_id_0>") == len(reloaded) - 1
    model = load_model(out).eval()
    pretraining = json.loads((source / "pretraining.json").read_text())
    pretraining.update(moby_dick_span_eval(model, tokenizer, args.window, 256, args.seed + 10))
    metrics = {
        "parameters": sum(p.numel() for p in model.parameters()),
        "model_safetensors_bytes": (out / "model.safetensors").stat().st_size,
        "vocab_size": len(tokenizer),
        "sentinels": N_SENTINELS,
        "tokenizer": piece_report(tokenizer),
        "pretraining": pretraining,
        "transfer": json.loads((work / "transfer.json").read_text()),
        "device": args.device,
        "threads": args.threads,
        "mkl_cbwr": os.environ["MKL_CBWR"],
        "torch": torch.__version__.split("+")[0],
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k not in ("work", "out")},
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1, ensure_ascii=False) + "\n")
    print("exported to", out, flush=True)


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/tiny-t5-work"), help="stage outputs, resumable")
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--stages", default="tokenizer,pretrain,transfer,export")
    parser.add_argument("--vocab-size", type=int, default=4000, help="learned pieces, <pad> </s> <unk> included")
    parser.add_argument("--max-number", type=int, default=99_999, help="numbers in the tokenizer's task inputs")
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--d-ff", type=int, default=512)
    parser.add_argument("--layers", type=int, default=3, help="encoder blocks = decoder blocks")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--window", type=int, default=64, help="pieces of text per pre-training example")
    parser.add_argument("--pretrain-steps", type=int, default=1200, help="length of the learning-rate schedule")
    parser.add_argument("--stop-after", type=int, default=None, help="end pre-training after this step")
    parser.add_argument("--pretrain-batch", type=int, default=64)
    parser.add_argument("--pretrain-lr", type=float, default=2e-3)
    parser.add_argument("--pretrain-eval-every", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=100, help="warm-up steps of pre-training")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10, 30, 100, 300], help="training e-mails in the transfer experiment"
    )
    parser.add_argument(
        "--inits",
        nargs="+",
        default=["pretrained", "scratch"],
        help="transfer runs to do: from the pre-trained weights, from random weights, or both",
    )
    parser.add_argument("--transfer-repeats", type=int, default=3, help="runs per (start, size), each its own draw")
    parser.add_argument("--transfer-steps", type=int, default=200)
    parser.add_argument("--transfer-batch", type=int, default=16)
    parser.add_argument("--transfer-lr", type=float, default=1e-3)
    parser.add_argument("--transfer-warmup", type=int, default=20)
    parser.add_argument("--save-every", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    stages = args.stages.split(",")

    torch.set_num_threads(args.threads)
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    from transformers import AutoTokenizer

    if not (work / "tokenizer" / "tokenizer.json").is_file():
        if "tokenizer" not in stages:
            raise SystemExit(f"no tokenizer in {work}: run the tokenizer stage first")
        start = time.time()
        train_tokenizer(args).save_pretrained(work / "tokenizer")
        print(f"tokenizer trained in {time.time() - start:.0f} s", flush=True)
    tokenizer = AutoTokenizer.from_pretrained(work / "tokenizer")
    print(f"tokenizer: {len(tokenizer)} pieces", flush=True)
    if "pretrain" in stages and not (work / "pretrained" / "pretraining.json").is_file():
        pretrain(args, tokenizer, work / "pretrained")
    if "transfer" in stages:
        transfer(args, tokenizer, work / "pretrained", work)
    if "export" in stages:
        export(args, tokenizer, work)


if __name__ == "__main__":
    main()
