"""course.exercises: forbid (a shortcut fails inside a check, at every path to its kernel, and everything is
restored after it) and the instruments the checks measure solutions with."""

import pytest
import torch

import scratch.l04_multi_head_attention
import scratch.l05_transformer_block
from course.exercises import CountOps, LargestTensor, LiveTensors, LookupOnly, block_passes, forbid, randomised, stream
from scratch.l03_attention import causal_mask


def test_a_forbidden_python_function_fails_by_any_name_and_comes_back():
    expected = causal_mask(4)
    with forbid("scratch.l03_attention.causal_mask", hint="build the mask from torch.arange"):
        with pytest.raises(AssertionError, match="hint: build the mask from torch.arange"):
            causal_mask(4)  # imported before the check: the code itself is swapped
        with pytest.raises(AssertionError, match="without scratch.l03_attention.causal_mask"):
            scratch.l03_attention.causal_mask(4)
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


# Every path to a forbidden PyTorch kernel, with the arguments that reach aten._softmax.
SOFTMAX_PATHS = {
    "torch.ops.aten._softmax": lambda x: torch.ops.aten._softmax(x, -1, False),
    "torch.ops.aten._softmax.default": lambda x: torch.ops.aten._softmax.default(x, -1, False),
    "torch.ops.aten.softmax.int": lambda x: torch.ops.aten.softmax.int(x, -1),
    "torch._VF.softmax": lambda x: torch._VF.softmax(x, -1),
    "torch._C._VariableFunctions.softmax": lambda x: torch._C._VariableFunctions.softmax(x, -1),
    "torch._C.TensorBase.softmax": lambda x: torch._C.TensorBase.softmax(x, -1),
    "torch.special.softmax": lambda x: torch.special.softmax(x, -1),
    "a Python function that calls it": lambda x: torch.nn.functional.gumbel_softmax(x),
}


@pytest.mark.parametrize("path", SOFTMAX_PATHS)
def test_a_forbidden_operation_fails_at_every_path_to_its_kernel(path):
    x = torch.randn(3, 5)
    with forbid("torch.softmax", hint="use exp and sum"):
        with pytest.raises(AssertionError, match="hint: use exp and sum"):
            SOFTMAX_PATHS[path](x)
    assert SOFTMAX_PATHS[path](x).shape == (3, 5)  # and works again after the block


def test_a_forbidden_kernel_fails_even_with_torch_function_handling_switched_off():
    x = torch.randn(3, 5)
    with forbid("torch.softmax", hint="use exp and sum"):
        with torch._C.DisableTorchFunction(), pytest.raises(AssertionError, match="hint: use exp and sum"):
            torch._C._VariableFunctions.softmax(x, -1)  # only the dispatch-level watch sees this one


@pytest.mark.parametrize(
    "names, call",
    [
        (("torch.nn.functional.linear",), lambda x: torch._C._nn.linear(x, x)),
        (("torch.nn.functional.linear",), lambda x: torch.ops.aten.linear(x, x)),
        (("torch.nn.functional.cross_entropy",), lambda x: torch._C._nn.cross_entropy_loss(x, torch.tensor([0, 1, 2]))),
        (
            ("torch.nn.functional.nll_loss",),
            lambda x: torch.ops.aten.nll_loss_forward(x, torch.tensor([0, 1, 2]), None, 1, -100),
        ),
        (("torch.dropout",), lambda x: torch.native_dropout(x, 0.5, True)),
        (("torch.Tensor.cumsum",), lambda x: torch._VF.cumsum(x, 0)),
        (("torch.Tensor.item",), lambda x: torch._C.TensorBase.item(x[0, 0])),
        (
            ("torch.nn.functional.scaled_dot_product_attention",),
            lambda x: torch._C._nn.scaled_dot_product_attention(x[None], x[None], x[None]),
        ),
    ],
)
def test_other_operations_fail_at_their_c_and_aten_paths(names, call):
    x = torch.randn(3, 3)
    with forbid(*names, hint="by hand"), pytest.raises(AssertionError, match="hint: by hand"):
        call(x)


def test_the_reference_before_the_block_and_legitimate_operations_inside_it_work():
    x = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    expected = torch.softmax(x, dim=-1)  # the reference, computed before
    with forbid("torch.softmax", "torch.Tensor.softmax", "torch.nn.functional.softmax", hint="use exp and sum"):
        shifted = x - x.max(dim=-1, keepdim=True).values
        ours = shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True)
        ours @ torch.ones(6, 2, dtype=torch.float64)  # matmul
        torch.log_softmax(x, dim=-1)  # another operation, not a path to softmax
        ours.sum().backward()  # autograd through the allowed operations
    assert torch.allclose(ours, expected, atol=1e-12) and x.grad is not None
    assert torch.equal(torch.softmax(x, dim=-1), expected)


def test_methods_of_nn_classes_are_swapped_by_code_only():
    layer = torch.nn.Linear(3, 3)
    x = torch.randn(2, 3)
    with forbid("torch.nn.Linear.forward", hint="multiply by the weights yourself"):
        with pytest.raises(AssertionError, match="hint: multiply"):
            layer(x)
        x @ layer.weight.T + layer.bias  # every other 'forward' and the operations themselves still work
        torch.nn.ReLU()(x)


def test_lookup_only_counts_lookups_and_refuses_iteration():
    table = LookupOnly({"a": 1, "b": 2}, budget=2, what="the table")
    assert table["a"] == 1 and "b" in table and len(table) == 2
    with pytest.raises(AssertionError, match="hint: more than 2 lookups in the table"):
        table.get("a")
    for walk in (iter, lambda t: t.items(), lambda t: t.keys(), lambda t: t.values()):
        with pytest.raises(AssertionError, match="hint: do not walk through all of the table"):
            walk(LookupOnly({"a": 1}, budget=9, what="the table"))


def test_count_ops_and_largest_tensor_measure_what_runs_inside():
    x = torch.randn(8, 8)
    with CountOps() as ops:
        (x @ x).sum()
    with LargestTensor() as largest:
        (x @ x).sum()
        torch.ones(100)
    assert ops.calls == 2 and largest.largest == 100


def test_live_tensors_counts_what_is_still_held():
    x = torch.randn(4, 4)
    with LiveTensors() as live:
        kept = x @ x  # 16 numbers, held
        (x + 1).sum()  # 16 + 1 numbers, let go at once
        live.paused = True
        paused = torch.ones(100)  # not recorded
        live.paused = False
    assert live.alive() == 16 and kept.shape == (4, 4) and paused.numel() == 100
    del kept
    assert live.alive() == 0


def test_block_passes_records_the_rows_of_every_pass_and_restores_the_blocks():
    from scratch.l05_transformer_block import DecoderBlock, EncoderBlock
    from scratch.l06_transformer import Transformer

    originals = EncoderBlock.forward_with_weights, DecoderBlock.forward_with_weights
    model = Transformer(10, 12, d_model=8, h=2, N=2, d_ff=16, dropout=0.0).eval()
    src, tgt = torch.randint(1, 10, (3, 4)), torch.randint(1, 12, (2, 5))
    with torch.no_grad(), block_passes(EncoderBlock, DecoderBlock) as passes:
        memory = model.encode(src)  # the models call forward_with_weights
        model.decoder[0](model.tgt_embed(tgt), memory[:2])  # a block called as a module: forward, counted once
    assert passes == [("EncoderBlock", 3)] * 2 + [("DecoderBlock", 2)]
    with pytest.raises(ZeroDivisionError), block_passes(EncoderBlock):
        raise ZeroDivisionError
    assert (EncoderBlock.forward_with_weights, DecoderBlock.forward_with_weights) == originals
    with pytest.raises(ValueError, match="forward_with_weights"), block_passes(torch.nn.Linear):
        pass


def test_stream_reports_how_many_earlier_blocks_are_still_held():
    K, V = torch.randn(6, 2), torch.randn(6, 2)
    held, kept = [], []
    for block in stream(K, V, 2, held):
        kept.append(block)  # keeps every block
    assert held == [0, 2, 4]
    held = []
    for block in stream(K, V, 4, held):  # lets each go (the loop variable holds the last one)
        assert block[0].shape == (4 if not held[1:] else 2, 2)
    assert held == [0, 2]


def test_randomised_moves_the_norms_away_from_one_and_zero():
    block = randomised(scratch.l05_transformer_block.EncoderBlock(8, 2, 16))
    assert not block.training and block.norm1.weight.dtype == torch.float64
    assert not torch.allclose(block.norm1.weight, torch.ones(8, dtype=torch.float64))
