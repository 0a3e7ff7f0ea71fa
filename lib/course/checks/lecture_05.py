"""Checks of lecture 5's exercises (exercises/05_transformer_block.ipynb); see course.checks."""

import copy
import inspect
import random

from torch import nn
from torch.nn.modules import module as torch_module
from torch.utils.flop_counter import FlopCounterMode

from course.checks.support import (
    BUILTINS,
    F,
    call,
    close,
    equal,
    integer,
    math,
    tensor,
    tools,
    torch,
    untampered,
    values,
)
from scratch.l03_attention import causal_mask
from scratch.l05_transformer_block import DecoderBlock, EncoderBlock
from scratch.l08_llama import RMSNorm, SwiGLUFeedForward

__builtins__ = BUILTINS  # the built-ins as they were when the set-up cell imported this module

forbid, randomised = tools.forbid, tools.randomised
_deepcopy, _signature, _Random = copy.deepcopy, inspect.signature, random.Random
_ModuleList, _no_grad, _one_hot = nn.ModuleList, torch.no_grad, F.one_hot
NORM_SHORTCUTS = (
    "scratch.l08_llama.RMSNorm.forward",
    "scratch.l05_transformer_block.LayerNorm.forward",
    "torch.nn.functional.rms_norm",
    "torch.rms_norm",
    "torch.nn.functional.layer_norm",
    "torch.layer_norm",
    "torch.nn.functional.group_norm",
    "torch.nn.functional.batch_norm",
    "torch.nn.functional.instance_norm",
    "torch.var",
    "torch.Tensor.var",
    "torch.var_mean",
    "torch.std",
    "torch.Tensor.std",
    "torch.std_mean",
)


def rms_norm(student_rms_norm, student_layer_norm_from_rms):
    """Exercise 1: rms_norm, and layer_norm_from_rms built on it."""
    untampered()

    def attempt(what, function, *args, **kwargs):
        with forbid(*NORM_SHORTCUTS, hint="build both from x, a mean over the features and a square root"):
            return call(function, *args, what=what, **kwargs)

    calls, marker = [], [0.0]
    namespace = student_layer_norm_from_rms.__globals__
    students_rms_norm = namespace.get("rms_norm", student_rms_norm)

    def watched(*args, **kwargs):  # records the call, answers with the student's rms_norm + a marker
        bound = _signature(students_rms_norm).bind(*args, **kwargs)
        bound.apply_defaults()
        calls.append(list(bound.arguments.values()))  # x, gamma, eps
        return students_rms_norm(*args, **kwargs) + marker[0]

    torch.manual_seed(1)
    for shape, dtype in [
        ((2, 5, 16), torch.float64),
        ((16,), torch.float64),
        ((7, 12), torch.float64),
        ((2, 3, 4, 8), torch.float64),
        ((1, 1, 5), torch.float64),
        ((3, 6), torch.float32),
    ]:
        d = shape[-1]
        inputs = 3 * torch.randn(shape, dtype=dtype) + 1
        scale = 10.0 ** torch.randint(-4, 4, (*shape[:-1], 1)).to(dtype)  # rows from 1e-4 to 1e3: eps matters
        inputs = inputs * scale
        gamma, beta = torch.randn(d, dtype=dtype), torch.randn(d, dtype=dtype)
        tolerance = 1e-10 if dtype == torch.float64 else 1e-5
        for eps in (None, 1e-2, 0.3):  # None: the default, 1e-6
            reference = RMSNorm(d, eps=1e-6 if eps is None else eps).to(dtype)
            with _no_grad():
                reference.weight.copy_(gamma)
                expected = reference(inputs)
            what = f"rms_norm(x of shape {tuple(shape)} {dtype}, gamma" + (")" if eps is None else f", eps={eps})")
            args = (inputs.clone(), gamma.clone()) + (() if eps is None else (eps,))
            got = tensor(attempt(what, student_rms_norm, *args), what + ": the input's shape", shape=shape)
            assert close(got, expected, atol=tolerance, rtol=tolerance), (
                f"hint: {what} differs from RMSNorm: over which dimension is the mean of squares taken, where does "
                "eps go (rows with mean(x²) near eps show it), and what does RMSNorm leave out that LayerNorm has? "
                "(lecture 5, section 4)"
            )

        for eps in (None, 1e-3):
            expected = F.layer_norm(inputs, (d,), gamma, beta, eps=1e-5 if eps is None else eps)
            what = f"layer_norm_from_rms(x of shape {tuple(shape)}, gamma, beta" + (
                ")" if eps is None else f", eps={eps})"
            )
            results = []
            for value in (0.0, 1000.0):  # the marker shows whether the output is built from rms_norm's
                marker[0] = value
                calls.clear()
                namespace["rms_norm"] = watched
                try:
                    args = (inputs, gamma, beta) if eps is None else (inputs, gamma, beta, eps)
                    results.append(attempt(what, student_layer_norm_from_rms, *args))
                finally:
                    namespace["rms_norm"] = students_rms_norm
                assert calls, f"hint: {what} must call your rms_norm, not compute the variance itself"
            got, marked = (tensor(r, what, shape=shape) for r in results)
            assert close(got, expected, atol=tolerance, rtol=tolerance), (
                f"hint: {what} differs from LayerNorm: what must x become before its mean square is its variance? "
                "(lecture 5, section 4)"
            )
            t, _, given = calls[-1][:3]
            want_eps = 1e-5 if eps is None else eps
            assert close(t, inputs - inputs.mean(dim=-1, keepdim=True), atol=1e-8) and given == want_eps, (
                f"hint: {what}: call rms_norm on the centred x, passing on this eps ({want_eps})"
            )
            assert close(marked - got, torch.full_like(got, 1000.0)), (
                f"hint: {what}: the result must be rms_norm's output plus beta, not a LayerNorm computed beside it"
            )
    print("Exercise 1: OK. RMSNorm is LayerNorm without the centring and without beta.")


def swiglu_ffn(student_swiglu_ffn, student_swiglu_hidden_size):
    """Exercise 2: swiglu_ffn and swiglu_hidden_size."""
    untampered()

    def attempt(what, function, *args):
        with forbid(
            "scratch.l08_llama.SwiGLUFeedForward.forward",
            hint="write the gated FFN with three matrix products",
        ):
            return call(function, *args, what=what)

    torch.manual_seed(2)
    for shape, hidden, dtype in [
        ((2, 5, 16), 24, torch.float64),
        ((16,), 40, torch.float64),
        ((7, 12), 8, torch.float64),
        ((2, 3, 4, 8), 30, torch.float64),
        ((1, 6), 6, torch.float64),
        ((3, 10), 14, torch.float32),
    ]:
        d = shape[-1]
        inputs = torch.randn(shape, dtype=dtype)
        W_gate, W_up = torch.randn(d, hidden, dtype=dtype) / 4, torch.randn(d, hidden, dtype=dtype) / 4
        W_down = torch.randn(hidden, d, dtype=dtype) / 5
        reference = SwiGLUFeedForward(d, hidden).to(dtype)
        with _no_grad():
            for linear, W in [(reference.gate, W_gate), (reference.up, W_up), (reference.down, W_down)]:
                linear.weight.copy_(W.T)  # nn.Linear stores (out, in)
            expected = reference(inputs)
        what = f"swiglu_ffn(x of shape {shape} {dtype}, W_gate {tuple(W_gate.shape)}, ...)"
        out = attempt(what, student_swiglu_ffn, inputs.clone(), W_gate, W_up, W_down)
        tensor(out, what + ": back to d_model, every leading dimension kept", shape=shape, dtype=dtype)
        tolerance = 1e-10 if dtype == torch.float64 else 1e-5
        assert close(out, expected, atol=tolerance, rtol=tolerance), (
            f"hint: {what}: differs: which branch goes through SiLU, how do the branches combine, and when does "
            "W_down apply? (the statement's formula, lecture 5, section 3)"
        )
    cases = [(4096, 16384, 256), (5120, 20480, 256), (576, 2304, 256), (64, 100, 1), (64, 256, 1), (96, 384, 256)]
    draw = _Random(2)
    cases += [
        (draw.choice([64, 512, 768]), draw.randint(3, 20000), draw.choice([1, 8, 32, 64, 100, 256])) for _ in range(60)
    ]
    for d, ff, multiple in cases:
        what = f"swiglu_hidden_size({d}, {ff}, multiple_of={multiple})"
        size = integer(attempt(what, student_swiglu_hidden_size, d, ff, multiple), what)
        want = multiple * math.ceil((2 * ff // 3) / multiple)
        assert size == want, (
            f"hint: {what}: expected {want:,}, got {size:,}: set the two FFNs' parameter counts equal, take the "
            "integer part, then round UP to a multiple of multiple_of (Llama-7B: 11,008; SmolLM2: 1,536)"
        )
    print("Exercise 2: OK. Llama-7B's 11,008 is 2/3 of 4 · 4096, rounded up to a multiple of 256.")


def _by_gradients(masks, seed):  # which inputs each output of real blocks depends on (an exact zero = no)
    torch.manual_seed(seed)
    n = masks[0].shape[-1]
    batch = max([m.shape[0] for m in masks if m.dim() == 3], default=1)
    blocks = [EncoderBlock(8, 2, 16, dropout=0.0).double().eval() for _ in masks]
    inputs = torch.randn(batch, n, 8, dtype=torch.float64, requires_grad=True)
    out = inputs
    for block, mask in zip(blocks, masks):
        out = block(out, mask if mask.dim() == 2 else mask[:, None])
    probe = torch.randn(8, dtype=torch.float64)
    depends = torch.zeros(batch, n, n, dtype=torch.bool)
    for i in range(n):
        (grad,) = torch.autograd.grad((out[:, i] @ probe).sum(), inputs, retain_graph=True)
        depends[:, i] = grad.ne(0).any(dim=-1)
    return depends if any(m.dim() == 3 for m in masks) else depends[0]


def _window(n, size):  # position i reads i - size + 1 .. i
    i, j = torch.arange(n)[:, None], torch.arange(n)
    return (j <= i) & (j > i - size)


def _random_masks(generator, n, depth, batch=None):
    masks = []
    for _ in range(depth):
        shape = (n, n) if batch is None or torch.rand(1, generator=generator) < 0.4 else (batch, n, n)
        mask = torch.rand(shape, generator=generator) < torch.rand(1, generator=generator) * 0.3
        one = torch.randint(n, shape[:-1], generator=generator)  # one key per row, anywhere
        masks.append(mask | _one_hot(one, n).bool())
    return masks


def receptive_field(student_receptive_field):
    """Exercise 3."""
    untampered()
    n = 6
    previous_only = torch.zeros(n, n, dtype=torch.bool)
    previous_only[torch.arange(1, n), torch.arange(n - 1)] = True  # i reads i - 1 only, not itself
    previous_only[0, 0] = True
    padding = torch.ones(2, n, n, dtype=torch.bool)
    padding[1, :, 4:] = False  # sequence 1 has 4 real tokens: nobody reads positions 4, 5
    cases = {
        "two causal blocks": [_window(n, n)] * 2,
        "three blocks with a window of 2": [_window(n, 2)] * 3,
        "two blocks reading only the previous position (not themselves)": [previous_only] * 2,
        "a causal block, then one per sequence (padding)": [_window(n, n), padding, _window(n, 3) & padding],
        "a block reading only the previous position, then a window of 2 reading ahead": [
            previous_only,
            _window(n, 2).T,
        ],
        "one block on a single position": [torch.ones(1, 1, dtype=torch.bool)],
    }
    generator = torch.Generator().manual_seed(3)
    cases |= {
        f"random masks, seed {s}": _random_masks(generator, n, 1 + s % 3, batch=2 if s % 2 else None) for s in range(4)
    }
    expected = {name: _by_gradients(masks, seed) for seed, (name, masks) in enumerate(cases.items())}
    for s, size in enumerate([1, 2, 9, 17, 17, 30]):  # longer and deeper: composed by the definition, pair by pair
        masks = _random_masks(generator, size, 2 + s % 4, batch=3 if s % 2 else None)
        reach = torch.eye(size, dtype=torch.bool)
        for mask in masks:  # i reaches j if it reads (or is) some k that reached j
            reach = ((mask | torch.eye(size, dtype=torch.bool))[..., :, :, None] & reach[..., None, :, :]).any(dim=-2)
        name = f"{len(masks)} random blocks of {size} positions"
        cases[name], expected[name] = masks, reach
    # A deep stack: 24 ** 40 ways from one position to another, more than any integer or float count can hold.
    deep = "40 blocks that each let every position read every other"
    cases[deep], expected[deep] = [torch.ones(24, 24, dtype=torch.bool)] * 40, torch.ones(24, 24, dtype=torch.bool)
    for name, masks in cases.items():
        what = f"receptive_field({name}, masks {[tuple(m.shape) for m in masks]})"
        with forbid(
            "scratch.l05_transformer_block.EncoderBlock.forward",
            "scratch.l04_multi_head_attention.MultiHeadAttention.forward",
            "scratch.l03_attention.scaled_dot_product_attention",
            "torch.nn.functional.scaled_dot_product_attention",
            "torch.softmax",
            "torch.Tensor.backward",
            "torch.autograd.backward",
            "torch.autograd.grad",
            hint="work it out from the masks: which positions each block lets position i read",
        ):
            got = call(student_receptive_field, [m.clone() for m in masks], what=what)
        want = expected[name]
        tensor(got, what + " (batched if any mask is)", shape=want.shape, dtype=torch.bool)
        assert equal(got, want), (
            f"hint: {what}: expected\n{want.int()}\ngot\n{got.int()}\n(row i = output, column j = input). What does "
            "each sub-layer of a block let position i read, the residual connection included, and how do blocks "
            "compose, bottom first? (lecture 5, section 5)"
        )
    reach = values(call(student_receptive_field, [_window(32, 4)] * 6, what="receptive_field")[31].nonzero().flatten())
    print(f"a window of 4 through 6 blocks: position 31 depends on {len(reach)} positions ({reach[0]}..{reach[-1]})")
    print("Exercise 3: OK")


def _pre_ln_stack(n_layers, seed, d=16, heads=4, d_ff=64, activation="relu", bias=True):
    torch.manual_seed(seed)
    blocks = (
        EncoderBlock(d, heads, d_ff, dropout=0.0, activation=activation, norm_first=True, bias=bias)
        for _ in range(n_layers)
    )
    return _ModuleList(blocks).double().eval()


def _measure(stack, seed=0):
    # at initialisation: the RMS of all writes together (top of the stream - input), the top block's W2 gradient
    d = stack[0].norm1.weight.shape[0]
    generator = torch.Generator().manual_seed(seed)
    inputs, target = torch.randn(2, 8, 16, d, generator=generator, dtype=torch.float64)
    stream = inputs
    for block in stack:
        stream = block(stream, causal_mask(16))
    stack.zero_grad()
    F.mse_loss(F.layer_norm(stream, (d,)), target).backward()  # the final LayerNorm of a pre-LN stack
    return (stream - inputs).pow(2).mean().sqrt().item(), stack[-1].ffn.linear2.weight.grad.norm().item()


def _global_hooks():
    return len(torch_module._global_forward_hooks) + len(torch_module._global_forward_pre_hooks)


def scale_residual_writes_(student_scale):
    """Exercise 4."""
    untampered()
    configs = [  # (N, d_model, h, d_ff, activation, bias)
        (2, 16, 4, 64, "relu", True),
        (32, 16, 4, 64, "relu", True),
        (1, 8, 2, 16, "gelu", True),
        (5, 24, 3, 40, "gelu", False),
        (12, 16, 8, 32, "relu", False),
    ]
    results = {}
    for n_layers, d, heads, d_ff, activation, bias in configs:
        what = (
            f"scale_residual_writes_ on {n_layers} blocks (d_model={d}, h={heads}, d_ff={d_ff}, {activation}, "
            f"bias={bias})"
        )
        stack = _pre_ln_stack(n_layers, n_layers, d, heads, d_ff, activation, bias)
        before = _deepcopy(stack)
        tensors = {name: (p, p.data_ptr()) for name, p in stack.named_parameters()}
        hooks = _global_hooks()
        call(student_scale, stack, what=what)
        c = 1 / math.sqrt(2 * n_layers)
        for name, p in stack.named_parameters():
            assert name in tensors and p is tensors[name][0] and p.data_ptr() == tensors[name][1], (
                f"hint: {what}: {name} is a new tensor: rescale the existing parameters in place, so that an "
                "optimizer holding them sees the change"
            )
        assert _global_hooks() == hooks and not any(
            m._forward_hooks or m._forward_pre_hooks for m in stack.modules()
        ), f"hint: {what}: no hooks: rescale the parameters themselves"
        probe = torch.randn(3, 5, d, dtype=torch.float64)
        with _no_grad():
            for i, (new, old) in enumerate(zip(stack, before)):
                for part, name in [("self_attn", "attention"), ("ffn", "feed-forward network")]:
                    new_out, old_out = getattr(new, part)(probe), getattr(old, part)(probe)
                    ratio = (new_out.norm() / old_out.norm()).item()
                    assert close(new_out, c * old_out, atol=1e-12), (
                        f"hint: {what}, block {i}: the {name}'s output changed by a factor {ratio:.4f} (or not by one "
                        "factor at all): every write must shrink by the same factor, chosen so that 2N independent "
                        "writes add up to the size of one; which parameters produce a write? (lecture 5, section 5)"
                    )
                for (name, p), q in zip(new.named_parameters(), old.parameters()):
                    assert not name.startswith("norm") or equal(p, q), (
                        f"hint: {what}: {name} changed: the LayerNorms do not write into the stream, leave them alone"
                    )
        if n_layers in (2, 32) and d == 16:
            results[n_layers] = {"before": _measure(before), "after": _measure(stack)}
    for when in ("before", "after"):
        (w2, g2), (w32, g32) = results[2][when], results[32][when]
        print(
            f"{when:6s} scaling: all writes together {w2:.2f} at depth 2, {w32:.2f} at depth 32; "
            f"top block's W2 gradient {g2:.3f} at depth 2, {g32:.3f} at depth 32"
        )
    print("Exercise 4: OK. After scaling, 32 blocks start out like 2.")


def decoder_block_step(student_step):
    """Exercise 5."""
    untampered()
    torch.manual_seed(5)
    configs = [  # (d_model, h, d_ff, norm_first, batch, n, m)
        (16, 4, 64, False, 2, 6, 7),
        (16, 4, 64, True, 2, 6, 7),
        (24, 2, 32, True, 1, 9, 3),
        (32, 8, 48, False, 3, 5, 11),
        (12, 1, 24, True, 2, 4, 1),
        (16, 4, 16, False, 1, 24, 24),  # long enough that recomputing the past costs more than the step itself
        (16, 4, 16, True, 1, 24, 24),
    ]
    for d, heads, d_ff, norm_first, batch, n, m in configs:
        where = (
            f"decoder_block_step, {'pre-LN' if norm_first else 'post-LN'}, d_model={d}, h={heads}, d_ff={d_ff}, "
            f"batch {batch}, n={n}, m={m}"
        )
        block = randomised(DecoderBlock(d, heads, d_ff, norm_first=norm_first))
        target, memory = torch.randn(batch, n, d, dtype=torch.float64), torch.randn(batch, m, d, dtype=torch.float64)
        with _no_grad():
            expected = block(target, memory, self_mask=causal_mask(n))
        cache, steps = {}, []
        with (
            _no_grad(),
            forbid(
                "scratch.l10_decoding.KVCache.append",
                "scratch.l05_transformer_block.DecoderBlock.forward",
                "torch.Tensor.numpy",
                "torch.Tensor.tolist",
                "torch.Tensor.__array__",  # numpy's other ways in: what they compute, the FLOP counter does not see
                "torch.Tensor.__dlpack__",
                hint="keep the past positions' keys and values in `cache` yourself, in torch",
            ),
            FlopCounterMode(display=False) as flops,
        ):
            for t in range(n):
                step = call(
                    student_step, block, target[:, t : t + 1].clone(), memory, cache, what=f"{where}, position {t}"
                )
                steps.append(tensor(step, f"{where}, position {t}: the new position only", shape=(batch, 1, d)))
        got = torch.cat(steps, dim=1)
        assert close(got[:, 0], expected[:, 0], atol=1e-10), (
            f"hint: {where}: even the first position differs: follow the block's sub-layers in order, with its Add & "
            "Norm where this block puts them (block.norm_first) (lecture 5, sections 5 and 6)"
        )
        wrong = [t for t in range(n) if not close(got[:, t], expected[:, t], atol=1e-10)]
        assert not wrong, (
            f"hint: {where}: positions {wrong} differ: which earlier positions does position t attend to, and from "
            "what was each of their keys and values computed?"
        )
        # what one pass with each key and value computed once takes, in multiply-adds (batch rows each):
        per_step = 6 * d * d + 2 * d * d_ff  # q, k, v, o of self-attention, q, o of cross-attention, the FFN
        attention = sum(2 * d * (t + 1) + 2 * d * m for t in range(n))  # scores and weighted sums, both attentions
        needed = batch * (n * per_step + 2 * m * d * d + attention)  # + the memory's keys and values, once
        done = flops.get_total_flops() // 2
        assert done <= 1.3 * needed, (
            f"hint: {where}: your steps did {done:,} multiply-adds where about {needed:,} suffice: compute each "
            "position's keys and values once and keep them, the memory's too"
        )
    print("Exercise 5: OK. One position at a time, each key and value computed once.")
