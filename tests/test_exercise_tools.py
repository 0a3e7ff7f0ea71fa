"""scratch.exercises.forbid: a shortcut fails inside a check, and everything is restored after it."""

import pytest
import torch

import scratch.attention
from scratch.attention import causal_mask
from scratch.exercises import forbid


def test_a_forbidden_python_function_fails_by_any_name_and_comes_back():
    expected = causal_mask(4)
    with forbid("scratch.attention.causal_mask", hint="build the mask from torch.arange"):
        with pytest.raises(AssertionError, match="hint: build the mask from torch.arange"):
            causal_mask(4)  # imported before the check: the code itself is swapped
        with pytest.raises(AssertionError, match="without scratch.attention.causal_mask"):
            scratch.attention.causal_mask(4)
    assert torch.equal(causal_mask(4), expected)


def test_forbidden_builtins_and_methods_fail_and_come_back():
    x = torch.randn(3, 5)
    expected = torch.softmax(x, dim=-1)
    with forbid("torch.softmax", "torch.Tensor.softmax", "torch.nn.functional.softmax", hint="use exp and sum"):
        for call in (lambda: torch.softmax(x, -1), lambda: x.softmax(-1), lambda: torch.nn.functional.softmax(x, -1)):
            with pytest.raises(AssertionError, match="hint: use exp and sum"):
                call()
        assert torch.allclose(x.exp() / x.exp().sum(-1, keepdim=True), expected, atol=1e-6)  # the real way works
    assert "softmax" not in vars(torch.Tensor)  # the inherited method is uncovered again, not copied
    assert torch.equal(torch.softmax(x, -1), expected) and torch.equal(x.softmax(-1), expected)


def test_restored_even_when_the_check_fails():
    with pytest.raises(ZeroDivisionError):
        with forbid("torch.softmax", hint="x"):
            raise ZeroDivisionError
    assert torch.softmax(torch.zeros(2), 0).tolist() == [0.5, 0.5]


@pytest.mark.parametrize(
    "names, problem",
    [((), "at least one"), (("torch.no_such_function",), "names nothing"), (("no_such_module.f",), "names nothing")],
)
def test_bad_names_are_rejected(names, problem):
    with pytest.raises(ValueError, match=problem):
        with forbid(*names, hint="x"):
            pass
