"""scratch.l05_transformer_block: LayerNorm, FeedForward, the encoder/decoder blocks against torch.nn; bad input."""

import math

import pytest
import torch
from torch import nn

from scratch.l03_attention import causal_mask, padding_mask
from scratch.l05_transformer_block import DecoderBlock, EncoderBlock, FeedForward, LayerNorm


def randn(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def randomise_(module, seed=0):
    """Random values for every parameter (LayerNorm gains and biases too, so they are really tested)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.3)
    return module


# ---------------------------------------------------------------- LayerNorm


@pytest.mark.parametrize("shape", [(7,), (3, 16), (2, 5, 32)])
@pytest.mark.parametrize("eps", [1e-5, 1e-12])
def test_layernorm_matches_torch(shape, eps):
    d = shape[-1]
    ours, ref = LayerNorm(d, eps).double(), nn.LayerNorm(d, eps=eps).double()
    randomise_(ref, seed=1)
    ours.load_state_dict(ref.state_dict())  # same parameter names: weight, bias
    x = randn(*shape, seed=2) * 3 + 1
    torch.testing.assert_close(ours(x), ref(x), atol=1e-12, rtol=0)


def test_layernorm_normalises_each_position():
    x = randn(4, 6, 10, seed=3) * 5 + 2
    y = LayerNorm(10).double()(x)  # gamma = 1, beta = 0 at initialisation
    torch.testing.assert_close(y.mean(-1), torch.zeros(4, 6, dtype=torch.float64), atol=1e-12, rtol=0)
    variance = y.var(-1, correction=0)  # var / (var + eps): 1 up to eps
    torch.testing.assert_close(variance, torch.ones(4, 6, dtype=torch.float64), atol=1e-4, rtol=0)


def test_layernorm_bad_input():
    with pytest.raises(ValueError, match="eps"):
        LayerNorm(8, eps=0.0)
    with pytest.raises(ValueError, match="d_model"):
        LayerNorm(0)


# ---------------------------------------------------------------- FeedForward

REFERENCE_ACTIVATIONS = {
    "relu": lambda x: x.clamp(min=0),
    "gelu": lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2))),
    "gelu_tanh": lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
}


@pytest.mark.parametrize("activation", list(REFERENCE_ACTIVATIONS))
def test_feedforward_matches_formula(activation):
    ffn = FeedForward(16, 64, activation).double()
    x = randn(3, 5, 16, seed=4)
    expected = ffn.linear2(REFERENCE_ACTIVATIONS[activation](ffn.linear1(x)))
    y = ffn(x)
    assert y.shape == (3, 5, 16)
    torch.testing.assert_close(y, expected, atol=1e-12, rtol=0)


def test_feedforward_is_position_wise():
    ffn = FeedForward(8, 32, "gelu").double()
    x = randn(2, 6, 8, seed=5)
    each = torch.stack([ffn(x[:, t]) for t in range(6)], dim=1)  # one position at a time
    torch.testing.assert_close(ffn(x), each, atol=1e-12, rtol=0)


def test_feedforward_bad_input():
    """A layer is written as its lecture writes it; the models' configs give the friendlier messages."""
    with pytest.raises(KeyError, match="swish"):
        FeedForward(8, 32, "swish")
    with pytest.raises(ValueError, match="dropout"):
        FeedForward(8, 32, dropout=1.5)


# ---------------------------------------------------------------- blocks vs torch.nn.Transformer*Layer


def copy_attention(ours, theirs):
    """torch's MultiheadAttention packs W^Q, W^K, W^V in in_proj_weight (3 d_model, d_model)."""
    w_q, w_k, w_v = theirs.in_proj_weight.chunk(3)
    b_q, b_k, b_v = theirs.in_proj_bias.chunk(3)
    with torch.no_grad():
        for linear, w, b in (
            (ours.w_q, w_q, b_q),
            (ours.w_k, w_k, b_k),
            (ours.w_v, w_v, b_v),
            (ours.w_o, theirs.out_proj.weight, theirs.out_proj.bias),
        ):
            linear.weight.copy_(w)
            linear.bias.copy_(b)


def copy_common(ours, theirs, norms):
    copy_attention(ours.self_attn, theirs.self_attn)
    ours.ffn.linear1.load_state_dict(theirs.linear1.state_dict())
    ours.ffn.linear2.load_state_dict(theirs.linear2.state_dict())
    for name in norms:
        getattr(ours, name).load_state_dict(getattr(theirs, name).state_dict())


D_MODEL, H, D_FF = 32, 4, 64
CASES = [
    (norm_first, activation, dtype)
    for norm_first in (False, True)
    for activation in ("relu", "gelu")
    for dtype in (torch.float32, torch.float64)
]


def tolerance(dtype):
    return dict(atol=1e-5, rtol=1e-5) if dtype == torch.float32 else dict(atol=1e-12, rtol=0)


@pytest.mark.parametrize("norm_first, activation, dtype", CASES)
def test_encoder_block_matches_torch(norm_first, activation, dtype):
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(
        D_MODEL, H, D_FF, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    ).to(dtype)
    randomise_(theirs, seed=1)
    ours = EncoderBlock(D_MODEL, H, D_FF, dropout=0.0, activation=activation, norm_first=norm_first).to(dtype)
    copy_common(ours, theirs, ["norm1", "norm2"])
    ours.eval(), theirs.eval()
    x = randn(3, 7, D_MODEL, seed=2, dtype=dtype)
    ids = torch.tensor([[5] * 7, [5] * 5 + [0] * 2, [5] * 3 + [0] * 4])  # padded batch
    with torch.no_grad():
        torch.testing.assert_close(ours(x), theirs(x), **tolerance(dtype))
        # torch's key padding mask is True = ignore; ours is True = may attend
        out = ours(x, mask=padding_mask(ids, 0))
        ref = theirs(x, src_key_padding_mask=ids == 0)
        torch.testing.assert_close(out, ref, **tolerance(dtype))
        out, weights = ours.forward_with_weights(x, mask=causal_mask(7))
        ref = theirs(x, src_mask=~causal_mask(7), is_causal=False)
        torch.testing.assert_close(out, ref, **tolerance(dtype))
    assert weights.shape == (3, H, 7, 7)
    assert (weights.triu(1) == 0).all()


@pytest.mark.parametrize("norm_first, activation, dtype", CASES)
def test_decoder_block_matches_torch(norm_first, activation, dtype):
    torch.manual_seed(0)
    theirs = nn.TransformerDecoderLayer(
        D_MODEL, H, D_FF, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    ).to(dtype)
    randomise_(theirs, seed=3)
    ours = DecoderBlock(D_MODEL, H, D_FF, dropout=0.0, activation=activation, norm_first=norm_first).to(dtype)
    copy_common(ours, theirs, ["norm1", "norm2", "norm3"])
    copy_attention(ours.cross_attn, theirs.multihead_attn)
    ours.eval(), theirs.eval()
    x, memory = randn(3, 6, D_MODEL, seed=4, dtype=dtype), randn(3, 9, D_MODEL, seed=5, dtype=dtype)
    src = torch.tensor([[4] * 9, [4] * 6 + [0] * 3, [4] * 2 + [0] * 7])
    with torch.no_grad():
        out, self_w, cross_w = ours.forward_with_weights(
            x, memory, self_mask=causal_mask(6), memory_mask=padding_mask(src, 0)
        )
        ref = theirs(x, memory, tgt_mask=~causal_mask(6), memory_key_padding_mask=src == 0)
        torch.testing.assert_close(out, ref, **tolerance(dtype))
        torch.testing.assert_close(ours(x, memory), theirs(x, memory), **tolerance(dtype))
    assert self_w.shape == (3, H, 6, 6) and cross_w.shape == (3, H, 6, 9)
    assert (cross_w[2, :, :, 2:] == 0).all()  # padded source positions get no attention
    torch.testing.assert_close(cross_w.sum(-1), torch.ones(3, H, 6, dtype=dtype), **tolerance(dtype))


def test_dropout_only_in_training():
    block = EncoderBlock(D_MODEL, H, D_FF, dropout=0.3).double()
    assert block.self_attn.dropout == 0.3  # on the attention weights, as torch does
    x = randn(2, 5, D_MODEL, seed=6)
    train_out = block.train()(x)
    eval_out = block.eval()(x)
    assert not torch.allclose(train_out, eval_out)
    torch.testing.assert_close(block(x), eval_out, atol=0, rtol=0)  # eval mode is deterministic


def test_residual_stream_is_identity_plus_correction():
    """pre-LN with every sub-layer's output projection at zero: the block is exactly the identity."""
    block = EncoderBlock(D_MODEL, H, D_FF, dropout=0.0, norm_first=True).double()
    with torch.no_grad():
        for linear in (block.self_attn.w_o, block.ffn.linear2):
            linear.weight.zero_()
            linear.bias.zero_()
    x = randn(2, 5, D_MODEL, seed=7)
    torch.testing.assert_close(block(x), x, atol=0, rtol=0)


# ---------------------------------------------------------------- bad input


def test_blocks_bad_input():
    with pytest.raises(ValueError, match="divisible"):
        EncoderBlock(30, 4, 64)
    with pytest.raises(ValueError, match="divisible"):
        DecoderBlock(30, 4, 64)
    with pytest.raises(KeyError, match="tanh"):
        EncoderBlock(32, 4, 64, activation="tanh")
    with pytest.raises(ValueError, match="dropout"):
        DecoderBlock(32, 4, 64, dropout=-0.1)
