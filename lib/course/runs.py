"""A training run that saves as it goes and resumes where it stopped: the recipes' long runs.

SavedRun   scratch.l06_training.Run with a folder: every save_every steps (and at the end) it saves there, in one
           file written atomically, the trainable tensors, the optimizer's state, the step, the history, the
           seconds spent and the random state of torch and of `rng` (the random.Random or torch.Generator that
           draws the data); a SavedRun built again with the same arguments on the same folder resumes from
           there, so a long training can be stopped and continued with the same result.
"""

from __future__ import annotations

import dataclasses
import os
import random
from pathlib import Path

import torch

from scratch import validate
from scratch.l06_training import History, Run


class SavedRun(Run):
    def __init__(
        self,
        *args,
        folder: Path | str | None,
        save_every: int = 200,
        rng: random.Random | torch.Generator | None = None,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.folder = None if folder is None else Path(folder)
        self.save_every = validate.integer(save_every, "save_every")
        self.rng = rng
        if self.folder is not None and (self.folder / "state.pt").is_file():
            self._resume()

    def after_step(self, last: int) -> None:
        if self.folder is not None and (self.step % self.save_every == 0 or self.step == last):
            self._save()

    def _save(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        state = {
            "trained": {name: p.detach().cpu() for name, p in self.model.named_parameters() if p.requires_grad},
            "optimizer": self.optimizer.state_dict(),
            "step": self.step,
            "seconds": self.seconds,
            "history": dataclasses.asdict(self.history),
            "torch_rng": torch.get_rng_state(),
            "rng": None if self.rng is None else _rng_state(self.rng),
        }
        torch.save(state, self.folder / "state.tmp")
        os.replace(self.folder / "state.tmp", self.folder / "state.pt")  # a run killed while saving keeps the last

    def _resume(self) -> None:
        state = torch.load(self.folder / "state.pt", weights_only=True)
        self.model.load_state_dict(state["trained"], strict=False)
        self.optimizer.load_state_dict(state["optimizer"])
        self.step = state["step"]
        self.seconds = state["seconds"]
        self.history = History(**state["history"])
        torch.set_rng_state(state["torch_rng"])
        if self.rng is not None:
            _set_rng_state(self.rng, state["rng"])


def _rng_state(rng):
    return rng.get_state() if isinstance(rng, torch.Generator) else rng.getstate()


def _set_rng_state(rng, state) -> None:
    if isinstance(rng, torch.Generator):
        rng.set_state(state)
    else:
        rng.setstate(state)
