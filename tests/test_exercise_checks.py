"""course.checks.support: what every lecture's check module relies on is bound when it is imported, answers are
checked by exact type, and the student's code runs under a time budget. (tests/test_exercises.py runs the lectures'
checks themselves against solutions, stubs and stored wrong and hostile answers.)"""

import builtins
import contextlib
import math
import time

import pytest
import torch

import course.exercises
from course.checks import support


@contextlib.contextmanager
def rebound(owner, name, value):
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


def test_a_solution_too_slow_fails_with_a_hint_even_if_it_catches_exceptions():
    def brute_force():
        while True:
            try:
                sum(range(1000))
            except Exception:  # a solution that swallows errors cannot swallow the alarm
                pass

    start = time.monotonic()
    with pytest.raises(AssertionError, match=r"hint: brute_force\(\) took more than 0\.5 s: enumerate less"):
        support.call(brute_force, what="brute_force()", seconds=0.5, slow="enumerate less")
    assert time.monotonic() - start < 5


def test_errors_become_hints_and_the_stub_passes_through():
    with pytest.raises(AssertionError, match=r"hint: f\(2\) raised ValueError: no"):
        support.call(lambda x: (_ for _ in ()).throw(ValueError("no")), 2, what="f(2)")
    with pytest.raises(NotImplementedError):
        support.call(lambda: (_ for _ in ()).throw(NotImplementedError("stub")), what="f()")
    assert support.call(lambda x: x + 1, 1, what="f(1)") == 2


def test_answers_are_checked_by_exact_type():
    class AlwaysEqual(float):
        def __eq__(self, other):
            return True

        __hash__ = float.__hash__

    class Agreeable(torch.Tensor):
        pass

    with pytest.raises(AssertionError, match="hint: .*not AlwaysEqual"):
        support.number(AlwaysEqual(1.0), "f()")
    with pytest.raises(AssertionError, match="hint: .*not Agreeable"):
        support.tensor(torch.zeros(2).as_subclass(Agreeable), "f()")
    with pytest.raises(AssertionError, match="hint: .*not AlwaysEqual"):
        support.plain([(1, {"a": AlwaysEqual(0.0)})], "f()")
    with pytest.raises(AssertionError, match="hint: .*not bool"):
        support.integer(True, "f()")
    assert support.plain([(1, "a", None, 2.5)], "f()") == [(1, "a", None, 2.5)]
    with pytest.raises(AssertionError, match=r"hint: f\(\): expected shape \(3,\), got \(2,\)"):
        support.tensor(torch.zeros(2), "f()", shape=(3,))


def test_rebinding_torch_math_the_builtins_or_scratch_exercises_later_changes_nothing():
    def always(*args, **kwargs):
        return True

    with (
        rebound(torch, "allclose", always),
        rebound(torch, "equal", always),
        rebound(math, "isclose", always),
        rebound(builtins, "abs", lambda x: 0),
        rebound(course.exercises, "forbid", lambda *names, hint: contextlib.nullcontext()),
    ):
        assert not support.close(torch.zeros(3), torch.ones(3))
        assert not support.equal(torch.zeros(3), torch.ones(3))
        assert not support.math.isclose(0.0, 1.0)
        assert support.BUILTINS["abs"](-2) == 2
        with support.tools.forbid("torch.softmax", hint="write it yourself"):
            with pytest.raises(AssertionError, match="hint: write it yourself"):
                torch.softmax(torch.zeros(2), dim=0)


def test_a_mode_left_active_by_a_solution_is_refused():
    mode = course.exercises.CountOps()
    mode.__enter__()
    try:
        with pytest.raises(AssertionError, match="hint: a PyTorch mode is still active"):
            support.untampered()
    finally:
        mode.__exit__(None, None, None)
    support.untampered()
