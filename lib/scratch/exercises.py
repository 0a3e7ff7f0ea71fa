"""Tools for the exercise checks at the end of each lecture.

A check must pass only for a solution the student wrote. When an exercise asks for something PyTorch or
`scratch` already has (a softmax, a causal mask, top-k filtering), the check computes its reference first and
then calls the student's function inside `forbid(...)`, which makes those shortcuts fail with a hint:

    expected = torch.softmax(scores, dim=-1)                 # the reference, computed before
    with forbid("torch.softmax", "torch.Tensor.softmax", "torch.nn.functional.softmax",
                hint="write the softmax from exp and sum"):
        got = my_softmax(scores)
    assert torch.allclose(got, expected, atol=1e-6), "hint: ..."

A forbidden Python function fails however it is reached: by its module attribute, or through a name a student
imported earlier (`from scratch.attention import causal_mask`), because its code is swapped, not only its name.
A built-in (C) function is replaced by name only, so forbid every path to it (`torch.softmax`, the method, the
`functional` one), and let the check also test the property the exercise is about.
"""

from __future__ import annotations

import importlib
import types
from contextlib import contextmanager


def _resolve(dotted: str):
    """'torch.nn.functional.softmax' -> (the object that holds it, 'softmax')."""
    parts = dotted.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:-1]:
            owner = getattr(owner, name)
        if not hasattr(owner, parts[-1]):
            break
        return owner, parts[-1]
    raise ValueError(f"forbid: {dotted!r} names nothing that can be imported")


def _raising_code(message: str) -> types.CodeType:
    namespace: dict = {}
    exec(f"def shortcut(*args, **kwargs):\n    raise AssertionError({message!r})", namespace)
    return namespace["shortcut"].__code__


@contextmanager
def forbid(*names: str, hint: str):
    """While the block runs, calling any of `names` (dotted paths) raises AssertionError('hint: ...')."""
    if not names:
        raise ValueError("forbid: name at least one function")
    undo = []
    try:
        for dotted in names:
            owner, attribute = _resolve(dotted)
            original = getattr(owner, attribute)
            message = f"hint: {hint} (this exercise is solved without {dotted})"
            code = _raising_code(message)
            if isinstance(original, types.FunctionType) and not original.__code__.co_freevars:
                undo.append((original, "__code__", original.__code__))
                original.__code__ = code
            else:
                inherited = isinstance(owner, type) and attribute not in vars(owner)
                undo.append((owner, attribute, None if inherited else original))
                setattr(owner, attribute, types.FunctionType(code, {"__builtins__": __builtins__}, attribute))
        yield
    finally:
        for target, attribute, value in reversed(undo):
            if value is None:
                delattr(target, attribute)  # it was inherited: uncover the base class's again
            else:
                setattr(target, attribute, value)
