"""Attention from scratch: scaled dot-product attention, its masks, and multi-head attention (lectures 3 and 4).

    scaled_dot_product_attention   softmax(Q K^T / sqrt(d_k)) V, returning the output and the weights
    causal_mask                    (N, N) boolean: query i may attend to keys 0..i (decoders); (N, past + N)
                                   when past positions are cached
    padding_mask                   (batch, 1, 1, M) boolean from token ids: no query attends to padding
    MultiHeadAttention             h heads in one batched computation: W^Q, W^K, W^V, split, attend, concat, W^O;
                                   optionally grouped-query (n_kv_heads < h) and rotary (RoPE), as in Llama
    KVCache                        one self-attention layer's keys and values of the positions seen so far, so a
                                   decoder generating token by token computes only the new token's (lecture 10)

Masks follow torch's boolean `attn_mask` convention: True = this query MAY attend to this key.
Notation: N queries, M keys, d_k the query/key size, d_v the value size, d_model the model width, h heads.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from scratch.embeddings import RotaryEmbedding, apply_rotary


# ---------------------------------------------------------------- input checks

def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor (softmax needs real numbers), got {t.dtype}")
        if t.dim() < 2:
            raise ValueError(f"{name} must have at least 2 dims (..., length, features), got shape {tuple(t.shape)}")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k and v must share one dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"d_k of q ({q.shape[-1]}) and k ({k.shape[-1]}) differ: q (..., N, d_k) and "
                         f"k (..., M, d_k) need the same last dim for the dot products q·k")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k has {k.shape[-2]} keys but v has {v.shape[-2]} values: k (..., M, d_k) and "
                         f"v (..., M, d_v) need the same length M (one value per key)")
    if k.shape[-2] == 0:
        raise ValueError("there are no keys (M = 0): every query's softmax would be over nothing")
    try:
        if not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:   # (the equal case, the usual one, is cheap to see)
            torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(f"the leading (batch/head) dims of q {tuple(q.shape)}, k {tuple(k.shape)} and "
                         f"v {tuple(v.shape)} do not broadcast") from None


def _check_mask(mask, scores_shape: torch.Size) -> torch.Tensor:
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        found = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"mask must be a boolean tensor (True = may attend), got {found}")
    try:
        broadcast = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        broadcast = None
    if broadcast != scores_shape:
        raise ValueError(f"mask of shape {tuple(mask.shape)} is not broadcastable to the attention scores "
                         f"(..., N, M) = {tuple(scores_shape)}")
    if not mask.any(dim=-1).all():
        raise ValueError("the mask hides every key from some query: its softmax would be over nothing (NaN); "
                         "every query row needs at least one True")
    return mask


# ---------------------------------------------------------------- attention

def scaled_dot_product_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                                 *, dropout_p: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V.

    q: (..., N, d_k), k: (..., M, d_k), v: (..., M, d_v); leading batch/head dims broadcast.
    mask: boolean, broadcastable to (..., N, M); True = query i may attend to key j. Masked scores become
    -inf before the softmax, so they get exactly zero weight.
    dropout_p: drop attention weights with this probability (training only; the returned weights are the
    ones applied, so their rows no longer sum to exactly 1).
    Returns output (..., N, d_v) and weights (..., N, M), each row of weights summing to 1.
    """
    _check_qkv(q, k, v)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])   # (..., N, M); the scale keeps var ≈ 1
    if mask is not None:
        mask = _check_mask(mask, scores.shape)
        scores = scores.masked_fill(~mask, float("-inf"))      # e^-inf = 0: masked keys get zero weight
    weights = torch.softmax(scores, dim=-1)                     # (..., N, M), rows sum to 1
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights                                 # (..., N, d_v), (..., N, M)


def causal_mask(n: int, device=None, past: int = 0) -> torch.Tensor:
    """(n, n) boolean, True on and below the diagonal: position i sees positions 0..i, never the future.

    With past > 0 (decoding after `past` cached positions, lecture 10) the n queries are positions
    past..past+n-1 and the keys are all past + n positions: (n, past + n), query i sees keys 0..past + i.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n (the sequence length) must be a positive int, got {n!r}")
    if isinstance(past, bool) or not isinstance(past, int) or past < 0:
        raise ValueError(f"past (the number of cached positions) must be an int >= 0, got {past!r}")
    return torch.ones(n, past + n, dtype=torch.bool, device=device).tril(diagonal=past)


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """From token ids (batch, M), a mask (batch, 1, 1, M): True at real tokens, False at padding.

    The two singleton dims broadcast over heads and queries, so every query of every head ignores the
    padded keys: pass it as `mask` to scaled_dot_product_attention or MultiHeadAttention.
    """
    if not isinstance(ids, torch.Tensor) or ids.dtype.is_floating_point or ids.dtype.is_complex \
            or ids.dtype == torch.bool:
        found = ids.dtype if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise TypeError(f"ids must be an integer tensor of token ids, got {found}")
    if ids.dim() != 2:
        raise ValueError(f"ids must be 2-D (batch, M), got shape {tuple(ids.shape)}")
    keep = ids != pad_id                                        # (batch, M)
    if not keep.any(dim=-1).all():
        raise ValueError(f"a sequence consists only of padding (pad_id={pad_id}): it has nothing to attend to")
    return keep[:, None, None, :]                               # (batch, 1, 1, M)


class KVCache:
    """The keys and values one self-attention layer has computed so far: k (batch, n_kv_heads, M, d_k), v (batch,
    n_kv_heads, M, d_v), M = the number of positions seen (lecture 10).

    A decoder generates one token at a time, and in a causal model the keys and values of past positions never
    change (a position only attends to earlier ones). So instead of recomputing them at every step, each layer
    keeps them here and computes only the new token's: `append` concatenates along M and returns everything
    for the attention. The keys are stored after RoPE (each is rotated once, by its own position) and, with
    grouped-query attention, only the n_kv_heads heads (each shared by h / n_kv_heads query heads): the cache is
    h / n_kv_heads times smaller than with ordinary multi-head attention.
    Beam search reorders the rows when it reorders its beams: `reorder(index)`.
    """

    def __init__(self):
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None

    def __len__(self) -> int:
        """M: the number of cached positions (0 when empty)."""
        return 0 if self.k is None else self.k.shape[-2]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the keys and values of N new positions, (batch, n_kv_heads, N, d); return all M + N of them."""
        if self.k is not None and (k.shape[:2] != self.k.shape[:2] or k.shape[-1] != self.k.shape[-1]
                                   or v.shape[-1] != self.v.shape[-1]):
            raise ValueError(f"the cache holds keys of shape (batch, heads, M, d_k) = {tuple(self.k.shape)}; "
                             f"new keys {tuple(k.shape)} do not fit (same batch, heads and d_k needed)")
        if self.k is None:
            self.k, self.v = k, v
        else:
            self.k, self.v = torch.cat([self.k, k], dim=-2), torch.cat([self.v, v], dim=-2)
        return self.k, self.v

    def reorder(self, index: torch.Tensor) -> None:
        """Keep the rows `index` (batch',) of the batch, in that order (beam search picks its beams' parents)."""
        if self.k is not None:
            self.k, self.v = self.k.index_select(0, index), self.v.index_select(0, index)

    def __repr__(self) -> str:
        shape = None if self.k is None else tuple(self.k.shape)
        return f"KVCache(positions={len(self)}, k shape={shape})"


class MultiHeadAttention(nn.Module):
    """h attention heads computed at once: MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O.

    Each head j attends with its own slice of W^Q, W^K, W^V (d_k = d_v = d_model / h columns each); one
    big d_model × d_model projection holds all h slices side by side, so a reshape splits it into heads.

    Two options turn it into Llama's attention (the defaults give the original one, unchanged):
      n_kv_heads   grouped-query attention (GQA): only n_kv_heads key/value heads, W^K and W^V have
                   n_kv_heads · d_k outputs, and each K/V head serves h / n_kv_heads consecutive query heads
                   (n_kv_heads = h is ordinary multi-head attention, 1 is multi-query attention). Fewer K/V
                   heads mean a smaller KV cache when generating.
      rotary       a RotaryEmbedding (d_head = d_k) that turns q and k by their positions after the head
                   split (self-attention only); forward's `positions` says which positions they are
                   (default 0..N-1; an int offset when the first token is not at position 0).
    forward's `kv_cache` (a KVCache, self-attention only) makes the layer attend to the cached positions too and
    adds the new keys and values to the cache (generation token by token, lecture 10).
    """

    def __init__(self, d_model: int, h: int, bias: bool = True, dropout: float = 0.0,
                 n_kv_heads: int | None = None, rotary: RotaryEmbedding | None = None):
        super().__init__()
        if h < 1 or d_model < 1 or d_model % h != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by the number of heads h ({h}): "
                             f"each head gets d_k = d_model / h dims")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        n_kv_heads = h if n_kv_heads is None else n_kv_heads
        if isinstance(n_kv_heads, bool) or not isinstance(n_kv_heads, int) or n_kv_heads < 1 or h % n_kv_heads:
            raise ValueError(f"n_kv_heads ({n_kv_heads!r}) must be a positive int dividing the number of heads "
                             f"h ({h}): each key/value head is shared by h / n_kv_heads query heads")
        if rotary is not None and (not isinstance(rotary, RotaryEmbedding) or rotary.d_head != d_model // h):
            found = f"d_head = {rotary.d_head}" if isinstance(rotary, RotaryEmbedding) else type(rotary).__name__
            raise ValueError(f"rotary must be a RotaryEmbedding with d_head = d_k = {d_model // h}, got {found}")
        self.d_model, self.h, self.d_k = d_model, h, d_model // h
        self.n_kv_heads = n_kv_heads
        self.dropout = dropout
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)   # d_model unless grouped-query
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.rotary = rotary   # buffers only (cos/sin tables, not saved): no new state-dict keys

    def forward(self, query: torch.Tensor, key: torch.Tensor | None = None, value: torch.Tensor | None = None,
                mask: torch.Tensor | None = None, need_weights: bool = False, positions=None,
                kv_cache: KVCache | None = None):
        """Self-attention when key and value are None; cross-attention otherwise (N queries, M keys).

        query: (batch, N, d_model); key, value: (batch, M, d_model) (value defaults to key).
        mask: boolean, True = may attend; (N, M), (batch, N, M) or broadcastable to (batch, h, N, M)
        (e.g. padding_mask's (batch, 1, 1, M)).
        positions: only with rotary: the positions of the N tokens, None (0..N-1, or past..past+N-1 after
        `past` cached positions), an int offset (offset..offset+N-1) or an integer tensor (N,) or (batch, N).
        kv_cache: self-attention only: the N queries attend to the cache's `past` positions and to themselves,
        M = past + N keys (the mask must then be (N, past + N), e.g. causal_mask(N, past=past)); the N new
        keys and values are appended to the cache.
        Returns output (batch, N, d_model), and weights (batch, h, N, M) too when need_weights.
        """
        key = query if key is None else key
        value = key if value is None else value
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, torch.Tensor) or t.dim() != 3 or t.shape[-1] != self.d_model:
                shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
                raise ValueError(f"{name} must have shape (batch, length, d_model={self.d_model}), got {shape}")
            if not t.is_floating_point():
                raise TypeError(f"{name} must be a floating-point tensor (embeddings, not token ids), got {t.dtype}")
        batch, n, m = query.shape[0], query.shape[1], key.shape[1]
        if key.shape[0] != batch or value.shape[0] != batch:
            raise ValueError(f"query, key and value need the same batch size, got {query.shape[0]}, "
                             f"{key.shape[0]} and {value.shape[0]}")
        if self.rotary is None and positions is not None:
            raise ValueError("positions only mean something with a rotary embedding (rotary=RotaryEmbedding(...))")
        if self.rotary is not None and key is not query:
            raise ValueError("rotary embeddings are for self-attention: queries and keys must be the same "
                             "tokens (call with key=None)")
        if kv_cache is not None:
            if not isinstance(kv_cache, KVCache):
                raise TypeError(f"kv_cache must be a KVCache, got {type(kv_cache).__name__}")
            if key is not query:
                raise ValueError("a KV cache is for self-attention: call with key=None")
            if self.rotary is not None and positions is None:
                positions = len(kv_cache)               # the new tokens come right after the cached ones
        if isinstance(mask, torch.Tensor) and mask.dim() == 3:
            mask = mask.unsqueeze(1)                    # (batch, N, M) -> (batch, 1, N, M): same for every head

        # project, then split into heads of d_k: (batch, L, heads * d_k) -> (batch, heads, L, d_k)
        q = self.w_q(query).view(batch, n, self.h, self.d_k).transpose(1, 2)            # (batch, h, N, d_k)
        k = self.w_k(key).view(batch, m, self.n_kv_heads, self.d_k).transpose(1, 2)     # (batch, n_kv, M, d_k)
        v = self.w_v(value).view(batch, m, self.n_kv_heads, self.d_k).transpose(1, 2)   # (batch, n_kv, M, d_v)

        if self.rotary is not None:                     # turn each q and k by its position (RoPE, lecture 2)
            q, k = self._rotate(q, k, positions)
        if kv_cache is not None:                        # the past's keys and values, rotated once, n_kv heads only
            k, v = kv_cache.append(k, v)                # (batch, n_kv, past + N, d_k), (batch, n_kv, past + N, d_v)

        group = self.h // self.n_kv_heads
        if group > 1:   # GQA: K/V head j serves the g = h / n_kv query heads j·g .. j·g + g - 1. Rather than copy
            # each K/V head g times, stack its g query heads' N queries as g·N rows that all attend to it
            m = k.shape[-2]
            q = q.reshape(batch, self.n_kv_heads, group * n, self.d_k)          # (batch, n_kv, g·N, d_k)
            mask = self._group_mask(mask, group, n)                             # rows as in q

        # all heads in one call; out: (batch, h, N, d_v), weights: (batch, h, N, M)
        out, weights = scaled_dot_product_attention(q, k, v, mask,
                                                    dropout_p=self.dropout if self.training else 0.0)
        if group > 1:                                   # (batch, n_kv, g·N, ·) -> (batch, h, N, ·)
            out, weights = out.view(batch, self.h, n, self.d_k), weights.view(batch, self.h, n, m)

        # concatenate the heads back: (batch, h, N, d_v) -> (batch, N, h * d_v = d_model), then W^O
        out = self.w_o(out.transpose(1, 2).reshape(batch, n, self.d_model))    # (batch, N, d_model)
        return (out, weights) if need_weights else out

    def _group_mask(self, mask: torch.Tensor | None, group: int, n: int) -> torch.Tensor | None:
        """A mask broadcastable to (batch, h, N, M) -> one broadcastable to (batch, n_kv, g·N, M), whose rows are
        the g query heads' N queries of each K/V head (see forward)."""
        if not isinstance(mask, torch.Tensor) or mask.dim() > 4:
            return mask                                 # not a mask: scaled_dot_product_attention says why
        mask = mask[(None,) * (4 - mask.dim())]         # (B, H, N', M) with H in {1, h}, N' in {1, N}
        heads, rows = mask.shape[1], mask.shape[2]
        if heads not in (1, self.h) or rows not in (1, n):
            raise ValueError(f"mask of shape {tuple(mask.shape)} is not broadcastable to the attention scores "
                             f"(batch, h={self.h}, N={n}, M)")
        if heads == 1 and rows == 1:
            return mask                                 # the same for every query of every head
        kv_heads = self.n_kv_heads if heads == self.h else 1
        mask = mask.reshape(mask.shape[0], kv_heads, heads // kv_heads, rows, mask.shape[-1])
        return mask.expand(-1, -1, group, n, -1).reshape(mask.shape[0], kv_heads, group * n, mask.shape[-1])

    def _rotate(self, q: torch.Tensor, k: torch.Tensor, positions) -> tuple[torch.Tensor, torch.Tensor]:
        """RoPE on q and k. When all tokens share one offset (always so when generating with a KV cache, one
        token per step), one slice of the cos/sin tables serves q and k: the same numbers as RotaryEmbedding's
        general path (any positions, per-row tensors), with a few operations instead of a dozen per layer."""
        offset = 0 if positions is None else positions
        n = q.shape[-2]
        if type(offset) is not int or offset < 0 or offset + n > self.rotary.max_len:
            return self.rotary(q, k, positions)          # tensors of positions, and the error messages
        cos = self.rotary.cos_cached[offset:offset + n].to(q.dtype)          # (N, d_k)
        sin = self.rotary.sin_cached[offset:offset + n].to(q.dtype)
        return apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)

    def extra_repr(self) -> str:
        gqa = f", n_kv_heads={self.n_kv_heads}" if self.n_kv_heads != self.h else ""
        return f"d_model={self.d_model}, h={self.h}, d_k={self.d_k}{gqa}, dropout={self.dropout}"
