"""Where a token sits in the sequence: the positional information attention needs (lecture 2).

Attention treats its input as a set (lecture 3), so word order has to be put in by hand:

    sinusoidal_positional_encoding   the fixed sin/cos table of "Attention Is All You Need"
    SinusoidalPositionalEncoding     x + PE[:n], the table kept as a buffer (nothing to learn)
    LearnedPositionalEmbedding       x + P[:n], P an nn.Embedding(max_len, d_model) learned like tokens (BERT, GPT-2)
    RelativePositionBias             a learned bias per query-key offset, added to the scores (T5's buckets)
    RotaryEmbedding                  rotates queries and keys by position (RoPE, Llama's "rotate half" layout)

Token embeddings themselves are plain `torch.nn.Embedding`: a lookup of rows, i.e. one_hot(ids) @ weight.
Shapes use the lectures' names: n positions (queries), m keys, d_model, h heads, d_head per head.
"""

from __future__ import annotations

import math

import torch
from torch import nn

# ---------------------------------------------------------------- absolute positions


def sinusoidal_positional_encoding(max_len: int, d_model: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The fixed table PE of shape (max_len, d_model), with ω_i = 1 / 10000^(2i / d_model):

        PE[pos, 2i] = sin(pos · ω_i),   PE[pos, 2i + 1] = cos(pos · ω_i)

    Pair i turns at frequency ω_i: fast for the first dimensions, slower and slower for the last ones.
    Computed in float64 and then cast, so the largest positions lose no accuracy in float32.
    """
    if d_model % 2:
        raise ValueError(f"d_model must be even (sin/cos pairs), got {d_model}")
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model / 2,)
    angles = pos / 10000.0 ** (two_i / d_model)  # (max_len, d_model / 2)
    pe = torch.empty(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe.to(dtype)


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the sinusoidal table to token embeddings: x (batch, n, d_model) -> x + PE[:n].

    The table is a buffer, not a parameter: it moves with .to(device) but is never trained (and, being
    recomputable, is not saved in the state_dict).
    """

    def __init__(self, d_model: int, max_len: int = 5000, dropout: float = 0.0):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(x + self.pe[: x.shape[-2]].to(x.dtype))  # (batch, n, d_model)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"


class LearnedPositionalEmbedding(nn.Module):
    """One trained vector per position (BERT, GPT-2): x (batch, n, d_model) -> x + P[:n].

    P is `self.embedding.weight`, of shape (max_len, d_model); positions past max_len simply do not exist.
    Initialised N(0, 0.02²) like BERT and GPT-2, so it starts as a small perturbation of the tokens.
    """

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.max_len, self.d_model = max_len, d_model
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, std=0.02)

    @property
    def weight(self) -> torch.Tensor:
        return self.embedding.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-2]
        if n > self.max_len:  # there is no vector for position max_len or later
            raise ValueError(f"sequence too long: positions 0..{n - 1} do not fit in max_len = {self.max_len}")
        return x + self.embedding(torch.arange(n, device=x.device))  # (batch, n, d_model)


# ---------------------------------------------------------------- relative positions


def relative_position_bucket(
    relative_position: torch.Tensor, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128
) -> torch.Tensor:
    """T5's map from an offset (key position - query position) to one of num_buckets integer buckets.

    Half of the buckets (per direction, if bidirectional) hold the small offsets exactly, one each;
    the other half cover offsets up to max_distance in logarithmically growing bins; anything farther
    shares the last bucket. Nearby words get precise positions, far ones only "roughly this far".
    With bidirectional=False (a causal decoder) keys after the query are never attended, so every
    offset > 0 lands in bucket 0 together with offset 0.
    """
    if relative_position.is_floating_point() or relative_position.is_complex():
        raise TypeError(f"relative_position must hold integers, got {relative_position.dtype}")
    relative_position = relative_position.long()
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets += (relative_position > 0).long() * num_buckets  # keys to the right get the upper half
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp(min=0)  # only keys to the left count
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    # log-spaced bins from max_exact up to max_distance; clamp(min=1) only avoids log(0) in the unused branch
    if_large = (
        max_exact
        + (
            torch.log(distance.clamp(min=1).float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).long()
    )
    if_large = if_large.clamp(max=num_buckets - 1)
    return buckets + torch.where(is_small, distance, if_large)


class RelativePositionBias(nn.Module):
    """A learned scalar per head and per offset, added to the attention scores (T5):

        scores[:, i, j] = q_i · k_j / sqrt(d_k) + S_rel[:, bucket(j - i)]

    forward(n, m) returns the (h, n, m) bias for n queries at positions offset..offset + n - 1 and m keys
    at positions 0..m - 1. The bias depends on j - i only (a Toeplitz matrix per head), so it means
    something only when queries and keys come from the same sequence: self-attention, not cross-attention.
    Offsets are bucketed like T5 (`relative_position_bucket`): exact for |j - i| < num_buckets / 4
    (bidirectional), logarithmic beyond, one shared bucket past max_distance.
    """

    def __init__(self, h: int, num_buckets: int = 32, max_distance: int = 128, bidirectional: bool = True):
        super().__init__()
        self.h, self.num_buckets, self.max_distance = h, num_buckets, max_distance
        self.bidirectional = bool(bidirectional)
        max_exact = num_buckets // (4 if bidirectional else 2)
        if max_exact < 1:
            raise ValueError(
                f"num_buckets = {num_buckets} is too small: need at least "
                f"{4 if bidirectional else 2} (half exact, half logarithmic"
                f"{', per direction' if bidirectional else ''})"
            )
        if max_distance <= max_exact:
            raise ValueError(f"max_distance must exceed the {max_exact} exact offsets, got {max_distance}")
        self.bias = nn.Embedding(num_buckets, h)  # S_rel: one row per bucket, one column per head

    def forward(self, n: int, m: int, offset: int = 0) -> torch.Tensor:
        device = self.bias.weight.device
        query = torch.arange(offset, offset + n, device=device)[:, None]
        key = torch.arange(m, device=device)[None, :]
        buckets = relative_position_bucket(key - query, self.bidirectional, self.num_buckets, self.max_distance)
        return self.bias(buckets).permute(2, 0, 1)  # (n, m, h) -> (h, n, m)

    def extra_repr(self) -> str:
        return (
            f"h={self.h}, num_buckets={self.num_buckets}, max_distance={self.max_distance}, "
            f"bidirectional={self.bidirectional}"
        )


# ---------------------------------------------------------------- rotary embeddings (RoPE)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dimension: a 90° turn of every pair (x_j, x_{j+d/2})."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (x_j, x_{j+d/2}) by its angle: x · cos + rotate_half(x) · sin (cos, sin broadcast to x)."""
    return x * cos + rotate_half(x) * sin


def rotary_tables(d_head: int, max_len: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the angles m · θ_j for positions m = 0..max_len-1, each (max_len, d_head).

    transformers' float32 computation (LlamaRotaryEmbedding), so the tables match it bit for bit.
    """
    inv_freq = 1.0 / (base ** (torch.arange(0, d_head, 2, dtype=torch.float32) / d_head))  # θ_j
    angles = torch.arange(max_len).float()[:, None] * inv_freq  # (max_len, d_head / 2): m · θ_j
    angles = torch.cat((angles, angles), dim=-1)  # dimensions j and j + d_head/2 share θ_j
    return angles.cos(), angles.sin()


class RotaryEmbedding(nn.Module):
    """RoPE: position m turns pair j of a query or key vector by the angle m · θ_j, θ_j = base^(-2j / d_head).

    Then q_m · k_n depends on positions only through m - n: relative position without any extra
    parameter. Layout and arithmetic follow Llama in Hugging Face transformers ("rotate half": dimension j
    is paired with j + d_head/2; angles in float32), so Llama/SmolLM2 weights give the same numbers.

        rope = RotaryEmbedding(d_head)
        q, k = rope(q, k)                      # q, k: (..., n, d_head), e.g. (batch, h, n, d_head)
        k_new = rope.rotate(k_new, positions=past_length)   # one tensor, positions past..past+n-1

    `positions`: None (0..n-1), an int offset, or an integer tensor of shape (n,) or (batch, n).
    cos and sin are precomputed for max_len positions, as non-persistent buffers (not in the state_dict).
    """

    def __init__(self, d_head: int, max_len: int = 4096, base: float = 10000.0):
        super().__init__()
        self.d_head, self.max_len = d_head, max_len
        if d_head % 2:
            raise ValueError(f"d_head must be even (RoPE rotates pairs of dimensions), got {d_head}")
        if not base > 1:
            raise ValueError(f"base must be > 1, got {base}")
        self.base = float(base)
        cos, sin = rotary_tables(d_head, max_len, self.base)
        self.register_buffer("cos_cached", cos, persistent=False)
        self.register_buffer("sin_cached", sin, persistent=False)

    def cos_sin(self, n: int, positions=None) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin of the angles for n positions: each (n, d_head), or (batch, n, d_head) for batched positions."""
        if not isinstance(positions, torch.Tensor):  # None or an offset: a slice of the tables
            offset = 0 if positions is None else positions
            if offset < 0 or offset + n > self.max_len:
                raise ValueError(
                    f"positions must lie in 0..{self.max_len - 1} (max_len = {self.max_len}), got "
                    f"{offset}..{offset + n - 1}"
                )
            return self.cos_cached[offset : offset + n], self.sin_cached[offset : offset + n]
        if positions.min() < 0 or positions.max() >= self.max_len:
            raise ValueError(
                f"positions must lie in 0..{self.max_len - 1} (max_len = {self.max_len}), got "
                f"{int(positions.min())}..{int(positions.max())}"
            )
        positions = positions.to(self.cos_cached.device)
        return self.cos_cached[positions], self.sin_cached[positions]

    def rotate(self, x: torch.Tensor, positions=None) -> torch.Tensor:
        """x: (..., n, d_head) -> the same shape, pair j at position m turned by m · θ_j."""
        return apply_rotary(x, *self._cos_sin_like(x, positions))

    def forward(self, q: torch.Tensor, k: torch.Tensor, positions=None) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate queries and keys of the same positions: q, k (..., n, d_head) -> (q_rotated, k_rotated)."""
        cos, sin = self._cos_sin_like(q, positions)  # one lookup serves both: same positions, same dims
        return apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)

    def _cos_sin_like(self, x: torch.Tensor, positions) -> tuple[torch.Tensor, torch.Tensor]:
        """cos_sin for x (..., n, d_head), in x's dtype and shaped to broadcast against it."""
        cos, sin = self.cos_sin(x.shape[-2], positions)
        if cos.dim() == 3:  # batched positions (batch, n, d): put the head dimensions in between
            shape = (cos.shape[0],) + (1,) * (x.dim() - 3) + cos.shape[1:]
            cos, sin = cos.reshape(shape), sin.reshape(shape)
        return cos.to(x.dtype), sin.to(x.dtype)

    def extra_repr(self) -> str:
        return f"d_head={self.d_head}, max_len={self.max_len}, base={self.base}"
