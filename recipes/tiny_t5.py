"""tiny-t5 (lecture 9): one encoder-decoder trained from scratch on four text-to-text tasks chosen by a prefix.

    translate English to German: twenty-three      -> dreiundzwanzig
    translate German to English: dreiundzwanzig    -> twenty-three
    reverse: k d a x                               -> x a d k
    sort: 42 7 19                                  -> 7 19 42

The data comes from course.text_to_text; held-out inputs are fixed by a hash and never trained on.

1. a Unigram tokenizer (SentencePiece, the algorithm and library T5 uses: "▁" marks a word start, digits always
   single pieces) learned from 20,000 generated task pairs and the sentences of Moby-Dick's training chapters, as
   transformers' T5Tokenizer (<pad> = 0, </s> = 1, <unk> = 2); a stage started from --init-from keeps its tokenizer;
2. a small T5ForConditionalGeneration (relative position buckets, no absolute positions) trained with AdamW on
   freshly drawn mixed-task batches (teacher forcing), warm-up and cosine decay (scratch.l06_training.Run);
3. greedy exact match per task on held-out inputs, written to metrics.json beside the weights, config, generation
   config and tokenizer files. A later stage adds its steps, time and history to the earlier stages'.

data/checkpoints/tiny-t5/README.md gives the three commands that made the shipped checkpoint.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import random
import re
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from recipes import fast_path  # noqa: F401  (first: MKL's fast path, before torch loads)
from recipes.common import checkpoint_folder, cli, write_json

# isort: split
import sentencepiece as spm
import torch
from transformers import AutoTokenizer, GenerationConfig, T5Config, T5ForConditionalGeneration, T5Tokenizer

from course import corpora
from course.text_to_text import TEXT_TO_TEXT_TASKS, text_to_text_accuracy, text_to_text_dataset, text_to_text_example
from scratch.l06_training import Run, hf_loss, lr_factor
from scratch.l07_masking import IGNORE_INDEX


@dataclass
class Config:
    out: Path = checkpoint_folder("tiny-t5")
    init_from: Path | None = None  # continue training the model and tokenizer in this folder
    steps: int = 2500
    batch_size: int = 64  # pairs per step, spread evenly over the tasks
    lr: float = 2e-3
    warmup: int = 200
    vocab_size: int = 1000
    d_model: int = 128
    d_ff: int = 512
    layers: int = 3  # encoder layers = decoder layers
    heads: int = 4
    eval_every: int = 500
    n_eval: int = 1000  # held-out inputs per task in the final evaluation
    max_number: int = 99_999  # translate the numbers 0..max_number
    tokenizer_pairs: int = 5000  # generated pairs per task that the tokenizer learns from
    tokenizer_chapters: int | None = None  # Moby-Dick's training chapters it learns from (None: all)
    seed: int = 0
    threads: int = 1
    device: str = "cpu"


def train_tokenizer(config: Config) -> T5Tokenizer:
    """A Unigram vocabulary learned by SentencePiece from generated task pairs and Moby-Dick's training sentences (T5
    learned its vocabulary from general text; the task text alone is too small and repetitive for the algorithm to
    keep even `translate` whole). Digits are always single pieces (split_digits).

    The sentences are cut by a plain regex, not course.corpora.split_sentences: SentencePiece skips lines over 4,192
    bytes, so the cut decides its input, and this one reproduces the shipped tokenizer exactly."""
    rng = random.Random(config.seed)
    corpus = []
    for _ in range(config.tokenizer_pairs):
        for task in TEXT_TO_TEXT_TASKS:
            corpus += text_to_text_example(task, rng, "train", config.max_number)
    train_chapters, _ = corpora.heldout_chapters(corpora.moby_dick_chapters())
    for chapter in train_chapters[: config.tokenizer_chapters]:
        corpus += [s for s in re.split(r"(?<=[.!?])\s+", " ".join(chapter["text"].split())) if s]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus),
        model_writer=model,
        vocab_size=config.vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        split_digits=True,
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        num_threads=1,
        minloglevel=2,
    )
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    tokenizer = T5Tokenizer(
        vocab=[(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())], extra_ids=0
    )
    assert (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id) == (0, 1, 2)
    for text in corpus[:2000:7]:  # the wrapped tokenizer splits as SentencePiece does
        assert tokenizer.tokenize(text) == sp.encode(text, out_type=str), text
    return tokenizer


def new_model(config: Config, vocab_size: int) -> T5ForConditionalGeneration:
    """A T5 of the config's size from random weights (seed them first)."""
    t5 = T5Config(
        vocab_size=vocab_size,
        d_model=config.d_model,
        d_kv=config.d_model // config.heads,
        d_ff=config.d_ff,
        num_layers=config.layers,
        num_decoder_layers=config.layers,
        num_heads=config.heads,
        relative_attention_num_buckets=32,
        relative_attention_max_distance=128,
        dropout_rate=0.0,
        feed_forward_proj="relu",
        tie_word_embeddings=True,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    return T5ForConditionalGeneration(t5)


def save_folder(model, tokenizer, folder: Path) -> None:
    """The model (with greedy decoding as its generation config) and tokenizer as a transformers folder."""
    folder.mkdir(parents=True, exist_ok=True)
    model.generation_config = GenerationConfig(
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, do_sample=False, num_beams=1, max_new_tokens=48
    )
    model.cpu().save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)


def main(config: Config) -> dict:
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    if config.init_from:
        tokenizer = AutoTokenizer.from_pretrained(config.init_from)
        model = T5ForConditionalGeneration.from_pretrained(config.init_from, use_safetensors=True)
    else:
        tokenizer = train_tokenizer(config)
        model = new_model(config, len(tokenizer))
    previous = {}  # when continuing: the earlier stages' metrics, so that steps and time add up
    if config.init_from and (config.init_from / "metrics.json").is_file():
        previous = json.loads((config.init_from / "metrics.json").read_text())
    steps_before = previous.get("steps", 0)
    quick_eval = text_to_text_dataset(100, "val", seed=config.seed + 1, max_number=config.max_number)
    per_task = config.batch_size // len(TEXT_TO_TEXT_TASKS)

    def next_batches():
        pairs = [
            text_to_text_example(task, rng, "train", config.max_number)
            for task in TEXT_TO_TEXT_TASKS
            for _ in range(per_task)
        ]
        batch = tokenizer([s for s, _ in pairs], text_target=[t for _, t in pairs], return_tensors="pt", padding=True)
        batch["labels"][batch["labels"] == tokenizer.pad_token_id] = IGNORE_INDEX  # no loss on padding
        return [dict(batch)]

    def evaluate(model) -> dict:
        accuracy = text_to_text_accuracy(model.cpu(), tokenizer, quick_eval)
        model.to(config.device)
        return accuracy

    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01)
    schedule = partial(
        lr_factor, steps=config.steps + 1, warmup=config.warmup, min_factor=0.0, decay_during_warmup=True
    )
    run = Run(model, optimizer, config.steps, schedule, loss_fn=hf_loss, device=config.device)
    run.train(next_batches, evaluate, config.eval_every)

    model = model.cpu().eval()
    final_eval = text_to_text_dataset(config.n_eval, "val", seed=config.seed + 2, max_number=config.max_number)
    accuracy = text_to_text_accuracy(model, tokenizer, final_eval)
    save_folder(model, tokenizer, config.out)
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(config).items() if k != "out"}
    history = [
        {"step": steps_before + e["step"], "loss": round(run.history.train_loss[e["step"] - 1], 4)}
        | {task: round(a, 4) for task, a in e.items() if task != "step"}
        for e in run.history.evals
    ]
    metrics = {
        "exact_match": {task: round(a, 4) for task, a in accuracy.items()},
        "eval": f"greedy decoding, {config.n_eval} held-out inputs per task "
        f"(course.text_to_text.text_to_text_dataset({config.n_eval}, 'val', seed={config.seed + 2}, "
        f"max_number={config.max_number}))",
        "max_number": config.max_number,
        "parameters": sum(p.numel() for p in model.parameters()),
        "model_safetensors_bytes": (config.out / "model.safetensors").stat().st_size,
        "vocab_size": len(tokenizer),
        "steps": steps_before + config.steps,
        "batch_size": config.batch_size,
        "pairs_seen": previous.get("pairs_seen", 0) + config.steps * per_task * len(TEXT_TO_TEXT_TASKS),
        "train_seconds": round(previous.get("train_seconds", 0) + run.seconds, 1),
        "device": config.device,
        "threads": config.threads,
        "mkl_cbwr": os.environ.get("MKL_CBWR"),
        "torch": torch.__version__,
        "stages": previous.get("stages", [previous["args"]] if "args" in previous else []) + [settings],
        "history": previous.get("history", []) + history,
    }
    write_json(config.out / "metrics.json", metrics)
    return metrics


if __name__ == "__main__":
    start = time.time()
    result = cli(main, Config, __doc__)
    print("held-out exact match:", result["exact_match"], f"({time.time() - start:.0f} s)")
