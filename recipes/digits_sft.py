"""digits-sft (lecture 8, section 11): the spread of lecture 8's LoRA fine-tune of SmolLM2 over seeds.

Lecture 8 teaches SmolLM2-135M-Instruct to write an English number word in digits ("Write three hundred forty-six in
digits." -> "346") by supervised fine-tuning with LoRA (peft; rank 8 on every projection, attention and feed-forward,
of the last 15 layers), trained live with seed 0. This recipe runs the same fine-tune with every seed in `seeds` (the
seed of the adapters' initialisation and of the order of the training numbers) and records, per seed, the share of
the held-out numbers answered exactly right before and after, the training losses and the wall time. The numbers are
lecture 8's: 105 drawn from 1-999 with random.Random(0); the first 80 train (20 steps of 4), the last 25 test.

Only results are written (metrics.json): no adapter is kept. data/checkpoints/digits-sft/README.md gives the command.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from recipes.common import checkpoint_folder, cli, write_json

# isort: split
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.utils import logging

import scratch
from course import assets
from course.number_words import digits_conversation
from scratch.l06_training import hf_loss, train
from scratch.l08_sft import collate, reply_accuracy, sft_example

MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]  # every projection of a layer


@dataclass
class Config:
    out: Path = checkpoint_folder("digits-sft")
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    n_train: int = 80  # training numbers (each seen once)
    n_test: int = 25  # held-out numbers
    batch: int = 4
    lr: float = 5e-3
    warmup: int = 4
    rank: int = 8
    alpha: float = 16.0
    adapted_layers: int = 15  # the last this many of SmolLM2's 30 layers get adapters
    threads: int = 1


def lecture_numbers(n_train: int, n_test: int) -> tuple[list[int], list[int]]:
    """Lecture 8's draw: training numbers and held-out numbers, disjoint, from 1-999."""
    numbers = random.Random(0).sample(range(1, 1000), n_train + n_test)
    return numbers[:n_train], numbers[n_train:]


def lora_config(config: Config, n_layers: int) -> LoraConfig:
    layers = list(range(n_layers - config.adapted_layers, n_layers))
    return LoraConfig(
        r=config.rank,
        lora_alpha=config.alpha,
        target_modules=MODULES,
        layers_to_transform=layers,
        task_type="CAUSAL_LM",
    )


def fine_tune(config: Config, tokenizer, train_numbers: list[int], seed: int):
    """Lecture 8's fine-tune with `seed`: LoRA on SmolLM2, each training number once, in an order the seed draws."""
    scratch.seed_everything(seed)
    model = AutoModelForCausalLM.from_pretrained(assets.smollm2_dir(), dtype=torch.float32)
    student = get_peft_model(model, lora_config(config, model.config.num_hidden_layers))
    order = random.Random(seed).sample(train_numbers, len(train_numbers))
    examples = [sft_example(tokenizer, digits_conversation(n)) for n in order]
    batches = iter(
        [collate(examples[i : i + config.batch], tokenizer.pad_token_id) for i in range(0, len(order), config.batch)]
    )
    steps = len(order) // config.batch
    history = train(
        student, lambda: next(batches), steps, lr=config.lr, warmup=config.warmup, loss_fn=hf_loss, seed=seed
    )
    return student, history


def main(config: Config) -> dict:
    logging.set_verbosity_error()
    path = assets.smollm2_dir()
    tokenizer = AutoTokenizer.from_pretrained(path)
    train_numbers, test_numbers = lecture_numbers(config.n_train, config.n_test)
    tests = [digits_conversation(n) for n in test_numbers]
    metrics = {"train_numbers": len(train_numbers), "test_numbers": len(test_numbers), "config": {}, "seeds": []}
    metrics["config"] = {k: v for k, v in vars(config).items() if k not in ("out", "seeds", "threads")}
    base = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    metrics["before"] = reply_accuracy(base, tokenizer, tests)[0]
    for seed in config.seeds:
        start = time.perf_counter()
        student, history = fine_tune(config, tokenizer, train_numbers, seed)
        accuracy, replies = reply_accuracy(student, tokenizer, tests)
        metrics["seeds"].append(
            {
                "seed": seed,
                "after": accuracy,
                "train_loss": [round(loss, 4) for loss in history.train_loss],
                "wrong": [[n, r] for n, r in zip(test_numbers, replies) if r.strip() != str(n)],
                "wall_s": round(time.perf_counter() - start, 1),
            }
        )
        write_json(config.out / "metrics.json", metrics)
    return metrics


if __name__ == "__main__":
    cli(main, Config, __doc__)
