"""Lecture 6's encoder-decoder on both ways of drawing the numbers: accuracy by number length, before and after.

Trains the encoder-decoder lecture 6 trained when this comparison was made (issue 14: Transformer(d_model=64,
h=4, N=2, d_ff=256, dropout=0.1), 600 steps of 64 pairs, lr 1e-3, warm-up 30, seed 0; the lecture's recipe has
changed since) once on
number_translation_dataset(draw="uniform") (every number equally likely: the data before issue 14) and once on
draw="by-length" (every length equally likely: the default now), then greedy-translates

- each data set's own 2,000 held-out numbers,
- the 28 one-word numbers (zero..twenty, thirty..ninety), marking those the model trained on,
- every held-out number below 1,000 and 500 held-out numbers of each longer length (none of them trained on by
  either model),

and prints exact match by length. One thread; about a minute of CPU per model. Run from the repository root:

    PYTHONPATH=lib .venv/bin/python tools/number_lengths.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import time

import course

course.prepare_process()  # before torch: the course's pinned numeric path
import scratch

# isort: split
import torch

from course.corpora import is_held_out
from course.number_words import (
    ENGLISH_TOKENS,
    GERMAN_TOKENS,
    ONE_WORD_NUMBERS,
    Vocabulary,
    accuracy_by_length,
    english_tokens,
    german_from_tokens,
    german_tokens,
    number_length,
    number_translation_dataset,
)
from scratch.l06_training import estimate_loss, train
from scratch.l06_transformer import Transformer, greedy_decode


def train_lecture6_model(data) -> Transformer:
    """The notebook's recipe, step for step (section 3 of lecture 6)."""
    src_vocab, tgt_vocab = data.src_vocab, data.tgt_vocab
    scratch.seed_everything(0)
    model = Transformer(len(src_vocab), len(tgt_vocab), d_model=64, h=4, N=2, d_ff=256, dropout=0.1, max_len=32)
    heldout_batch = (data.val_src[:500], data.val_tgt[:500, :-1], data.val_tgt[:500, 1:])
    batch_generator = torch.Generator().manual_seed(0)
    train(
        model,
        lambda: data.get_batch("train", 64, generator=batch_generator),
        steps=600,
        lr=1e-3,
        warmup=30,
        eval_fn=lambda m: estimate_loss(m, lambda: heldout_batch, iters=1),
        eval_every=60,
        progress=False,
    )
    return model


def translate(model, numbers: list[int]) -> list[str]:
    """The greedy German translation of each number."""
    src_vocab, tgt_vocab = Vocabulary(ENGLISH_TOKENS), Vocabulary(GERMAN_TOKENS)
    rows = [src_vocab.encode(english_tokens(n)) for n in numbers]
    width = max(map(len, rows))
    src = torch.tensor([row + [src_vocab.pad_id] * (width - len(row)) for row in rows])
    out = greedy_decode(model, src, tgt_vocab.bos_id, tgt_vocab.eos_id)
    return [german_from_tokens(tgt_vocab.decode(row)) for row in out]


def verdicts(numbers: list[int], german: list[str]) -> list[bool]:
    return [g == german_from_tokens(german_tokens(n)) for n, g in zip(numbers, german)]


def common_eval_set(per_length: int = 500, max_number: int = 99_999) -> list[int]:
    """Every held-out number below 1,000, and per_length random held-out numbers of each longer length."""
    rng = random.Random(1)
    numbers = [n for n in range(1000) if is_held_out(str(n))]
    for digits in range(4, len(str(max_number)) + 1):
        pool = [n for n in range(10 ** (digits - 1), min(10**digits, max_number + 1)) if is_held_out(str(n))]
        numbers += sorted(rng.sample(pool, per_length))
    return numbers


def table(numbers: list[int], correct: list[bool]) -> dict[str, list[int]]:
    return {str(d): [c, t] for d, (c, t) in accuracy_by_length(numbers, correct).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", default=None, help="write the results to this file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    scratch.seed_everything(0)
    common = common_eval_set()
    results = {}
    for draw in ("uniform", "by-length"):
        data = number_translation_dataset(seed=0, draw=draw)
        trained = set(data.train_numbers)
        lengths = [number_length(n) for n in data.train_numbers]
        share = {d: lengths.count(d) / len(lengths) for d in sorted(set(lengths))}
        start = time.process_time()
        model = train_lecture6_model(data)
        seconds = time.process_time() - start
        own = verdicts(data.val_numbers, translate(model, data.val_numbers))
        one_word_german = translate(model, ONE_WORD_NUMBERS)
        one_word = verdicts(ONE_WORD_NUMBERS, one_word_german)
        unseen = [n for n in common if n not in trained]
        common_ok = verdicts(unseen, translate(model, unseen))
        results[draw] = {
            "train_seconds_cpu": round(seconds, 1),
            "distinct_training_numbers": len(trained),
            "training_share_by_length": {str(d): round(s, 4) for d, s in share.items()},
            "one_word_numbers_in_training": sum(n in trained for n in ONE_WORD_NUMBERS),
            "own_val_exact_match": round(sum(own) / len(own), 4),
            "own_val_by_length": table(data.val_numbers, own),
            "one_word_correct": sum(one_word),
            "one_word_wrong": {n: g for n, g, ok in zip(ONE_WORD_NUMBERS, one_word_german, one_word) if not ok},
            "common_unseen_by_length": table(unseen, common_ok),
        }
        print(
            f"\n== draw={draw!r}: {len(trained):,} distinct training numbers, share by length "
            f"{ {d: f'{s:.3f}' for d, s in share.items()} }, {seconds:.0f} s CPU"
        )
        print(f"own held-out: {sum(own)}/{len(own)}; by length {table(data.val_numbers, own)}")
        print(
            f"one-word numbers: {sum(one_word)}/{len(one_word)} right "
            f"({results[draw]['one_word_numbers_in_training']} of them in training)"
        )
        for n, g, ok in zip(ONE_WORD_NUMBERS, one_word_german, one_word):
            if not ok:
                print(f"   wrong: {n} -> {g!r}" + (" (trained on)" if n in trained else " (never trained on)"))
        print(f"common held-out set (unseen by this model), by length: {table(unseen, common_ok)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
