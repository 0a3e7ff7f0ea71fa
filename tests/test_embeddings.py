"""scratch.l02_positions: sinusoidal table vs the formula, RoPE vs transformers' Llama, T5 buckets, bad input."""

import math

import pytest
import torch
import torch.nn.functional as F
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb
from transformers.models.llama.modeling_llama import rotate_half as hf_rotate_half
from transformers.models.t5.modeling_t5 import T5Attention

from scratch.l02_positions import (
    LearnedPositionalEmbedding,
    RelativePositionBias,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
    apply_rotary,
    relative_position_bucket,
    rotate_half,
    sinusoidal_positional_encoding,
)

# ---------------------------------------------------------------- token embeddings


def test_embedding_lookup_is_one_hot_times_weight():
    torch.manual_seed(0)
    embedding = torch.nn.Embedding(50, 8).double()
    ids = torch.tensor([[3, 7, 7, 0], [49, 1, 2, 3]])
    one_hot = F.one_hot(ids, num_classes=50).double()  # (batch, N, vocab)
    assert torch.equal(embedding(ids), one_hot @ embedding.weight)


# ---------------------------------------------------------------- sinusoidal


def annotated_transformer_pe(max_len, d_model):
    """The Annotated Transformer's exp/log form, in float64: a second derivation of the same table."""
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * -(math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


@pytest.mark.parametrize("max_len, d_model", [(1, 2), (7, 4), (100, 64), (1000, 768)])
def test_sinusoidal_matches_the_formula(max_len, d_model):
    ours = sinusoidal_positional_encoding(max_len, d_model, dtype=torch.float64)
    assert ours.shape == (max_len, d_model) and ours.dtype == torch.float64
    torch.testing.assert_close(ours, annotated_transformer_pe(max_len, d_model), rtol=0, atol=1e-12)
    # and entry by entry from the paper's formula, in plain Python floats
    for pos, i in [(0, 0), (max_len - 1, 0), (max_len - 1, d_model // 2 - 1), (max_len // 2, d_model // 4)]:
        angle = pos / 10000 ** (2 * i / d_model)
        assert ours[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-12)
        assert ours[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-12)


def test_sinusoidal_default_float32_is_the_rounded_float64_table():
    pe = sinusoidal_positional_encoding(2000, 512)
    assert pe.dtype == torch.float32
    assert torch.equal(pe, sinusoidal_positional_encoding(2000, 512, dtype=torch.float64).float())


def test_sinusoidal_rows_are_unique_and_bounded():
    pe = sinusoidal_positional_encoding(1000, 768, dtype=torch.float64)
    assert pe.abs().max() <= 1.0
    assert torch.equal(pe[0, 0::2], torch.zeros(384, dtype=torch.float64))  # sin(0) = 0, cos(0) = 1
    assert torch.equal(pe[0, 1::2], torch.ones(384, dtype=torch.float64))
    distances = torch.cdist(pe, pe) + torch.eye(1000, dtype=torch.float64) * 1e9
    assert distances.min() > 0.1  # no two positions share (or nearly share) a row
    # each sin/cos pair lies on the unit circle, so every row has the same norm sqrt(d_model / 2)
    torch.testing.assert_close(pe.norm(dim=1), torch.full((1000,), math.sqrt(384), dtype=torch.float64))


def test_sinusoidal_dot_product_depends_only_on_the_offset():
    pe = sinusoidal_positional_encoding(200, 64, dtype=torch.float64)
    gram = pe @ pe.T
    for k in [0, 1, 5, 37]:
        diagonal = torch.diagonal(gram, offset=k)
        torch.testing.assert_close(diagonal, diagonal[:1].expand_as(diagonal))


def test_sinusoidal_module_adds_the_table():
    module = SinusoidalPositionalEncoding(16, max_len=50)
    x = torch.randn(3, 10, 16)
    table = sinusoidal_positional_encoding(50, 16)
    assert torch.equal(module(x), x + table[:10])
    assert "pe" in dict(module.named_buffers()) and not list(module.parameters())
    assert module.state_dict() == {}  # recomputable: not saved
    assert module(x.double()).dtype == torch.float64


def test_sinusoidal_dropout_is_applied_in_training_only():
    module = SinusoidalPositionalEncoding(16, max_len=50, dropout=0.5)
    x = torch.randn(2, 10, 16)
    assert torch.equal(module.eval()(x), x + sinusoidal_positional_encoding(50, 16)[:10])
    assert (module.train()(x) == 0).any()


# ---------------------------------------------------------------- learned absolute positions


def test_learned_positional_embedding_adds_the_right_rows():
    torch.manual_seed(0)
    module = LearnedPositionalEmbedding(max_len=12, d_model=6)
    x = torch.randn(2, 5, 6)
    assert torch.equal(module(x), x + module.weight[:5])
    assert module.weight.shape == (12, 6) and module.weight.requires_grad
    module(x).sum().backward()  # only the rows that were used receive a gradient
    assert module.weight.grad[:5].abs().sum() > 0 and torch.equal(module.weight.grad[5:], torch.zeros(7, 6))


# ---------------------------------------------------------------- RoPE


def hf_cos_sin(d_head, positions, base=10000.0, dtype=torch.float32):
    config = LlamaConfig(
        hidden_size=d_head * 4, num_attention_heads=4, head_dim=d_head, max_position_embeddings=4096, rope_theta=base
    )
    rope = LlamaRotaryEmbedding(config)
    return rope(torch.zeros(1, dtype=dtype), positions)


@pytest.mark.parametrize("d_head, base", [(64, 10000.0), (16, 100000.0), (2, 10000.0)])
def test_rope_matches_transformers_llama(d_head, base):
    torch.manual_seed(0)
    batch, h, n = 2, 3, 11
    q, k = torch.randn(batch, h, n, d_head), torch.randn(batch, h, n, d_head)
    positions = torch.arange(n).expand(batch, n)
    cos, sin = hf_cos_sin(d_head, positions, base)
    hf_q, hf_k = apply_rotary_pos_emb(q, k, cos, sin)
    ours = RotaryEmbedding(d_head, base=base)
    our_q, our_k = ours(q, k)
    assert torch.equal(our_q, hf_q) and torch.equal(our_k, hf_k)  # same float32 arithmetic: bit for bit
    assert torch.equal(ours.cos_sin(n)[0], cos[0]) and torch.equal(ours.cos_sin(n)[1], sin[0])
    # float64 inputs: the same float32 angles, rotation done in float64
    q64, k64 = q.double(), k.double()
    hf_q64, hf_k64 = apply_rotary_pos_emb(q64, k64, cos.double(), sin.double())
    our_q64, our_k64 = ours(q64, k64)
    torch.testing.assert_close(our_q64, hf_q64, rtol=0, atol=1e-12)
    torch.testing.assert_close(our_k64, hf_k64, rtol=0, atol=1e-12)


def test_rope_positions_offset_and_batched_positions_match_transformers():
    torch.manual_seed(0)
    d_head, n = 32, 5
    q = torch.randn(2, 4, n, d_head)
    rope = RotaryEmbedding(d_head, max_len=512)
    positions = torch.tensor([[100, 101, 102, 103, 104], [7, 3, 0, 400, 9]])
    cos, sin = hf_cos_sin(d_head, positions)
    expected, _ = apply_rotary_pos_emb(q, q, cos, sin)
    assert torch.equal(rope.rotate(q, positions), expected)
    # an int offset = positions offset..offset + N - 1 (decoding with a KV cache)
    assert torch.equal(rope.rotate(q, 100)[0], expected[0])
    assert torch.equal(rope.rotate(q, torch.arange(100, 105))[0], expected[0])
    # (batch, N, h, d_head) layouts work with 1-D positions too, since cos broadcasts over (N, d_head)
    x = torch.randn(3, n, d_head)
    assert torch.equal(rope.rotate(x), apply_rotary(x, *rope.cos_sin(n)))


def test_rotate_half_matches_transformers():
    x = torch.randn(3, 4, 10)
    assert torch.equal(rotate_half(x), hf_rotate_half(x))
    assert torch.equal(rotate_half(rotate_half(x)), -x)  # two quarter turns = a half turn


def test_rope_is_a_rotation_of_pairs_by_m_theta():
    d_head, m = 8, 5
    rope = RotaryEmbedding(d_head)
    x = torch.randn(1, d_head, dtype=torch.float64)
    rotated = rope.rotate(x, positions=m)[0]
    for j in range(d_head // 2):
        angle = m * 10000.0 ** (-2 * j / d_head)
        a, b = x[0, j].item(), x[0, j + d_head // 2].item()
        assert rotated[j].item() == pytest.approx(a * math.cos(angle) - b * math.sin(angle), abs=1e-6)
        assert rotated[j + d_head // 2].item() == pytest.approx(a * math.sin(angle) + b * math.cos(angle), abs=1e-6)


def test_rope_preserves_norms_and_depends_only_on_the_offset():
    torch.manual_seed(0)
    d_head = 64
    rope = RotaryEmbedding(d_head, max_len=2048)
    q, k = torch.randn(1, d_head, dtype=torch.float64), torch.randn(1, d_head, dtype=torch.float64)
    x = torch.randn(100, d_head, dtype=torch.float64)
    torch.testing.assert_close(rope.rotate(x).norm(dim=-1), x.norm(dim=-1), rtol=1e-6, atol=0)

    def score(m, n):
        return (rope.rotate(q, positions=m) * rope.rotate(k, positions=n)).sum().item()

    for offset in [0, 1, 3, -4, 50]:
        pairs = [(m, m - offset) for m in [60, 100, 517, 1500]]
        scores = [score(m, n) for m, n in pairs]
        assert max(scores) - min(scores) < 1e-4 * (1 + abs(scores[0])), (offset, scores)
    assert abs(score(10, 0) - score(0, 10)) > 1e-3  # the sign of the offset matters


# ---------------------------------------------------------------- relative position bias


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets, max_distance", [(32, 128), (8, 20), (16, 40), (64, 256)])
def test_buckets_match_t5(bidirectional, num_buckets, max_distance):
    relative = torch.arange(-600, 601)[None, :] - torch.zeros(3, 1, dtype=torch.long)
    ours = relative_position_bucket(relative, bidirectional, num_buckets, max_distance)
    theirs = T5Attention._relative_position_bucket(
        relative, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    assert torch.equal(ours, theirs)
    assert ours.min() >= 0 and ours.max() < num_buckets


def test_relative_bias_matches_t5_compute_bias():
    from transformers import T5Config

    config = T5Config(
        d_model=16,
        d_kv=4,
        num_heads=3,
        relative_attention_num_buckets=32,
        relative_attention_max_distance=128,
        is_decoder=False,
    )
    t5 = T5Attention(config, has_relative_attention_bias=True)
    ours = RelativePositionBias(h=3, num_buckets=32, max_distance=128)
    ours.bias.weight.data.copy_(t5.relative_attention_bias.weight.data)
    assert torch.equal(ours(7, 200), t5.compute_bias(7, 200)[0])


def test_relative_bias_shape_and_toeplitz():
    torch.manual_seed(0)
    for bidirectional in [True, False]:
        module = RelativePositionBias(h=4, num_buckets=16, max_distance=40, bidirectional=bidirectional)
        bias = module(30, 50)
        assert bias.shape == (4, 30, 50)
        assert torch.equal(bias[:, 1:, 1:], bias[:, :-1, :-1])  # depends only on j - i
        assert torch.equal(module(5, 50, offset=10), bias[:, 10:15])  # queries at positions 10..14
    causal = RelativePositionBias(h=2, bidirectional=False)(6, 6)
    assert torch.equal(causal[:, 0, 1:], causal[:, 0, :1].expand(2, 5))  # the future shares bucket 0


def test_relative_bias_is_learned():
    module = RelativePositionBias(h=2, num_buckets=8, max_distance=16)
    module(4, 4).sum().backward()
    assert module.bias.weight.grad is not None and module.bias.weight.grad.abs().sum() > 0


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "max_len, d_model, error, match",
    [
        (10, 7, ValueError, "d_model must be even"),
    ],
)
def test_sinusoidal_bad_sizes(max_len, d_model, error, match):
    with pytest.raises(error, match=match):
        sinusoidal_positional_encoding(max_len, d_model)
    with pytest.raises(error, match=match):
        SinusoidalPositionalEncoding(d_model, max_len=max_len)


def test_positions_past_max_len_do_not_exist():
    with pytest.raises(ValueError, match="positions 0..10 do not fit in max_len = 10"):
        LearnedPositionalEmbedding(10, 8)(torch.zeros(1, 11, 8))


def test_rope_bad_input():
    with pytest.raises(ValueError, match="d_head must be even"):
        RotaryEmbedding(7)
    with pytest.raises(ValueError, match="base must be > 1"):
        RotaryEmbedding(8, base=1.0)
    rope = RotaryEmbedding(8, max_len=16)
    q = torch.randn(2, 3, 5, 8)
    with pytest.raises(ValueError, match="positions must lie in 0..15"):
        rope.rotate(torch.randn(17, 8))
    with pytest.raises(ValueError, match="positions must lie in 0..15"):
        rope(q, q, positions=12)
    with pytest.raises(ValueError, match="positions must lie in 0..15"):
        rope.rotate(q, positions=-1)
    with pytest.raises(ValueError, match="positions must lie in 0..15"):
        rope.rotate(q, positions=torch.tensor([0, 1, 2, 3, 16]))


def test_relative_bias_bad_input():
    with pytest.raises(ValueError, match="num_buckets = 2 is too small"):
        RelativePositionBias(2, num_buckets=2)
    with pytest.raises(ValueError, match="max_distance must exceed"):
        RelativePositionBias(2, num_buckets=32, max_distance=8)
    with pytest.raises(TypeError, match="relative_position must hold integers"):
        relative_position_bucket(torch.tensor([0.5, 1.0]))
