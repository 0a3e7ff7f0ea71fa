"""A small training loop that every lecture with a model to train reuses (lectures 6 onwards).

    pick_device     CUDA when there is a GPU, else the CPU
    eval_mode       `with eval_mode(model):` dropout off and no gradients, the previous mode restored after
    lr_factor       the learning-rate schedule: linear warm-up, then cosine decay (or a constant rate)
    sequence_loss   cross-entropy averaged over every position of every sequence (padding ignored)
    estimate_loss   the mean loss over a few batches, without gradients (for evaluation)
    train           AdamW + schedule + gradient clipping + periodic evaluation + a tqdm progress bar
    plot_history    train and eval loss against the step

A batch is a tuple of tensors whose last entry is the targets: (x, y) for a language model, where
logits = model(x), or (src, tgt_in, tgt_out) for an encoder-decoder, where logits = model(src, tgt_in).
Teacher forcing: the decoder reads the true previous tokens (tgt_in = [BOS, y_1, ...]) and is scored on
the next ones (tgt_out = [y_1, ..., EOS]), every position at once. Seeds: scratch.seed_everything.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from tqdm.auto import tqdm

import scratch
from scratch import validate


def pick_device() -> torch.device:
    """torch.device("cuda") when a GPU is available, else torch.device("cpu")."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@contextmanager
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """Dropout off and no gradients inside the `with`; the model's previous train/eval mode is restored after."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train(was_training)


def lr_factor(step: int, steps: int, warmup: int = 0, schedule: str = "cosine", min_factor: float = 0.1) -> float:
    """Multiplier of the peak learning rate at `step` (0-based) of `steps`.

    Warm-up: rises linearly to 1 over the first `warmup` steps (Adam's early updates are noisy, so start
    small). Then "cosine": falls along half a cosine from 1 to min_factor at the last step; "constant": 1.
    """
    validate.choice(schedule, "schedule", ("cosine", "constant"))
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    progress = (step - warmup) / max(1, steps - 1 - warmup)  # 0 after the warm-up, 1 at the last step
    return min_factor + (1.0 - min_factor) * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def sequence_loss(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    """Mean cross-entropy over all positions: logits (batch, T, V), targets (batch, T) ids.

    Positions whose target is ignore_index (padding) count neither in the sum nor in the mean.
    """
    if logits.dim() != 3 or targets.shape != logits.shape[:2]:
        raise ValueError(
            f"logits must be (batch, T, V) and targets (batch, T), got {tuple(logits.shape)} and {tuple(targets.shape)}"
        )
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=ignore_index)


def default_loss(model, batch) -> torch.Tensor:
    """batch = (*inputs, targets): logits = model(*inputs), then sequence_loss.
    If the model has a pad_id (the encoder-decoder Transformer does), padded targets are ignored."""
    *inputs, targets = batch
    return sequence_loss(model(*inputs), targets, ignore_index=getattr(model, "pad_id", -100))


def _to_device(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    return tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in batch)


def estimate_loss(model, get_batch: Callable, iters: int = 10, loss_fn: Callable = default_loss) -> float:
    """Mean of loss_fn over `iters` batches from get_batch(), in eval mode (no dropout), without gradients."""
    device = next(model.parameters()).device
    with eval_mode(model):
        losses = [loss_fn(model, _to_device(get_batch(), device)).item() for _ in range(iters)]
    return sum(losses) / len(losses)


@dataclass
class History:
    """What train() records: the loss and learning rate of every step, and every evaluation."""

    step: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    eval_step: list[int] = field(default_factory=list)
    eval_loss: list[float] = field(default_factory=list)


def train(
    model,
    get_batch: Callable,
    steps: int,
    *,
    lr: float = 1e-3,
    weight_decay: float = 0.01,
    betas: tuple[float, float] = (0.9, 0.98),
    warmup: int = 0,
    schedule: str = "cosine",
    min_lr_factor: float = 0.1,
    grad_clip: float | None = 1.0,
    loss_fn: Callable = default_loss,
    eval_fn: Callable | None = None,
    eval_every: int | None = None,
    on_eval: Callable | None = None,
    optimizer: torch.optim.Optimizer | None = None,
    device=None,
    seed: int = 0,
    progress: bool = True,
) -> History:
    """Train `model` for `steps` optimizer steps and return the History; the model is left in eval mode.

    get_batch()            a new training batch (a tuple of tensors, targets last); moved to the device here
    loss_fn(model, batch)  the scalar loss to minimise (default: cross-entropy over every position)
    eval_fn(model)         a float, e.g. the validation loss; called every eval_every steps (default: 10
                           times per run) and after the last one. on_eval(history) runs right after it (print
                           samples, redraw a plot). Both run in eval mode and without gradients.
    optimizer              default AdamW(lr, betas, weight_decay), decaying matrices only (not biases and
                           LayerNorm gains). The schedule (warm-up, then cosine to min_lr_factor · lr)
                           scales each parameter group's initial lr.
    grad_clip              rescale the gradient when its norm exceeds this (None: never).
    device                 default pick_device(); the model is moved there.
    seed                   scratch.seed_everything(seed) first, so the same seed and the same model give the
                           same losses (seed the model's initialisation too: seed_everything before building it).
    """
    steps = validate.integer(steps, "steps")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    if not 0 <= warmup <= steps:
        raise ValueError(f"warmup must be between 0 and steps = {steps}, got {warmup}")
    if grad_clip is not None and not grad_clip > 0:
        raise ValueError(f"grad_clip must be > 0 or None, got {grad_clip}")
    eval_every = max(1, steps // 10) if eval_every is None else validate.integer(eval_every, "eval_every")
    lr_factor(0, steps, warmup, schedule)  # validates the schedule name

    scratch.seed_everything(seed)
    device = pick_device() if device is None else torch.device(device)
    model.to(device)
    if optimizer is None:
        params = [p for p in model.parameters() if p.requires_grad]
        groups = [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
        optimizer = torch.optim.AdamW(groups, lr=lr, betas=betas)
    base_lrs = [group["lr"] for group in optimizer.param_groups]

    history = History()
    model.train()
    bar = tqdm(range(steps), desc="training", disable=not progress)
    for step in bar:
        factor = lr_factor(step, steps, warmup, schedule, min_lr_factor)
        for group, base_lr in zip(optimizer.param_groups, base_lrs):
            group["lr"] = base_lr * factor

        loss = loss_fn(model, _to_device(get_batch(), device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()

        history.step.append(step + 1)  # steps done so far
        history.train_loss.append(loss.item())
        history.lr.append(base_lrs[0] * factor)
        if (eval_fn or on_eval) and ((step + 1) % eval_every == 0 or step + 1 == steps):
            with eval_mode(model):  # no dropout while evaluating
                if eval_fn is not None:
                    history.eval_loss.append(float(eval_fn(model)))
                    history.eval_step.append(step + 1)
                if on_eval is not None:
                    on_eval(history)
        if progress:
            postfix = {"loss": f"{history.train_loss[-1]:.4f}"}
            if history.eval_loss:
                postfix["eval"] = f"{history.eval_loss[-1]:.4f}"
            bar.set_postfix(postfix, refresh=False)
    model.eval()
    return history


def plot_history(history: History, ax=None, title: str = "training loss", smooth: int = 1):
    """Train loss per step (a moving average over `smooth` steps) and eval loss, against the step.
    Returns the Axes; end the notebook cell with plt.show()."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    train_loss = np.asarray(history.train_loss, dtype=float)
    steps = np.asarray(history.step)
    if smooth > 1 and len(train_loss) >= smooth:
        train_loss = np.convolve(train_loss, np.ones(smooth) / smooth, mode="valid")
        steps = steps[smooth - 1 :]
    label = "train" if smooth <= 1 else f"train (mean of {smooth} steps)"
    ax.plot(steps, train_loss, label=label, alpha=0.8)
    if history.eval_loss:
        ax.plot(history.eval_step, history.eval_loss, "o-", label="eval")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss")
    ax.set_title(title)
    ax.legend()
    return ax
