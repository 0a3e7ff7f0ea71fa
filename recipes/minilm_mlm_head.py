"""minilm-mlm-head (lecture 7, superseded by minilm-lora-mlm): a fill-mask model for all-MiniLM-L6-v2 on a CPU in a
few minutes, two ways compared on the same held-out masked words:

    head     BERT's MLM head (dense + GELU + LayerNorm, decoder tied to MiniLM's frozen word embeddings, plus a bias:
             0.18 M trainable numbers) trained on the FROZEN MiniLM encoder, whose outputs at the masked positions
             are computed once, so training runs only the head;
    scratch  a small BERT (4 layers, 4 heads, hidden 256, the same WordPiece vocabulary) pre-trained from random
             weights on the same text with the same objective.

The one with the better held-out top-1 is saved. Data: Moby-Dick, chapters 10, 20, ..., 130 held out. Training masks
15 % of the tokens with BERT's 80/10/10 rule; the test hides 15 % of the held-out whole words that are single
WordPiece tokens behind [MASK]. data/checkpoints/minilm-mlm-head/README.md gives the command.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from recipes.common import MINILM, checkpoint_folder, cli, write_json
from recipes.minilm_lora_mlm import MAX_LEN, QUICK_SAMPLE, masked_lm_loss, moby_dick_windows

# isort: split
import torch
import torch.nn.functional as F
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

from course import assets
from course.bert_tasks import masked_word_eval_set
from course.checkpoints import MLM_HEADS, minilm_for, save_trained
from course.metrics import fill_mask_accuracy
from scratch.l06_training import Run, lr_factor
from scratch.l07_masking import IGNORE_INDEX, mask_tokens


@dataclass
class Config:
    out: Path = checkpoint_folder("minilm-mlm-head")
    variants: list[str] = field(default_factory=lambda: ["head", "scratch"])
    maskings: int = 1  # masking passes over the training windows (head)
    head_steps: int = 1500
    head_lr: float = 5e-3
    batch: int = 256  # masked positions per head step
    scratch_steps: int = 524  # the shipped run gave the small BERT the head's wall time, 968 s: 524 steps
    scratch_schedule_steps: int = 300  # its learning rate falls to 0 at this step and stays there
    scratch_lr: float = 1e-3
    scratch_batch: int = 32
    max_windows: int | None = None  # use only the first windows of each split (for a quick test of the recipe)
    seed: int = 0
    threads: int = 1


def masked(ids: torch.Tensor, tokenizer, generator: torch.Generator):
    """BERT's masking of 15 % of the tokens, never the special ones."""
    special = torch.isin(ids, torch.tensor(tokenizer.all_special_ids))
    return mask_tokens(ids, special, tokenizer.mask_token_id, len(tokenizer), generator=generator)


def train_head(tokenizer, windows, config: Config) -> tuple[BertForMaskedLM, dict]:
    start = time.time()
    torch.manual_seed(config.seed)
    model = minilm_for(BertForMaskedLM, MLM_HEADS, lora_rank=None).eval()
    model.set_attn_implementation("eager")
    generator = torch.Generator().manual_seed(config.seed)
    features, targets = [], []
    ids_all = torch.tensor(windows)
    with torch.no_grad():  # the encoder's outputs at the picked positions, once per masking pass
        for _ in range(config.maskings):
            for i in range(0, len(ids_all), 64):
                inputs, labels = masked(ids_all[i : i + 64], tokenizer, generator)
                hidden = model.bert(input_ids=inputs).last_hidden_state  # (batch, T, d_model)
                features.append(hidden[labels != IGNORE_INDEX])
                targets.append(labels[labels != IGNORE_INDEX])
    features, targets = torch.cat(features), torch.cat(targets)
    encode_s = time.time() - start
    head = model.cls.predictions
    optimizer = torch.optim.AdamW(
        [p for p in head.parameters() if p.requires_grad], lr=config.head_lr, weight_decay=0.01
    )
    order = torch.randperm(len(features), generator=generator)
    draws = itertools.count()

    def next_batches():
        index = order[(torch.arange(config.batch) + next(draws) * config.batch) % len(order)]
        return [(features[index], targets[index])]

    schedule = partial(lr_factor, steps=config.head_steps + 1, warmup=20, min_factor=0.0)
    run = Run(
        head,
        optimizer,
        config.head_steps,
        schedule,
        grad_clip=None,
        loss_fn=lambda h, b: F.cross_entropy(h(b[0]), b[1]),
    )
    run.train(next_batches, label="head")
    info = {
        "trainable_params": sum(p.numel() for p in head.parameters() if p.requires_grad),
        "masked_positions": len(features),
        "maskings_per_window": config.maskings,
        "steps": config.head_steps,
        "batch": config.batch,
        "lr": config.head_lr,
        "encode_s": round(encode_s, 1),
        "wall_s": round(time.time() - start, 1),
        "final_loss": round(run.history.train_loss[-1], 3),
    }
    return model.eval(), info


def train_scratch(tokenizer, windows, config: Config) -> tuple[BertForMaskedLM, dict]:
    torch.manual_seed(config.seed)
    bert = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=256,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=1024,
        max_position_embeddings=MAX_LEN,
        attn_implementation="eager",
    )
    model = BertForMaskedLM(bert)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.scratch_lr, weight_decay=0.01)
    generator = torch.Generator().manual_seed(config.seed)
    ids_all = torch.tensor(windows)

    def next_batches():
        return [
            masked(
                ids_all[torch.randint(len(ids_all), (config.scratch_batch,), generator=generator)], tokenizer, generator
            )
        ]

    def schedule(step: int) -> float:  # the learning rate falls to 0 at scratch_schedule_steps and stays there
        return lr_factor(
            min(step, config.scratch_schedule_steps - 1), config.scratch_schedule_steps + 1, 30, min_factor=0.0
        )

    run = Run(model, optimizer, config.scratch_steps, schedule, loss_fn=masked_lm_loss).train(
        next_batches, label="small BERT"
    )
    info = {
        "params": sum(p.numel() for p in model.parameters()),
        "config": "4 layers, 4 heads, hidden 256, ff 1024",
        "steps": run.step,
        "batch": config.scratch_batch,
        "lr": config.scratch_lr,
        "wall_s": round(run.seconds, 1),
        "final_loss": round(run.history.train_loss[-1], 3),
    }
    return model, info


def main(config: Config) -> dict:
    tokenizer = AutoTokenizer.from_pretrained(assets.minilm_dir())
    train_windows, held_windows, held_chapters = moby_dick_windows(tokenizer)
    train_windows, held_windows = train_windows[: config.max_windows], held_windows[: config.max_windows]
    examples = masked_word_eval_set(tokenizer, held_windows, seed=0)
    trainers = {"head": train_head, "scratch": train_scratch}
    results, models = {}, {}
    for variant in config.variants:
        models[variant], results[variant] = trainers[variant](tokenizer, train_windows, config)
        results[variant]["held_out"] = fill_mask_accuracy(models[variant], examples)
        results[variant]["quick_sample"] = fill_mask_accuracy(models[variant], examples[:QUICK_SAMPLE])
    # the baseline any model must beat: always guess the 5 most frequent training tokens, ignoring the context
    frequent = torch.bincount(torch.tensor(train_windows).flatten(), minlength=len(tokenizer))
    frequent[tokenizer.all_special_ids] = 0
    guesses = frequent.topk(5).indices
    targets = torch.cat([e[2] for e in examples])
    baseline = {
        "top1": (targets == guesses[0]).float().mean().item(),
        "top5": torch.isin(targets, guesses).float().mean().item(),
        "n": len(targets),
        "guesses": tokenizer.convert_ids_to_tokens(guesses),
    }
    chosen = max(models, key=lambda name: results[name]["held_out"]["top1"])
    metrics = {
        "chosen": chosen,
        "why": "higher top-1 accuracy on the held-out masked words, for a comparable CPU budget",
        "evaluation": {
            "corpus": "Moby-Dick",
            "held_out_chapters": held_chapters,
            "window_tokens": MAX_LEN,
            "windows": len(examples),
            "masked_words": sum(len(e[2]) for e in examples),
            "rule": "15 % of the whole words that are single WordPiece tokens, replaced by [MASK]",
            "quick_sample_windows": QUICK_SAMPLE,
            "seed": 0,
        },
        "training": {
            "windows": len(train_windows),
            "masking": "15 % of tokens; 80 % [MASK], 10 % random, 10 % kept",
            "threads": config.threads,
            "seed": config.seed,
        },
        "unigram_baseline": baseline,
        "variants": results,
    }
    if chosen == "head":
        save_trained(models["head"], config.out / "model.safetensors", base=MINILM, made_by=__spec__.name)
    else:  # the small BERT wins: save it whole
        models["scratch"].save_pretrained(config.out)
    write_json(config.out / "metrics.json", metrics)
    return metrics


if __name__ == "__main__":
    result = cli(main, Config, __doc__)
    print({name: r["held_out"] for name, r in result["variants"].items()}, "chosen:", result["chosen"])
