"""The argument checks every module shares: fail early, with a message that names the problem.

    integer(value, name, minimum=1)             an int (numpy/torch ints too; not bool, 2.0 or "2") >= minimum
    integers(obj, *names)                       integer() on each named attribute of obj (a config's sizes)
    positive(value, name)                       a real number > 0, as a float (eps, rates)
    heads(d_model, h)                           h divides d_model; returns d_k = d_model / h
    real(value, name)                           a real number (not bool), as a float
    dropout(p)                                  a probability in [0, 1)
    choice(value, name, options)                one of a few names ("relu", "gelu", ...)
    token_id(value, vocab_size, name)           an int in 0..vocab_size-1
    token_ids(ids, vocab_size, max_len, name)   an integer tensor (batch, T) of ids in the vocabulary

Each returns the checked value, so a check and its use fit on one line: `self.N = validate.integer(N, "N")`.
Checks belong where a model or function is entered (constructors, forward of a whole model, generate), not in
every layer: inside a model the shapes are right by construction.
"""

from __future__ import annotations

import numbers
import operator

import torch


def integer(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got bool")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}") from None
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def integers(obj, *names: str) -> None:
    for name in names:
        integer(getattr(obj, name), name)


def heads(d_model: int, h: int) -> int:
    if d_model % h:
        raise ValueError(
            f"d_model ({d_model}) must be divisible by the number of heads h ({h}): each head gets d_k = d_model / h"
        )
    return d_model // h


def positive(value, name: str) -> float:
    if not real(value, name) > 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return float(value)


def real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def dropout(p) -> float:
    if not 0.0 <= real(p, "dropout") < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {p}")
    return float(p)


def choice(value, name: str, options):
    if value not in options:
        raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(map(str, options))}")
    return value


def token_id(value, vocab_size: int, name: str) -> int:
    value = integer(value, name, minimum=0)
    if value >= vocab_size:
        raise ValueError(f"{name} = {value} is outside the vocabulary 0..{vocab_size - 1}")
    return value


def token_ids(ids, vocab_size: int, max_len: float = float("inf"), name: str = "ids") -> torch.Tensor:
    if (
        not isinstance(ids, torch.Tensor)
        or ids.dtype.is_floating_point
        or ids.dtype.is_complex
        or ids.dtype == torch.bool
    ):
        found = ids.dtype if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise TypeError(f"{name} must be an integer tensor of token ids, got {found}")
    if ids.dim() != 2:
        raise ValueError(f"{name} must have shape (batch, length), got {tuple(ids.shape)}")
    if ids.numel() == 0:
        raise ValueError(f"{name} is empty: shape {tuple(ids.shape)}")
    if ids.shape[1] > max_len:
        raise ValueError(f"{name} is too long: {ids.shape[1]} tokens, but max_len = {max_len} positions")
    # vocab_size inf: any integers (a padding mask). On a GPU the check would wait for the device in every
    # forward pass; there nn.Embedding's own assert catches an id outside the vocabulary.
    if vocab_size != float("inf") and ids.device.type == "cpu":
        low, high = torch.aminmax(ids)
        if low < 0 or high >= vocab_size:
            raise ValueError(
                f"{name} contains token ids outside the vocabulary 0..{vocab_size - 1}: found {int(low)}..{int(high)}"
            )
    return ids
