"""t5-new-task (lecture 9, section 8): a task the tiny T5 never saw, learned from its multitask weights and from
random weights at the same budget, over seeds and learning rates.

Lecture 9 teaches the course's tiny T5 (data/checkpoints/tiny-t5) the prefix "sort descending:" (a list of 3-7
numbers 0-99, answered largest first), which it never saw in training, from 200 training lists: 60 steps of 16 pairs
(course.text_to_text.fine_tune: AdamW, warm-up over the first tenth, cosine decay). It starts once from the multitask
weights and once from random weights of the same architecture, and scores exact match on 100 held-out lists. This
recipe runs both starts with every seed in `seeds` (the seed of the random weights and of the batches) at every
learning rate in `lrs`, so the random start gets the rate that suits it, and records the accuracy of each run and a
few of its answers. The lecture's live runs are seed 0 at lr 1e-3.

Only results are written (metrics.json): no weights are kept. data/checkpoints/t5-new-task/README.md gives the command.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from recipes.common import checkpoint_folder, cli, write_json

# isort: split
from transformers import AutoTokenizer, T5ForConditionalGeneration

import scratch
from course import checkpoints
from course.metrics import exact_match
from course.text_to_text import fine_tune, text_to_text_dataset, text_to_text_generate

STARTS = ("multitask", "random")


@dataclass
class Config:
    out: Path = checkpoint_folder("t5-new-task")
    task: str = "sort descending"
    n_train: int = 200  # distinct training lists (seed 0 of the train split)
    n_test: int = 100  # distinct held-out lists (seed 1 of the val split)
    steps: int = 60
    batch_size: int = 16
    lrs: list[float] = field(default_factory=lambda: [1e-3, 3e-3, 1e-2])
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    threads: int = 1


def start_model(start: str, seed: int) -> T5ForConditionalGeneration:
    """The tiny T5's multitask weights, or random weights of its architecture drawn with `seed`."""
    folder = checkpoints.checkpoint_dir("tiny-t5")
    scratch.seed_everything(seed)
    if start == "multitask":
        return T5ForConditionalGeneration.from_pretrained(folder)
    return T5ForConditionalGeneration(T5ForConditionalGeneration.from_pretrained(folder).config)


def main(config: Config) -> dict:
    tokenizer = AutoTokenizer.from_pretrained(checkpoints.checkpoint_dir("tiny-t5"))
    train_pairs = text_to_text_dataset(config.n_train, "train", seed=0, tasks=[config.task])
    test_pairs = text_to_text_dataset(config.n_test, "val", seed=1, tasks=[config.task])
    metrics = {"config": {k: v for k, v in vars(config).items() if k not in ("out", "threads")}, "runs": []}
    for start in STARTS:
        for lr in config.lrs:
            for seed in config.seeds:
                begin = time.perf_counter()
                model = start_model(start, seed)
                fine_tune(model, tokenizer, train_pairs, config.steps, lr=lr, batch_size=config.batch_size,
                          seed=seed, progress=False)  # fmt: skip
                answers = text_to_text_generate(model, tokenizer, [s for s, _ in test_pairs])
                run = {"start": start, "lr": lr, "seed": seed}
                run["exact_match"] = exact_match(answers, [t for _, t in test_pairs])
                run["answers"] = [[s, a] for (s, _), a in zip(test_pairs[:3], answers)]
                run["wall_s"] = round(time.perf_counter() - begin, 1)
                metrics["runs"].append(run)
                write_json(config.out / "metrics.json", metrics)
    return metrics


if __name__ == "__main__":
    cli(main, Config, __doc__)
