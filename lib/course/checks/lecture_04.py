"""Checks of lecture 4's exercises (exercises/04_multi_head_attention.ipynb); see course.checks."""

import random

from torch import nn

from course.checks.support import BUILTINS, call, close, equal, finite, integer, tensor, tools, torch, untampered
from scratch.l03_attention import causal_mask
from scratch.l04_multi_head_attention import MultiHeadAttention

__builtins__ = BUILTINS  # the built-ins as they were when the set-up cell imported this module

forbid = tools.forbid
_Random, _TorchMHA, _no_grad = random.Random, nn.MultiheadAttention, torch.no_grad


def _expected_split(qkv, h, layout):  # head by head, column by column
    d_k = qkv.shape[-1] // (3 * h)
    out = []
    for part in range(3):  # q, k, v
        if layout == "blocks":
            cols = [[part * h * d_k + j * d_k + c for c in range(d_k)] for j in range(h)]
        else:
            cols = [[j * 3 * d_k + part * d_k + c for c in range(d_k)] for j in range(h)]
        out.append(torch.stack([qkv[..., cols[j]] for j in range(h)], dim=-3))  # (..., h, N, d_k)
    return out


def split_qkv(student_split_qkv):
    """Exercise 1."""
    untampered()
    generator = torch.Generator().manual_seed(1)
    for layout in ("blocks", "heads"):
        for lead in [(), (2,), (2, 3)]:
            for n, heads, d_k, dtype in [
                (5, 4, 8, torch.float32),
                (1, 1, 6, torch.float32),
                (3, 2, 3, torch.float64),
                (4, 8, 1, torch.float32),
                (2, 3, 5, torch.float32),
            ]:
                qkv = torch.randn(*lead, n, 3 * heads * d_k, generator=generator, dtype=dtype)
                what = f"split_qkv(qkv of shape {tuple(qkv.shape)}, h={heads}, layout={layout!r})"
                got = call(student_split_qkv, qkv, heads, layout, what=what)
                assert type(got) in (tuple, list) and len(got) == 3, f"hint: {what}: return (q, k, v)"
                want = (*lead, heads, n, d_k)
                for name, mine, reference in zip("qkv", got, _expected_split(qkv, heads, layout)):
                    tensor(mine, f"{what}: {name} is (..., h, N, d_k); keep every leading dimension", shape=want)
                    assert equal(mine, reference), (
                        f"hint: {what}: {name} holds the wrong columns: which columns belong to head j's {name} in "
                        f"the {layout!r} layout? (lecture 4, section 2)"
                    )
                storage = qkv.untyped_storage().data_ptr()
                assert all(t.untyped_storage().data_ptr() == storage for t in got), (
                    f"hint: {what}: q, k and v must be views of qkv (view, transpose, movedim, unbind, indexing), "
                    "not copies"
                )
    print("Exercise 1: OK")


def mha_parameter_count(student_count):
    """Exercise 2."""
    untampered()
    configs = [
        (512, 8, None, True),
        (512, 8, None, False),
        (512, 1, None, True),
        (512, 16, None, True),
        (576, 9, 3, False),
        (64, 8, 1, True),
        (32, 4, 4, True),
    ]
    draw = _Random(2)
    for _ in range(40):  # and many more: d_model = h · d_k, n_kv_heads a divisor of h
        heads, d_k = draw.choice([1, 2, 3, 4, 6, 8, 12]), draw.choice([1, 2, 5, 8, 16])
        n_kv = draw.choice([None] + [g for g in range(1, heads + 1) if heads % g == 0])
        configs.append((heads * d_k, heads, n_kv, draw.random() < 0.5))
    expected = {
        c: sum(p.numel() for p in MultiHeadAttention(c[0], c[1], bias=c[3], n_kv_heads=c[2]).parameters())
        for c in configs
    }
    with forbid(
        "scratch.l04_multi_head_attention.MultiHeadAttention.__init__",
        "torch.nn.Linear.__init__",
        "torch.nn.MultiheadAttention.__init__",
        hint="count by formula, without building a module",
    ):
        for c in configs:
            what = f"mha_parameter_count(d_model={c[0]}, h={c[1]}, n_kv_heads={c[2]}, bias={c[3]})"
            got = integer(call(student_count, c[0], c[1], n_kv_heads=c[2], bias=c[3], what=what), what)
            assert got == expected[c], (
                f"hint: {what}: expected {expected[c]:,}, got {got:,}: count each projection's weight and bias "
                "from its input and output widths; which of them shrink when K/V heads are shared? (lecture 4)"
            )
    print(
        f"SmolLM2's attention (d_model 576, 9 heads, 3 K/V heads, no biases): {expected[576, 9, 3, False]:,} "
        f"parameters per layer instead of {4 * 576**2:,}"
    )
    print("Exercise 2: OK")


def head_contributions(student_head_contributions):
    """Exercise 3."""
    untampered()
    torch.manual_seed(3)
    cases = [(32, 4, True, 2, 5), (24, 3, False, 1, 7), (16, 1, True, 3, 4), (32, 8, True, 2, 1), (12, 12, False, 2, 6)]
    for d, heads, bias, batch, n in cases:  # (d_model, h, bias, batch, N)
        module = MultiHeadAttention(d, heads, bias=bias).double().eval()
        if bias:
            with _no_grad():
                module.w_o.bias.normal_()  # a bias that counts
        inputs = torch.randn(batch, n, d, dtype=torch.float64)
        what = f"head_contributions(d_model={d}, h={heads}, bias={bias}, x {tuple(inputs.shape)})"
        with _no_grad():
            full = module(inputs)
            silenced_outputs = []
            for j in range(heads):  # silence head j by zeroing its rows of W^O: its contribution goes
                silenced = MultiHeadAttention(d, heads, bias=bias).double().eval()
                silenced.load_state_dict(module.state_dict())
                silenced.w_o.weight[:, j * module.d_k : (j + 1) * module.d_k] = 0
                silenced_outputs.append(silenced(inputs))
            with forbid(
                "scratch.l04_multi_head_attention.MultiHeadAttention.forward",
                "torch.nn.functional.multi_head_attention_forward",
                "torch._native_multi_head_attention",
                hint="compute the heads from w_q, w_k, w_v yourself",
            ):
                parts = call(student_head_contributions, module, inputs.clone(), what=what)
        tensor(parts, f"{what}: (batch, h, N, d_model); read h and d_k from the module", shape=(batch, heads, n, d))
        b_o = module.w_o.bias if bias else torch.zeros(d, dtype=torch.float64)
        assert close(parts.sum(dim=1) + b_o, full, atol=1e-10), (
            f"hint: {what}: the sum over heads plus the bias b^O (if any) must be mha(x): which rows of W^O does head "
            "j's output meet? (lecture 4, section 3)"
        )
        for j in range(heads):
            assert close(full - silenced_outputs[j], parts[:, j], atol=1e-10), (
                f"hint: {what}: parts[:, {j}] must be head {j}'s own contribution and nothing else (no share of "
                "the bias)"
            )
    print("Exercise 3: OK")


def torch_mha_by_hand(student_by_hand):
    """Exercise 4."""
    untampered()
    torch.manual_seed(4)
    cases = [  # (d_model, heads, bias, batch, N, M, real keys per sequence): padding light, heavy and none
        (32, 4, True, 2, 5, 7, [7, 3]),
        (32, 8, True, 3, 4, 6, [1, 6, 2]),
        (24, 2, False, 2, 3, 5, [5, 1]),
        (12, 1, True, 1, 6, 4, [4]),
        (36, 3, True, 2, 1, 9, [1, 9]),
    ]
    for d, heads, bias, batch, n, m, real in cases:
        module = _TorchMHA(d, heads, bias=bias, batch_first=True, dtype=torch.float64).eval()
        with _no_grad():
            if bias:  # torch starts its biases at 0: make them count
                module.in_proj_bias.normal_()
                module.out_proj.bias.normal_()
        query, key = torch.randn(batch, n, d, dtype=torch.float64), torch.randn(batch, m, d, dtype=torch.float64)
        ignore = torch.arange(m) >= torch.tensor(real)[:, None]  # (batch, M): True at the padded keys
        what = (
            f"torch_mha_by_hand(embed_dim={d}, num_heads={heads}, bias={bias}, query {tuple(query.shape)}, key "
            f"{tuple(key.shape)})"
        )
        with _no_grad():
            expected_out, expected_weights = module(query, key, key, key_padding_mask=ignore, need_weights=True)
            with forbid(
                "torch.nn.MultiheadAttention.forward",
                "torch.nn.functional.multi_head_attention_forward",
                "torch._native_multi_head_attention",
                "scratch.l04_multi_head_attention.MultiHeadAttention.forward",
                hint="compute it from in_proj_weight and out_proj",
            ):
                result = call(student_by_hand, module, query.clone(), key.clone(), ignore.clone(), what=what)
        assert type(result) is tuple and len(result) == 2, f"hint: {what}: return (out, weights)"
        out = tensor(result[0], f"{what}: out", shape=(batch, n, d))
        weights = tensor(result[1], f"{what}: weights, averaged over the heads", shape=(batch, n, m))
        ignored = ignore[:, None, :].expand(-1, n, -1)
        assert finite(weights) and equal(weights[ignored], torch.zeros_like(weights[ignored])), (
            f"hint: {what}: key_padding_mask is True at the keys to IGNORE: they must get weight exactly 0; use this "
            "call's mask"
        )
        assert close(weights, expected_weights, atol=1e-10), (
            f"hint: {what}: the weights differ: how does in_proj_weight stack the three projections, which biases "
            "apply, how wide is a head, and what scales its scores? (lecture 4, section 2)"
        )
        assert close(out, expected_out, atol=1e-10), (
            f"hint: {what}: the weights match but the output does not: how do the heads go back together before "
            "out_proj?"
        )
    print("Exercise 4: OK")


def gqa_by_hand(student_gqa):
    """Exercise 5."""
    untampered()
    torch.manual_seed(5)
    cases = [(32, 4, 4), (32, 4, 1), (32, 4, 2), (48, 6, 3), (48, 6, 2), (64, 8, 2), (16, 2, 1)]  # (d_model, h, n_kv)
    for d, heads, n_kv in cases:
        attn = MultiHeadAttention(d, heads, n_kv_heads=n_kv).double().eval()
        for batch, n in [(2, 5), (3, 1), (1, 6)]:
            inputs = torch.randn(batch, n, d, dtype=torch.float64)
            per_head = torch.rand(batch, heads, n, n) < 0.5
            per_head |= torch.eye(n, dtype=torch.bool)  # every query may attend to at least itself
            lengths = torch.randint(1, n + 1, (batch,))
            padding = (torch.arange(n) < lengths[:, None])[:, None, None, :]  # (batch, 1, 1, N)
            padding[..., 0] = True  # every query can see key 0
            masks = {
                "a causal mask (N, N)": causal_mask(n),
                "no mask": None,
                "a padding mask (batch, 1, 1, N)": padding,
            }
            masks["a mask per head (batch, h, N, N)"] = per_head
            keys_per_head = torch.rand(1, heads, 1, n) < 0.5  # the keys each head may see, in every sequence
            keys_per_head[..., 0] = True
            masks["a key mask per head for the whole batch (1, h, 1, N)"] = keys_per_head  # it broadcasts too
            for mask_name, mask in masks.items():
                what = f"gqa_by_hand(d_model={d}, h={heads}, n_kv_heads={n_kv}, x {tuple(inputs.shape)}, {mask_name})"
                with _no_grad():
                    expected = attn(inputs, mask=mask)
                    with forbid(
                        "scratch.l04_multi_head_attention.MultiHeadAttention.forward",
                        "torch.nn.functional.scaled_dot_product_attention",
                        "torch._native_multi_head_attention",
                        hint="project, split, share the K/V heads and attend yourself",
                    ):
                        args = (attn, inputs.clone()) if mask is None else (attn, inputs.clone(), mask.clone())
                        got = call(student_gqa, *args, what=what)
                tensor(got, f"{what}: the output has the input's shape", shape=inputs.shape)
                assert close(got, expected, atol=1e-10), (
                    f"hint: {what}: differs: which query heads does K/V head i serve, in which order? Pass the mask "
                    "you are given (None: no mask); any mask that broadcasts to (batch, h, N, N) must work "
                    "(lecture 4, grouped-query attention)"
                )
    shared = MultiHeadAttention(32, 4, n_kv_heads=2)
    print(f"W^K with 2 K/V heads for 4 query heads: {shared.w_k.weight.shape[0]} outputs instead of 32")
    print("Exercise 5: OK")
