"""Tools for the exercise checks (exercises/NN_topic.ipynb).

A check must pass only for a solution the student wrote. When an exercise asks for something PyTorch or
`scratch` already has (a softmax, a causal mask, top-k filtering), the check computes its reference first and
then calls the student's function inside `forbid(...)`, which makes those shortcuts fail with a hint:

    import torch

    from course.exercises import forbid

    expected = torch.softmax(scores, dim=-1)                 # the reference, computed before
    with forbid("torch.softmax", "torch.Tensor.softmax", "torch.nn.functional.softmax",
                hint="write the softmax from exp and sum"):
        got = my_softmax(scores)
    assert torch.allclose(got, expected, atol=1e-6), "hint: ..."

Each check imports what it uses itself (this module's tools, torch, even the built-ins), so a solution cell that
defines a name of its own (a `forbid` that does nothing, a fake `torch`) cannot switch a check off.

How a shortcut is closed:
- a Python function fails however it is reached, by its module attribute or through a name a student imported
  earlier (`from scratch.l03_attention import causal_mask`), because its code is swapped, not only its name;
- any other object (a C built-in, a Rust method) is replaced where it is looked up;
- a PyTorch operation (a name under `torch`, other than a method of a `torch.nn` class) is also watched by name
  while the block runs: a `TorchFunctionMode` refuses every call of an operation with that name, however it is
  reached (`torch.softmax`, `Tensor.softmax`, `torch._C._VariableFunctions.softmax`, `torch._VF...`,
  `torch._C._nn...`, `torch.ops.aten._softmax`), and a `TorchDispatchMode` refuses its kernels (`aten._softmax`,
  `aten._softmax_backward_data`) even when torch-function handling is switched off. Operations are matched by
  name: `softmax` closes `softmax`, `_softmax` and `softmax_backward_data`, not `log_softmax` or `exp`.

The other tools measure what a solution does: `LookupOnly` (how many lookups in a table), `CountOps` (how many
PyTorch operations), `LargestTensor` (the largest tensor created), `LiveTensors` (how many numbers the tensors
created still hold), `block_passes` (how many rows each pass through
a transformer block gets) and `stream` (whether earlier blocks are still held); `randomised` prepares a block whose
norms do not hide bugs.
"""

from __future__ import annotations

import importlib
import re
import types
import weakref
from contextlib import ExitStack, contextmanager

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

# Kernels whose names do not follow the operation's: scaled_dot_product_attention's fused CPU/GPU kernels.
_ALSO_KERNELS = {"scaled_dot_product_attention": r"scaled_dot_product_\w*attention\w*"}
_KERNEL_SUFFIX = r"(\d+d)?(_nd|_loss|_forward|_backward|_backward_data|_math)?_?"


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


def _operation_name(name: str) -> str:
    """'_softmax.default' -> 'softmax'; 'native_dropout' -> 'dropout'; '__array__' -> 'array'."""
    name = name.split(".")[0].strip("_")
    return name.removeprefix("native_")


def _is_torch_operation(dotted: str, owner) -> bool:
    """A name under torch that is an operation (a function or a Tensor method), not a method of an nn class."""
    if not dotted.startswith("torch."):
        return False
    return isinstance(owner, types.ModuleType) or owner in (torch.Tensor, torch._C.TensorBase)


class _Refuse(TorchFunctionMode):
    """Refuses every PyTorch call whose operation name matches, however the function was reached."""

    def __init__(self, patterns: dict[str, tuple[re.Pattern, str]]):
        super().__init__()
        self.patterns = patterns

    def _check(self, name: str):
        operation = _operation_name(name)
        for pattern, message in self.patterns.values():
            if pattern.fullmatch(operation):
                raise AssertionError(message)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self._check(getattr(func, "__name__", ""))
        return func(*args, **(kwargs or {}))


class _RefuseKernels(TorchDispatchMode):
    """The same refusal one level down, on the aten kernels (reached even with torch-function handling off)."""

    def __init__(self, refuse: _Refuse):
        super().__init__()
        self.refuse = refuse

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.refuse._check(func._opname)
        return func(*args, **(kwargs or {}))


@contextmanager
def forbid(*names: str, hint: str):
    """While the block runs, calling any of `names` (dotted paths) raises AssertionError('hint: ...').

    Names under torch that are operations are also refused by operation name at every path and at the
    kernels (see the module's docstring). Everything is restored when the block ends, however it ends.
    """
    if not names:
        raise ValueError("forbid: name at least one function")
    undo = []
    patterns: dict[str, tuple[re.Pattern, str]] = {}
    with ExitStack() as stack:
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
                if _is_torch_operation(dotted, owner):
                    base = re.escape(_operation_name(attribute))
                    also = _ALSO_KERNELS.get(_operation_name(attribute))
                    pattern = rf"{base}{_KERNEL_SUFFIX}" + (f"|{also}" if also else "")
                    patterns.setdefault(_operation_name(attribute), (re.compile(pattern), message))
            if patterns:
                refuse = _Refuse(patterns)
                stack.enter_context(refuse)
                stack.enter_context(_RefuseKernels(refuse))
            yield
        finally:
            stack.close()  # the modes first, then the names
            for target, attribute, value in reversed(undo):
                if value is None:
                    delattr(target, attribute)  # it was inherited: uncover the base class's again
                else:
                    setattr(target, attribute, value)


class LookupOnly:
    """A read-only mapping that answers lookups (at most `budget` of them) and refuses iteration.

    For checks of exercises that must look up only what the input needs (BPE merges, a piece table): a
    solution that walks the whole table, or looks up far more than the input's size calls for, fails with a hint.
    """

    def __init__(self, mapping, budget, what):
        self._mapping, self._budget, self._what, self.lookups = mapping, budget, what, 0

    def _count(self):
        self.lookups += 1
        if self.lookups > self._budget:
            raise AssertionError(f"hint: more than {self._budget:,} lookups in {self._what}: {self._why_budget()}")

    def _why_budget(self):
        return "look up only the pairs or pieces the text in front of you contains"

    def __getitem__(self, key):
        self._count()
        return self._mapping[key]

    def __contains__(self, key):
        self._count()
        return key in self._mapping

    def get(self, key, default=None):
        self._count()
        return self._mapping.get(key, default)

    def __len__(self):
        return len(self._mapping)

    def _refuse(self, *args):
        raise AssertionError(f"hint: do not walk through all of {self._what}; look up what you need")

    __iter__ = keys = values = items = copy = _refuse


class CountOps(TorchFunctionMode):
    """Counts the PyTorch operations called inside a `with` block (`.calls`)."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


class LargestTensor(TorchFunctionMode):
    """While active, records the number of elements of the largest tensor any torch operation returns (`.largest`)."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        for t in result if isinstance(result, (tuple, list)) else [result]:
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return result


@contextmanager
def block_passes(*classes: type):
    """While the `with` block runs, record (class name, rows) for every pass through a block of `classes`, in order.

    A pass is a call of the class's forward_with_weights (its forward calls it too, and so do the models), on any
    instance, copies included; rows is the size of its first argument's first dimension. Yields the list.
    """
    if not classes:
        raise ValueError("block_passes: name at least one class")
    for cls in classes:
        if not isinstance(cls, type) or "forward_with_weights" not in vars(cls):
            raise ValueError(f"block_passes: {cls!r} is not a class that defines forward_with_weights")
    passes: list[tuple[str, int]] = []

    def counting(cls, original):
        def forward_with_weights(self, x, *args, **kwargs):
            passes.append((cls.__name__, x.shape[0]))
            return original(self, x, *args, **kwargs)

        return forward_with_weights

    originals = {cls: vars(cls)["forward_with_weights"] for cls in classes}
    try:
        for cls, original in originals.items():
            cls.forward_with_weights = counting(cls, original)
        yield passes
    finally:
        for cls, original in originals.items():
            cls.forward_with_weights = original


class LiveTensors(TorchFunctionMode):
    """While active, keeps weak references to the tensors torch operations return (not while `paused` is True);
    `alive()` is how many numbers those, and any tensors added to `refs`, still hold."""

    def __init__(self):
        super().__init__()
        self.refs: list[weakref.ref] = []
        self.paused = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if not self.paused:
            for t in result if isinstance(result, (tuple, list)) else [result]:
                if isinstance(t, torch.Tensor):
                    self.refs.append(weakref.ref(t))
        return result

    def alive(self) -> int:
        return sum(t.numel() for t in (ref() for ref in self.refs) if t is not None)


def stream(K, V, block, held):
    """Yield (K_block, V_block) copies; before each new block, append to `held` how many earlier ones are alive."""
    earlier = []
    for start in range(0, len(K), block):
        held.append(sum(ref() is not None for ref in earlier))
        k_block, v_block = K[start : start + block].clone(), V[start : start + block].clone()
        earlier += [weakref.ref(k_block), weakref.ref(v_block)]
        yield k_block, v_block
        del k_block, v_block


def randomised(block):
    """The block in float64 and eval mode, with random norm gains and shifts (at 1 and 0 they hide bugs)."""
    block = block.double().eval()
    with torch.no_grad():
        for name, p in block.named_parameters():
            if name.startswith("norm"):
                p.normal_(mean=1.0 if name.endswith("weight") else 0.0, std=0.5)
    return block
