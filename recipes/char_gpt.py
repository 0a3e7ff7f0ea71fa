"""char-gpt (lecture 6, section 7): lecture 6's character-level GPT on Moby-Dick trained with more compute, so the
lecture can set its live run (240 steps of 32 windows) beside what longer training and a larger model buy.

Three variants, all GPT-2's kind (scratch.l06_gpt.GPT), 32 characters of context, trained with lecture 6's recipe
(AdamW, fused; clipping at 1.0; warm-up, then the cosine schedule down to a tenth of the peak), each with every seed
in `seeds` (the seed of the weights and of the batch order):

    live     the lecture's live run (d_model 128, h 4, N 2, d_ff 512: 0.41 M parameters), 240 steps of 32 windows;
             seed 0 is the run the lecture trains, the others give its spread (no weights kept)
    longer   the same model, 20 times the live run's steps
    larger   d_model 192, h 6, N 4, d_ff 768 (1.8 M parameters), windows of 32 characters, 64 per step

Every eval_every steps each records the loss on the lecture's fixed validation windows (4 x 64 windows drawn with
seeds 0-3), so metrics.json holds the loss against training compute (6 x parameters x characters, in FLOPs); at the
end, the loss on the whole validation text. Each variant's weights go to <out>/<variant>/model.safetensors (loaded by
course.checkpoints.load_char_gpt). data/checkpoints/char-gpt/README.md gives the command.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from recipes.common import checkpoint_folder, cli, write_json

# isort: split
import torch

from course.checkpoints import save_trained
from course.corpora import moby_dick_dataset
from scratch import seed_everything
from scratch.l06_gpt import GPT, GPTConfig
from scratch.l06_training import sequence_loss, train

CONTEXT = 32  # characters, as in lecture 6
SIZES = {
    "live": dict(d_model=128, h=4, N=2, d_ff=512),
    "longer": dict(d_model=128, h=4, N=2, d_ff=512),
    "larger": dict(d_model=192, h=6, N=4, d_ff=768),
}


@dataclass
class Config:
    out: Path = checkpoint_folder("char-gpt")
    variants: list[str] = field(default_factory=lambda: ["live", "longer", "larger"])
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])  # weights kept for the first only
    live_steps: int = 240  # lecture 6's live run
    longer_steps: int = 4800  # 20 x the live run's 240
    longer_batch: int = 32  # windows per step
    larger_steps: int = 1200
    larger_batch: int = 64
    lr: float = 6e-3  # the live run's peak rate (longer)
    larger_lr: float = 3e-3  # a wider, deeper model: half the rate
    warmup: int = 60
    eval_every: int = 200  # (the live variant: every 100 steps, as the lecture)
    eval_windows: int = 64  # windows per fixed validation batch (4 batches)
    full_val_chars: int | None = None  # the final loss over the first this many validation characters (None: all)
    threads: int = 1


def fixed_batches(text, windows: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Lecture 6's fixed validation windows: 4 batches drawn with seeds 0-3."""
    return [text.get_batch("val", windows, CONTEXT, generator=torch.Generator().manual_seed(i)) for i in range(4)]


@torch.no_grad()
def full_loss(model, ids: torch.Tensor) -> float:
    """Mean cross-entropy over a whole split cut into consecutive windows of CONTEXT characters (as lecture 6)."""
    windows = (len(ids) - 1) // CONTEXT
    inputs, targets = ids[: windows * CONTEXT].view(-1, CONTEXT), ids[1 : windows * CONTEXT + 1].view(-1, CONTEXT)
    losses = [sequence_loss(model(a), b).item() * len(b) for a, b in zip(inputs.split(256), targets.split(256))]
    return sum(losses) / windows


def train_variant(name: str, text, config: Config, seed: int) -> dict:
    steps, batch, lr = {
        "live": (config.live_steps, config.longer_batch, config.lr),
        "longer": (config.longer_steps, config.longer_batch, config.lr),
        "larger": (config.larger_steps, config.larger_batch, config.larger_lr),
    }[name]
    seed_everything(seed)
    model = GPT(GPTConfig.gpt2(vocab_size=text.vocab_size, max_len=CONTEXT, **SIZES[name]))
    params = sum(p.numel() for p in model.parameters())
    fixed = fixed_batches(text, config.eval_windows)

    def fixed_loss(m) -> float:
        return sum(sequence_loss(m(inputs), targets).item() for inputs, targets in fixed) / len(fixed)

    generator = torch.Generator().manual_seed(seed)
    start = time.time()
    history = train(
        model,
        lambda: text.get_batch("train", batch, CONTEXT, generator=generator),
        steps,
        lr=lr,
        warmup=config.warmup,
        eval_fn=fixed_loss,
        eval_every=max(1, config.eval_every // 2) if name == "live" else config.eval_every,
        seed=seed,
    )
    wall = time.time() - start
    characters_per_step = batch * CONTEXT
    if name != "live" and seed == config.seeds[0]:
        save_trained(model, config.out / name / "model.safetensors", **SIZES[name], context=CONTEXT)
    return {
        "seed": seed,
        "size": SIZES[name],
        "params": params,
        "steps": steps,
        "batch": batch,
        "context": CONTEXT,
        "lr": lr,
        "warmup": config.warmup,
        "curve": [
            {
                "step": step,
                "characters": step * characters_per_step,
                "flops": 6 * params * step * characters_per_step,
                "val_loss": round(loss, 4),
            }
            for step, loss in zip(history.eval_step, history.eval_loss)
        ],
        "full_val_loss": round(full_loss(model, text.val_data[: config.full_val_chars]), 4),
        "wall_s": round(wall, 1),
    }


def main(config: Config) -> dict:
    text = moby_dick_dataset()
    metrics = {"data": "Moby-Dick characters, lecture 6's split", "variants": {}}
    for name in config.variants:
        runs = []
        for seed in config.seeds:
            runs.append(train_variant(name, text, config, seed))
            # the first seed's run in full; every seed's losses, for the spread
            metrics["variants"][name] = runs[0] | {
                "seeds": [
                    {
                        "seed": r["seed"],
                        "val_loss": [row["val_loss"] for row in r["curve"]],
                        "full_val_loss": r["full_val_loss"],
                    }
                    for r in runs
                ]
            }
            write_json(config.out / "metrics.json", metrics)  # after each run, so a long run leaves what it has
    return metrics


if __name__ == "__main__":
    cli(main, Config, __doc__)
