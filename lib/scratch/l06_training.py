"""The training loop that every lecture with a model to train reuses (lectures 6 onwards), and the recipes too.

    pick_device     CUDA when there is a GPU, else the CPU
    eval_mode       `with eval_mode(model):` dropout off and no gradients, the previous mode restored after
    lr_factor       the learning-rate schedule: linear warm-up, then cosine decay (or a constant rate)
    sequence_loss   cross-entropy averaged over every position of every sequence (padding ignored)
    estimate_loss   the mean loss over a few batches, without gradients (for evaluation)
    decay_groups    AdamW's parameter groups: weight decay on the matrices, none on biases and norm gains
    Run             the loop: schedule + gradient clipping + periodic evaluation + a text progress bar
                    (course.runs.SavedRun adds saving and resuming, for the recipes' long runs)
    train           a Run with AdamW, for a model, a batch function and a number of steps (the lectures' call)

A batch is a tuple of tensors whose last entry is the targets: (x, y) for a language model, where
logits = model(x), or (src, tgt_in, tgt_out) for an encoder-decoder, where logits = model(src, tgt_in).
Teacher forcing: the decoder reads the true previous tokens (tgt_in = [BOS, y_1, ...]) and is scored on
the next ones (tgt_out = [y_1, ..., EOS]), every position at once. Seeds: scratch.seed_everything.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn import functional as F
from tqdm.std import tqdm  # plain text, also in Jupyter: a notebook stores it as one line, never a stale widget

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


def lr_factor(
    step: int,
    steps: int,
    warmup: int = 0,
    schedule: str = "cosine",
    min_factor: float = 0.1,
    decay_during_warmup: bool = False,
) -> float:
    """Multiplier of the peak learning rate at `step` (0-based) of `steps`.

    Warm-up: rises linearly to 1 over the first `warmup` steps (Adam's early updates are noisy, so start
    small). Then "cosine": falls along half a cosine from 1 to min_factor at the last step; "constant": 1.
    decay_during_warmup: the cosine starts at step 0 instead, and the warm-up ramp multiplies it.
    """
    validate.choice(schedule, "schedule", ("cosine", "constant"))
    ramp = min((step + 1) / warmup, 1.0) if warmup else 1.0
    start = 0 if decay_during_warmup else warmup
    if schedule == "constant" or step < start:
        return ramp
    progress = (step - start) / max(1, steps - 1 - start)  # 0 where the decay starts, 1 at the last step
    return ramp * (min_factor + (1.0 - min_factor) * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0))))


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


def hf_loss(model, batch: dict) -> torch.Tensor:
    """The loss a transformers model computes itself from a batch dict that holds its labels."""
    return model(**batch).loss


def _to_device(batch, device):
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: t.to(device) if isinstance(t, torch.Tensor) else t for k, t in batch.items()}
    return tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in batch)


def estimate_loss(model, get_batch: Callable, iters: int = 10, loss_fn: Callable = default_loss) -> float:
    """Mean of loss_fn over `iters` batches from get_batch(), in eval mode (no dropout), without gradients."""
    device = next(model.parameters()).device
    with eval_mode(model):
        losses = [loss_fn(model, _to_device(get_batch(), device)).item() for _ in range(iters)]
    return sum(losses) / len(losses)


def decay_groups(model: nn.Module, weight_decay: float = 0.01) -> list[dict]:
    """AdamW's parameter groups of the trainable parameters: weight decay on the matrices (dim >= 2), none on
    biases and norm gains (decay would pull a LayerNorm gain towards 0, not towards its neutral 1)."""
    params = [p for p in model.parameters() if p.requires_grad]
    return [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]


@dataclass
class History:
    """What a Run records: the loss and learning rate of every step, and every evaluation's results
    ({"step": ..., **evaluate(model)}); eval_step and eval_loss list the evaluations that report a "loss"."""

    step: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)

    @property
    def eval_step(self) -> list[int]:
        return [e["step"] for e in self.evals if "loss" in e]

    @property
    def eval_loss(self) -> list[float]:
        return [e["loss"] for e in self.evals if "loss" in e]


class Run:
    """One training run: each step sets every parameter group's lr to its initial lr × schedule(step), takes the
    batches next_batches() returns (a list: their mean loss is the step's loss, so several batches accumulate
    gradients), back-propagates loss_fn(model, batch), clips the gradient norm to grad_clip (None: never) and
    steps the optimizer. after_step(last) runs after every step (course.runs.SavedRun saves there).
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        steps: int,
        schedule: Callable[[int], float] = lambda step: 1.0,
        *,
        grad_clip: float | None = 1.0,
        loss_fn: Callable = default_loss,
        device=None,
    ):
        self.steps = validate.integer(steps, "steps")
        if grad_clip is not None and not grad_clip > 0:
            raise ValueError(f"grad_clip must be > 0 or None, got {grad_clip}")
        self.device = torch.device("cpu") if device is None else torch.device(device)
        self.model = model.to(self.device)
        self.optimizer = optimizer
        self.base_lrs = [group["lr"] for group in optimizer.param_groups]
        self.schedule = schedule
        self.grad_clip = grad_clip
        self.loss_fn = loss_fn
        self.step = 0
        self.seconds = 0.0
        self.history = History()

    def train(
        self,
        next_batches: Callable[[], list],
        evaluate: Callable[[nn.Module], dict] | None = None,
        eval_every: int | None = None,
        on_eval: Callable[[History], None] | None = None,
        stop_after: int | None = None,
        progress: bool = True,
        label: str = "training",
    ) -> Run:
        """Train from the current step to the last (or to stop_after: the schedule still spans all steps).

        evaluate(model) -> a dict of results, recorded in the history every eval_every steps (default: 10 times
        per run) and after the last step; on_eval(history) runs right after it. Both run in eval mode without
        gradients. Returns the Run; the model is left in eval mode.
        """
        last = self.steps if stop_after is None else min(validate.integer(stop_after, "stop_after"), self.steps)
        eval_every = max(1, self.steps // 10) if eval_every is None else validate.integer(eval_every, "eval_every")
        started = time.time() - self.seconds
        bar = tqdm(range(self.step, last), desc=label, initial=self.step, total=last, disable=not progress)
        for step in bar:
            factor = self.schedule(step)
            for group, base_lr in zip(self.optimizer.param_groups, self.base_lrs):
                group["lr"] = base_lr * factor
            self.model.train()
            batches = next_batches()
            self.optimizer.zero_grad(set_to_none=True)
            losses = []
            for batch in batches:
                loss = self.loss_fn(self.model, _to_device(batch, self.device))
                (loss / len(batches)).backward()
                losses.append(loss.item())
            if self.grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
            self.optimizer.step()
            self.step = step + 1
            self.seconds = time.time() - started
            self.history.step.append(self.step)
            self.history.train_loss.append(sum(losses) / len(losses))
            self.history.lr.append(self.base_lrs[0] * factor)
            if (evaluate or on_eval) and (self.step % eval_every == 0 or self.step == last):
                with eval_mode(self.model):
                    if evaluate is not None:
                        self.history.evals.append({"step": self.step, **evaluate(self.model)})
                    if on_eval is not None:
                        on_eval(self.history)
            self.after_step(last)
            if progress:
                postfix = {"loss": f"{self.history.train_loss[-1]:.4f}"}
                if self.history.eval_loss:
                    postfix["eval"] = f"{self.history.eval_loss[-1]:.4f}"
                bar.set_postfix(postfix, refresh=False)
        self.model.eval()
        return self

    def after_step(self, last: int) -> None:
        """Runs after every step (last: the step this call of train stops at); nothing here."""


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
    optimizer              default AdamW(lr, betas, weight_decay, fused=True) on decay_groups(model). The schedule
                           (warm-up, then cosine to min_lr_factor · lr) scales each parameter group's initial lr.
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
    lr_factor(0, steps, warmup, schedule)  # validates the schedule name

    scratch.seed_everything(seed)
    device = pick_device() if device is None else torch.device(device)
    model.to(device)
    if optimizer is None:
        # fused: the update in one kernel per tensor, whose square root is the CPU's own (course.numerics)
        optimizer = torch.optim.AdamW(decay_groups(model, weight_decay), lr=lr, betas=betas, fused=True)
    run = Run(
        model,
        optimizer,
        steps,
        lambda step: lr_factor(step, steps, warmup, schedule, min_lr_factor),
        grad_clip=grad_clip,
        loss_fn=loss_fn,
        device=device,
    )
    evaluate = None if eval_fn is None else lambda m: {"loss": float(eval_fn(m))}
    run.train(lambda: [get_batch()], evaluate, eval_every, on_eval, progress=progress)
    return run.history
