"""Attention from scratch: scaled dot-product attention, its masks, and multi-head attention (lectures 3 and 4).

    scaled_dot_product_attention   softmax(Q K^T / sqrt(d_k)) V, returning the output and the weights
    causal_mask                    (n, n) boolean: query i may attend to keys 0..i (decoders)
    padding_mask                   (batch, 1, 1, m) boolean from token ids: no query attends to padding
    MultiHeadAttention             h heads in one batched computation: W^Q, W^K, W^V, split, attend, concat, W^O;
                                   with n_kv_heads < h key/value heads shared by groups of query heads (GQA)

Masks follow torch's boolean `attn_mask` convention: True = this query MAY attend to this key.
Notation: n queries, m keys, d_k the query/key size, d_v the value size, d_model the model width, h heads.
MultiHeadAttention also takes what later lectures add to it, each in one line of forward: a RotaryEmbedding that
turns q and k by their positions (lecture 8) and a KV cache of past keys and values (scratch.sampling, lecture 10).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from scratch import validate
from scratch.embeddings import RotaryEmbedding


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None, *, dropout_p: float = 0.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V.

    q: (..., n, d_k), k: (..., m, d_k), v: (..., m, d_v); leading batch/head dims broadcast.
    mask: boolean, broadcastable to (..., n, m); True = query i may attend to key j. Masked scores become
    -inf before the softmax, so they get exactly zero weight (a query that may attend to no key at all gets NaN).
    dropout_p: drop attention weights with this probability (training only; the returned weights are the
    ones applied, so their rows no longer sum to exactly 1).
    Returns output (..., n, d_v) and weights (..., n, m), each row of weights summing to 1.
    """
    if not (isinstance(q, torch.Tensor) and q.is_floating_point()):
        raise TypeError(
            f"q must be a floating-point tensor (softmax needs real numbers), got "
            f"{getattr(q, 'dtype', type(q).__name__)}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"d_k of q ({q.shape[-1]}) and k ({k.shape[-1]}) differ: q (..., n, d_k) and "
            f"k (..., m, d_k) need the same last dim for the dot products q·k"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k has {k.shape[-2]} keys but v has {v.shape[-2]} values: k (..., m, d_k) and "
            f"v (..., m, d_v) need the same length m (one value per key)"
        )
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., n, m); the scale keeps var ≈ 1
    if mask is not None:
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            raise TypeError(f"mask must be a boolean tensor (True = may attend), got {getattr(mask, 'dtype', mask)}")
        try:
            fits = torch.broadcast_shapes(mask.shape, scores.shape) == scores.shape
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(
                f"mask of shape {tuple(mask.shape)} is not broadcastable to the attention scores "
                f"(..., n, m) = {tuple(scores.shape)}"
            )
        scores = scores.masked_fill(~mask, float("-inf"))  # e^-inf = 0: masked keys get zero weight
    weights = torch.softmax(scores, dim=-1)  # (..., n, m), rows sum to 1
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights  # (..., n, d_v), (..., n, m)


def causal_mask(n: int, device=None, past: int = 0) -> torch.Tensor:
    """(n, n) boolean, True on and below the diagonal: position i sees positions 0..i, never the future.

    With past > 0 (decoding after `past` cached positions, lecture 10) the n queries are positions
    past..past+n-1 and the keys are all past + n positions: (n, past + n), query i sees keys 0..past + i.
    """
    n = validate.integer(n, "n (the sequence length)")
    past = validate.integer(past, "past (the number of cached positions)", minimum=0)
    return torch.ones(n, past + n, dtype=torch.bool, device=device).tril(diagonal=past)


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """From token ids (batch, m), a mask (batch, 1, 1, m): True at real tokens, False at padding.

    The two singleton dims broadcast over heads and queries, so every query of every head ignores the
    padded keys: pass it as `mask` to scaled_dot_product_attention or MultiHeadAttention.
    """
    validate.token_ids(ids, vocab_size=float("inf"), name="ids")
    keep = ids != pad_id  # (batch, m)
    if not keep.any(dim=-1).all():  # once per model call, where the mask is made
        raise ValueError(f"a sequence consists only of padding (pad_id={pad_id}): it has nothing to attend to")
    return keep[:, None, None, :]  # (batch, 1, 1, m)


class MultiHeadAttention(nn.Module):
    """h attention heads computed at once: MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O.

    Each head j attends with its own slice of W^Q, W^K, W^V (d_k = d_v = d_model / h columns each); one
    big d_model × d_model projection holds all h slices side by side, so a reshape splits it into heads.

    n_kv_heads   grouped-query attention (GQA, lecture 4's exercise, Llama): only n_kv_heads key/value heads, so
                 W^K and W^V have n_kv_heads · d_k outputs, and K/V head j serves the g = h / n_kv_heads consecutive
                 query heads j·g .. j·g + g - 1 (n_kv_heads = h is ordinary multi-head attention, 1 multi-query).
    rotary       a RotaryEmbedding (d_head = d_k) that turns q and k by their positions after the head split
                 (self-attention only, lecture 8); forward's `positions` says which positions they are.
    """

    def __init__(
        self,
        d_model: int,
        h: int,
        bias: bool = True,
        dropout: float = 0.0,
        n_kv_heads: int | None = None,
        rotary: RotaryEmbedding | None = None,
    ):
        super().__init__()
        h, d_model = validate.integer(h, "h"), validate.integer(d_model, "d_model")
        if d_model % h:
            raise ValueError(
                f"d_model ({d_model}) must be divisible by the number of heads h ({h}): "
                f"each head gets d_k = d_model / h dims"
            )
        n_kv_heads = h if n_kv_heads is None else validate.integer(n_kv_heads, "n_kv_heads")
        if h % n_kv_heads:
            raise ValueError(
                f"n_kv_heads ({n_kv_heads}) must divide the number of heads h ({h}): each key/value "
                f"head is shared by h / n_kv_heads query heads"
            )
        if rotary is not None and rotary.d_head != d_model // h:
            raise ValueError(f"rotary must have d_head = d_k = {d_model // h}, got d_head = {rotary.d_head}")
        self.d_model, self.h, self.d_k, self.n_kv_heads = d_model, h, d_model // h, n_kv_heads
        self.dropout = validate.dropout(dropout)
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)  # d_model unless grouped-query
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.rotary = rotary  # buffers only (cos/sin tables, not saved): no new state-dict keys

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        positions=None,
        kv_cache=None,
    ):
        """Self-attention when key and value are None; cross-attention otherwise (n queries, m keys).

        query: (batch, n, d_model); key, value: (batch, m, d_model) (value defaults to key).
        mask: boolean, True = may attend; (n, m), (batch, n, m) or broadcastable to (batch, h, n, m)
        (e.g. padding_mask's (batch, 1, 1, m)).
        positions (rotary only): the positions of the n tokens, None (0..n-1), an int offset or an integer tensor.
        kv_cache (self-attention only; a scratch.sampling.KVCache): the n queries attend to the cache's `past`
        positions and to themselves, m = past + n keys (the mask then is (n, past + n), e.g. causal_mask(n,
        past=past)); the n new keys and values are appended to the cache.
        Returns output (batch, n, d_model), and weights (batch, h, n, m) too when need_weights.
        """
        key = query if key is None else key
        value = key if value is None else value
        others = [(name, t) for name, t in (("key", key), ("value", value)) if t is not query]  # self-attention: none
        for name, t in [("query", query), *others]:
            if validate.features(t, self.d_model, name).dim() != 3 or t.shape[0] != query.shape[0]:
                raise ValueError(
                    f"{name} must have shape (batch, length, d_model={self.d_model}) with the same "
                    f"batch size as query {tuple(query.shape)}, got {tuple(t.shape)}"
                )
        if (self.rotary is not None or kv_cache is not None) and key is not query:
            raise ValueError("rotary embeddings and a KV cache are for self-attention: call with key=None")
        if positions is not None and self.rotary is None:
            raise ValueError("positions only mean something with a rotary embedding (rotary=RotaryEmbedding(...))")
        batch, n, m = query.shape[0], query.shape[1], key.shape[1]

        # project, then split into heads of d_k: (batch, length, heads · d_k) -> (batch, heads, length, d_k)
        q = self.w_q(query).view(batch, n, self.h, self.d_k).transpose(1, 2)  # (batch, h, n, d_k)
        k = self.w_k(key).view(batch, m, self.n_kv_heads, self.d_k).transpose(1, 2)  # (batch, n_kv, m, d_k)
        v = self.w_v(value).view(batch, m, self.n_kv_heads, self.d_k).transpose(1, 2)  # (batch, n_kv, m, d_v)
        if self.rotary is not None:  # RoPE: turn q and k by their positions (lecture 8)
            past = 0 if kv_cache is None else len(kv_cache)
            q, k = self.rotary(q, k, past if positions is None else positions)
        if kv_cache is not None:  # the past's keys and values (lecture 10)
            k, v = kv_cache.append(k, v)  # (batch, n_kv, past + n, d_k), (batch, n_kv, past + n, d_v)
        if self.n_kv_heads != self.h:  # GQA: each K/V head serves its g query heads
            k = k.repeat_interleave(self.h // self.n_kv_heads, dim=1)  # (batch, h, m, d_k)
            v = v.repeat_interleave(self.h // self.n_kv_heads, dim=1)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (batch, n, m) -> (batch, 1, n, m): the same for every head

        # all heads in one call; out: (batch, h, n, d_v), weights: (batch, h, n, m)
        out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=self.dropout if self.training else 0.0)
        # concatenate the heads back: (batch, h, n, d_v) -> (batch, n, h · d_v = d_model), then W^O
        out = self.w_o(out.transpose(1, 2).reshape(batch, n, self.d_model))  # (batch, n, d_model)
        return (out, weights) if need_weights else out

    def extra_repr(self) -> str:
        gqa = f", n_kv_heads={self.n_kv_heads}" if self.n_kv_heads != self.h else ""
        return f"d_model={self.d_model}, h={self.h}, d_k={self.d_k}{gqa}, dropout={self.dropout}"
