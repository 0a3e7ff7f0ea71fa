"""scratch.l03_attention and l04_multi_head_attention: parity with PyTorch, a worked example, properties, bad input."""

import math

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from scratch.l03_attention import causal_mask, padding_mask, scaled_dot_product_attention
from scratch.l04_multi_head_attention import MultiHeadAttention

DTYPE = torch.float64


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=DTYPE)


def random_mask(*shape, seed=0):
    """A random boolean mask (True = may attend) where every query row keeps at least one key."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(*shape, generator=g) < 0.5
    keep = torch.randint(shape[-1], shape[:-1], generator=g)
    return mask.scatter(-1, keep.unsqueeze(-1), True)


def reference_weights(q, k, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1)


# ---------------------------------------------------------------- scaled dot-product attention

SHAPES = [  # (leading dims, N, M, d_k, d_v)
    ((), 5, 5, 8, 8),
    ((), 3, 7, 4, 6),
    ((2,), 6, 4, 16, 3),
    ((2, 4), 5, 9, 8, 12),
    ((3, 1), 1, 1, 2, 5),
]


@pytest.mark.parametrize("lead, n, m, d_k, d_v", SHAPES)
@pytest.mark.parametrize("masking", ["none", "random", "causal"])
def test_sdpa_matches_torch(lead, n, m, d_k, d_v, masking):
    q, k, v = randn(*lead, n, d_k, seed=1), randn(*lead, m, d_k, seed=2), randn(*lead, m, d_v, seed=3)
    # for N != M, the top-left (N, M) corner of a causal mask: query i sees keys 0..i
    mask = {"none": None, "random": random_mask(*lead, n, m), "causal": causal_mask(max(n, m))[:n, :m]}[masking]
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert out.shape == (*lead, n, d_v) and weights.shape == (*lead, n, m)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-12, rtol=0)
    torch.testing.assert_close(weights, reference_weights(q, k, mask), atol=1e-14, rtol=0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(*lead, n, dtype=DTYPE), atol=1e-14, rtol=0)


def test_sdpa_broadcasts_leading_dims_and_masks():
    q = randn(2, 4, 5, 8, seed=1)  # (batch, h, N, d_k)
    k, v = randn(2, 1, 6, 8, seed=2), randn(1, 4, 6, 3, seed=3)
    mask = random_mask(2, 1, 1, 6)  # one key mask per sequence, shared by heads and queries
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert out.shape == (2, 4, 5, 3) and weights.shape == (2, 4, 5, 6)
    expected = F.scaled_dot_product_attention(q, k.expand(2, 4, 6, 8), v.expand(2, 4, 6, 3), attn_mask=mask)
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=0)
    assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()


def test_lecture_example_exact():
    w_q = torch.tensor([[0.9, 0.9], [0.5, 0.3]], dtype=DTYPE)
    w_k = torch.tensor([[1, 0.9], [1, 0.6]], dtype=DTYPE)
    w_v = torch.tensor([[0.8, 0.9], [0.9, 1]], dtype=DTYPE)
    x = torch.tensor([[0.1, 0.5], [0.1, 0.2], [0.9, 0.9]], dtype=DTYPE)
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    torch.testing.assert_close(q[0], torch.tensor([0.34, 0.24], dtype=DTYPE), atol=1e-12, rtol=0)
    torch.testing.assert_close(
        k, torch.tensor([[0.6, 0.39], [0.3, 0.21], [1.8, 1.35]], dtype=DTYPE), atol=1e-12, rtol=0
    )
    torch.testing.assert_close(
        v, torch.tensor([[0.53, 0.59], [0.26, 0.29], [1.53, 1.71]], dtype=DTYPE), atol=1e-12, rtol=0
    )
    out, _ = scaled_dot_product_attention(q, k, v)
    slide = torch.tensor([[0.91206089, 1.01853181], [0.85265927, 0.95207572], [1.29104276, 1.44257501]], dtype=DTYPE)
    torch.testing.assert_close(out, slide, atol=1e-8, rtol=0)


def test_self_attention_is_permutation_equivariant():
    x = randn(7, 16)
    mha = MultiHeadAttention(16, 4).double().eval()
    perm = torch.randperm(7, generator=torch.Generator().manual_seed(0))
    out, weights = scaled_dot_product_attention(x, x, x)
    out_p, weights_p = scaled_dot_product_attention(x[perm], x[perm], x[perm])
    torch.testing.assert_close(out_p, out[perm], atol=1e-12, rtol=0)
    torch.testing.assert_close(weights_p, weights[perm][:, perm], atol=1e-14, rtol=0)
    with torch.no_grad():
        torch.testing.assert_close(mha(x[perm][None]), mha(x[None])[:, perm], atol=1e-12, rtol=0)


def test_causal_mask_gives_exactly_zero_weight_above_the_diagonal():
    mask = causal_mask(6)
    assert mask.dtype == torch.bool and mask.shape == (6, 6)
    assert mask.equal(torch.tensor([[j <= i for j in range(6)] for i in range(6)]))
    x = randn(2, 6, 4)
    _, weights = scaled_dot_product_attention(x, x, x, mask)
    above = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    assert (weights[:, above] == 0).all()
    assert (weights[:, 0, 0] == 1).all()  # token 1 sees only itself
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 6, dtype=DTYPE), atol=1e-14, rtol=0)


def test_padding_mask():
    ids = torch.tensor([[5, 6, 7, 0, 0], [8, 9, 1, 2, 3]])
    mask = padding_mask(ids, pad_id=0)
    assert mask.shape == (2, 1, 1, 5) and mask.dtype == torch.bool
    assert mask[:, 0, 0].equal(ids != 0)
    x = randn(2, 3, 5, 4)  # (batch, h, M, d)
    _, weights = scaled_dot_product_attention(x, x, x, mask)
    assert (weights[0, :, :, 3:] == 0).all() and (weights[1] > 0).all()


def test_dropout_only_in_training():
    x = randn(1, 6, 8)
    mha = MultiHeadAttention(8, 2, dropout=0.5).double()
    torch.manual_seed(0)
    _, weights = mha.forward_with_weights(x)
    assert (weights == 0).any()  # some weights dropped, the others scaled by 2
    mha.eval()
    _, weights = mha.forward_with_weights(x)
    torch.testing.assert_close(weights.sum(-1), torch.ones(1, 2, 6, dtype=DTYPE), atol=1e-14, rtol=0)


# ---------------------------------------------------------------- multi-head attention vs torch.nn.MultiheadAttention


def mha_pair(d_model, h, bias=True, seed=0):
    torch.manual_seed(seed)
    ref = nn.MultiheadAttention(d_model, h, bias=bias, batch_first=True, dtype=DTYPE).eval()
    if bias:  # torch initialises the biases to 0; random ones make the test meaningful
        with torch.no_grad():
            ref.in_proj_bias.normal_()
            ref.out_proj.bias.normal_()
    ours = MultiHeadAttention(d_model, h, bias=bias).to(DTYPE).eval()
    w_q, w_k, w_v = ref.in_proj_weight.chunk(3)
    with torch.no_grad():
        for linear, weight in zip([ours.w_q, ours.w_k, ours.w_v], [w_q, w_k, w_v]):
            linear.weight.copy_(weight)
        ours.w_o.weight.copy_(ref.out_proj.weight)
        if bias:
            for linear, b in zip([ours.w_q, ours.w_k, ours.w_v], ref.in_proj_bias.chunk(3)):
                linear.bias.copy_(b)
            ours.w_o.bias.copy_(ref.out_proj.bias)
    return ours, ref


def assert_same(ours_out, ours_weights, ref_out, ref_weights):
    torch.testing.assert_close(ours_out, ref_out, atol=1e-10, rtol=0)
    torch.testing.assert_close(ours_weights.mean(dim=1), ref_weights, atol=1e-12, rtol=0)  # torch: head average


@pytest.mark.parametrize("d_model, h", [(16, 4), (12, 1), (24, 8)])
@pytest.mark.parametrize("bias", [True, False])
def test_mha_self_attention_matches_torch(d_model, h, bias):
    ours, ref = mha_pair(d_model, h, bias)
    x = randn(3, 7, d_model)
    with torch.no_grad():
        out, weights = ours.forward_with_weights(x)
        ref_out, ref_weights = ref(x, x, x, need_weights=True, average_attn_weights=True)
    assert out.shape == (3, 7, d_model) and weights.shape == (3, h, 7, 7)
    assert_same(out, weights, ref_out, ref_weights)
    _, ref_per_head = ref(x, x, x, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(weights, ref_per_head, atol=1e-12, rtol=0)


def test_mha_cross_attention_matches_torch():
    ours, ref = mha_pair(16, 4)
    query, memory = randn(2, 3, 16, seed=1), randn(2, 8, 16, seed=2)  # N = 3 queries, M = 8 keys
    with torch.no_grad():
        out, weights = ours.forward_with_weights(query, memory)  # value defaults to key
        ref_out, ref_weights = ref(query, memory, memory, need_weights=True)
        assert weights.shape == (2, 4, 3, 8)
        assert_same(out, weights, ref_out, ref_weights)
        value = randn(2, 8, 16, seed=3)
        torch.testing.assert_close(ours(query, memory, value), ref(query, memory, value)[0], atol=1e-10, rtol=0)


def test_mha_causal_mask_matches_torch():
    ours, ref = mha_pair(16, 4)
    x = randn(2, 6, 16)
    mask = causal_mask(6)
    with torch.no_grad():
        out, weights = ours.forward_with_weights(x, mask=mask)
        # nn.MultiheadAttention's boolean attn_mask means the opposite: True = NOT allowed to attend
        ref_out, ref_weights = ref(x, x, x, attn_mask=~mask, need_weights=True)
    assert_same(out, weights, ref_out, ref_weights)
    assert (weights[..., ~mask] == 0).all()


def test_mha_padding_and_batched_masks_match_torch():
    ours, ref = mha_pair(16, 4)
    ids = torch.tensor([[4, 5, 6, 7, 0, 0], [4, 5, 6, 7, 8, 9]])
    x = randn(2, 6, 16)
    with torch.no_grad():
        out, weights = ours.forward_with_weights(x, mask=padding_mask(ids, 0))
        # torch's key_padding_mask: (batch, M), True = padding (ignored)
        ref_out, ref_weights = ref(x, x, x, key_padding_mask=ids == 0, need_weights=True)
        assert_same(out, weights, ref_out, ref_weights)
        # a (batch, N, M) mask: per-sequence, shared by all heads; torch wants (batch * h, N, M)
        mask = random_mask(2, 6, 6, seed=5)
        out, weights = ours.forward_with_weights(x, mask=mask)
        ref_out, ref_weights = ref(x, x, x, attn_mask=(~mask).repeat_interleave(4, dim=0), need_weights=True)
        assert_same(out, weights, ref_out, ref_weights)
        # causal and padding together: (N, M) & (batch, 1, 1, M) -> (batch, 1, N, M)
        both = causal_mask(6) & padding_mask(ids, 0)
        out, weights = ours.forward_with_weights(x, mask=both)
        ref_out, ref_weights = ref(x, x, x, attn_mask=~causal_mask(6), key_padding_mask=ids == 0, need_weights=True)
        assert_same(out, weights, ref_out, ref_weights)


def test_mha_returns_output_only_by_default_and_counts_parameters():
    mha = MultiHeadAttention(512, 8)
    assert (mha.d_k, mha.h) == (64, 8)
    assert sum(p.numel() for p in mha.parameters()) == 4 * 512 * 512 + 4 * 512
    assert sum(p.numel() for p in MultiHeadAttention(512, 8, bias=False).parameters()) == 4 * 512 * 512
    out = mha(torch.randn(2, 5, 512))
    assert isinstance(out, torch.Tensor) and out.shape == (2, 5, 512)


# ---------------------------------------------------------------- bad input


def test_a_query_that_may_attend_to_nothing_gets_nan():
    """Not checked at every call (that would wait for the device in every layer): the softmax over nothing is NaN,
    and only that query's row."""
    q, k, v = randn(4, 8), randn(5, 8), randn(5, 3)
    mask = torch.ones(4, 5, dtype=torch.bool)
    mask[2] = False
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert out[2].isnan().all() and weights[2].isnan().all()
    assert not out[[0, 1, 3]].isnan().any()


def test_bad_input_masks_and_mha():
    for n, error in [(0, ValueError), (-1, ValueError), (2.0, TypeError), (True, TypeError)]:
        with pytest.raises(error, match="n \\(the sequence length\\) must be"):
            causal_mask(n)
    assert torch.equal(causal_mask(np.int64(3)), causal_mask(3))  # numpy ints are ints, as everywhere
    with pytest.raises(TypeError, match="integer tensor"):
        padding_mask(torch.zeros(2, 3), 0)
    with pytest.raises(ValueError, match=r"shape \(batch, length\)"):
        padding_mask(torch.zeros(3, dtype=torch.long), 0)
    with pytest.raises(ValueError, match="only of padding"):
        padding_mask(torch.tensor([[1, 2], [0, 0]]), 0)
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(10, 3)
