"""What the lectures' checks share, bound when this module is first imported (by an exercise notebook's set-up cell,
before any solution runs).

A solution cell runs in the student's kernel, in the same process as the checks, so it can rebind anything a module
looks up when a check runs: `torch.allclose = lambda *a, **k: True`, `builtins.abs = ...`, `math.isclose = ...`,
`course.exercises.forbid = ...`, `sys.modules["torch"] = ...`. A check module therefore looks up none of these when
it runs:

- `BUILTINS` is a copy of the built-ins as they are now; a check module makes it its own (`__builtins__ = BUILTINS`
  before its first function), so its functions' `abs`, `len`, `isinstance`, ... are these;
- `torch`, `F` and `math` here are copies of those modules' names as they are now (`frozen`), so `torch.allclose`
  in a check is PyTorch's, whatever `torch.allclose` names later;
- `tools` is a private copy of `course.exercises` (forbid and the instruments), not the module a notebook imports,
  with these built-ins and this `torch`.

What a solution returns is checked by type before it is compared: `tensor(...)` accepts only a `torch.Tensor` of
exact type, `plain(...)` only ints, floats, strings, lists, tuples and dicts of exact types, whose `==` is Python's;
a subclass whose `==`, `!=` or `-` always agrees is refused with a hint.

Every call of the student's code goes through `call(...)`: it runs under a time budget (`deadline`: SIGALRM on the
main thread, and the time measured afterwards too) and turns an unexpected error into a hint that names the call.
"""

from __future__ import annotations

import builtins
import importlib.util
import math as _math
import signal
import threading
import time
import types
from contextlib import contextmanager

import torch as _torch
import torch.nn.functional as _F
from torch.utils._python_dispatch import _len_torch_dispatch_stack

BUILTINS = dict(vars(builtins))
__builtins__ = BUILTINS  # this module's functions too look up the built-ins as they were at import


def frozen(module: types.ModuleType) -> types.SimpleNamespace:
    """The module's names as they are now: later assignments to the module's attributes do not reach the copy."""
    return types.SimpleNamespace(**{name: value for name, value in vars(module).items() if not name.startswith("__")})


torch = frozen(_torch)
F = frozen(_F)
math = frozen(_math)
_tolist = _torch.Tensor.tolist
_allclose, _equal, _isfinite = _torch.allclose, _torch.equal, _torch.isfinite
_monotonic = time.monotonic
_set_timer, _get_timer, _set_handler = signal.setitimer, signal.getitimer, signal.signal
_main_thread, _current_thread = threading.main_thread, threading.current_thread
_len_function_modes, _torch_function_enabled = _torch._C._len_torch_function_stack, _torch._C._is_torch_function_enabled


def _private_copy(name: str) -> types.ModuleType:
    """A fresh copy of module `name`, not in sys.modules, with these built-ins and this frozen torch."""
    spec = importlib.util.find_spec(name)
    module = importlib.util.module_from_spec(spec)
    module.__builtins__ = BUILTINS
    spec.loader.exec_module(module)
    module.torch = torch
    return module


tools = _private_copy("course.exercises")

# PyTorch loads some of its modules the first time a mode handles a call (torch._dynamo, and sympy with it): load them
# now, before any solution runs, so that a later solution's rebound built-ins cannot reach their import.
with tools.CountOps(), tools.forbid("torch.softmax", hint="-"):
    _torch.zeros(1).exp()

# The budget of one call of the student's code, in seconds: the course's solutions take well under a second per call
# on a laptop's core; a busy machine gets ten times that and more.
SECONDS = 20.0


class _OutOfTime(BaseException):
    """Raised by the alarm inside the student's code; a BaseException, so `except Exception` there does not eat it."""


@contextmanager
def deadline(seconds: float, what: str, hint: str):
    """Fail with 'hint: <what> took more than <seconds> s: <hint>' when the block runs longer than `seconds`.

    On the main thread an alarm stops the block when its time is up; elsewhere (or inside another deadline) the
    time is measured when it ends.
    """
    message = f"hint: {what} took more than {seconds:g} s: {hint}"
    alarm = _current_thread() is _main_thread() and _get_timer(signal.ITIMER_REAL)[0] == 0

    def out_of_time(signum, frame):
        raise _OutOfTime

    previous = _set_handler(signal.SIGALRM, out_of_time) if alarm else None
    start = _monotonic()
    try:
        if alarm:
            _set_timer(signal.ITIMER_REAL, seconds)
        yield
    except _OutOfTime:
        raise AssertionError(message) from None
    finally:
        if alarm:
            _set_timer(signal.ITIMER_REAL, 0)
            _set_handler(signal.SIGALRM, previous)
    if _monotonic() - start > seconds:
        raise AssertionError(message)


def call(function, *args, what: str, seconds: float = SECONDS, slow: str = "", **kwargs):
    """function(*args, **kwargs) under a time budget; an error other than AssertionError and NotImplementedError (a
    hint, the student edition's stub) becomes 'hint: <what> raised <error>'."""
    if not callable(function):
        raise AssertionError(f"hint: {what}: the name you defined is not a function ({type(function).__name__})")
    try:
        with deadline(seconds, what, slow or "look for a loop that does far more work than the inputs need"):
            return function(*args, **kwargs)
    except (AssertionError, NotImplementedError):
        raise
    except Exception as error:
        raise AssertionError(f"hint: {what} raised {type(error).__name__}: {error}") from None


def raises(error: type[BaseException], function, *args, what: str, hint: str, **kwargs):
    """Fail with `hint` unless function(*args, **kwargs) raises `error` (within the time budget)."""
    try:
        with deadline(SECONDS, what, "raise the error before doing any work"):
            function(*args, **kwargs)
    except error:
        return
    except (AssertionError, NotImplementedError):
        raise
    except Exception as other:
        raise AssertionError(f"hint: {what}: {hint}, not {type(other).__name__} ({other})") from None
    raise AssertionError(f"hint: {what}: {hint}")


def untampered():
    """Fail unless PyTorch dispatches plainly: no torch-function or dispatch mode left active by a solution cell."""
    if _len_function_modes() or _len_torch_dispatch_stack() or not _torch_function_enabled():
        raise AssertionError(
            "hint: a PyTorch mode is still active when the check starts (a TorchFunctionMode or TorchDispatchMode "
            "entered and never left, or torch-function handling switched off): restart the kernel and run the cells "
            "in order"
        )


_PLAIN_ATOMS = (int, float, bool, str, type(None))


def plain(value, what: str):
    """`value` if it is an int, float, bool, str or None of exact type, or a list, tuple or dict of such values (at
    any depth); otherwise fail with a hint. Values that pass compare with Python's own `==`."""
    kind = type(value)
    if kind in _PLAIN_ATOMS:
        return value
    if kind is list or kind is tuple:
        for item in value:
            plain(item, what)
        return value
    if kind is dict:
        for key, item in value.items():
            plain(key, what)
            plain(item, what)
        return value
    raise AssertionError(
        f"hint: {what}: return plain Python values (int, float, str, list, tuple, dict), not {kind.__name__}"
    )


def integer(value, what: str) -> int:
    if type(value) is not int:
        raise AssertionError(f"hint: {what}: return a Python int, not {type(value).__name__}")
    return value


def number(value, what: str) -> float:
    if type(value) is not float:
        raise AssertionError(f"hint: {what}: return a Python float (.item() gives one), not {type(value).__name__}")
    return value


def tensor(value, what: str, shape=None, dtype=None):
    """`value` if it is a torch.Tensor of exact type (and of `shape` and `dtype`, where given); else a hint."""
    if type(value) is not _torch.Tensor:
        raise AssertionError(f"hint: {what}: return a torch.Tensor, not {type(value).__name__}")
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise AssertionError(f"hint: {what}: expected shape {tuple(shape)}, got {tuple(value.shape)}")
    if dtype is not None and value.dtype != dtype:
        raise AssertionError(f"hint: {what}: expected dtype {dtype}, got {value.dtype}")
    return value


def values(t) -> list:
    """A tensor's numbers as plain Python values (nested lists), for comparisons and messages."""
    return _tolist(t)


def close(got, want, rtol: float = 1e-5, atol: float = 1e-8) -> bool:
    """Whether two tensors have the same shape and equal values within tolerance (compared in want's dtype; infinities
    equal where both are), by PyTorch's allclose as it was when this module was imported."""
    return tuple(got.shape) == tuple(want.shape) and _allclose(got.to(want.dtype), want, rtol=rtol, atol=atol)


def equal(got, want) -> bool:
    """Same shape, dtype and values."""
    return got.dtype == want.dtype and _equal(got, want)


def finite(t) -> bool:
    return bool(_isfinite(t).all())
