"""Multi-head attention (lecture 4): h heads in one batched computation, and the cache decoding keeps (lecture 10).

    MultiHeadAttention             W^Q, W^K, W^V, split into h heads, attend, concatenate, W^O; with
                                   n_kv_heads < h key/value heads shared by groups of query heads (GQA)
    KVCache                        the keys and values a self-attention layer has computed so far (lecture 10)

MultiHeadAttention also takes what later lectures add to it, each in one line of forward: a RotaryEmbedding that
turns q and k by their positions (lecture 8) and a KVCache of past keys and values (lecture 10).
Notation: n queries, m keys, d_model the model width, h heads, d_k = d_model / h.
"""

from __future__ import annotations

import torch
from torch import nn

from scratch import validate
from scratch.l02_positions import RotaryEmbedding
from scratch.l03_attention import scaled_dot_product_attention


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
        h = validate.integer(h, "h")
        d_model = validate.integer(d_model, "d_model")
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
        self.d_model = d_model
        self.h = h
        self.d_k = d_model // h
        self.n_kv_heads = n_kv_heads
        self.dropout = validate.dropout(dropout)
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)  # d_model unless grouped-query
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.rotary = rotary  # buffers only (cos/sin tables, not saved): no new state-dict keys

    def forward(self, query, key=None, value=None, mask=None, positions=None, kv_cache=None) -> torch.Tensor:
        """The output (batch, n, d_model); forward_with_weights takes the same arguments and adds the weights."""
        return self.forward_with_weights(query, key, value, mask, positions, kv_cache)[0]

    def forward_with_weights(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        positions=None,
        kv_cache: KVCache | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Self-attention when key and value are None; cross-attention otherwise (n queries, m keys).

        query: (batch, n, d_model); key, value: (batch, m, d_model) (value defaults to key).
        mask: boolean, True = may attend; (n, m), (batch, n, m) or broadcastable to (batch, h, n, m)
        (e.g. padding_mask's (batch, 1, 1, m)).
        positions (rotary only): the positions of the n tokens, None (0..n-1), an int offset or an integer tensor.
        kv_cache (self-attention only): the n queries attend to the cache's `past` positions and to themselves,
        m = past + n keys (the mask then is (n, past + n), e.g. causal_mask(n, past=past)); the n new keys and
        values are appended to the cache.
        Returns output (batch, n, d_model) and weights (batch, h, n, m).
        """
        key = query if key is None else key
        value = key if value is None else value
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
        return out, weights

    def extra_repr(self) -> str:
        gqa = f", n_kv_heads={self.n_kv_heads}" if self.n_kv_heads != self.h else ""
        return f"d_model={self.d_model}, h={self.h}, d_k={self.d_k}{gqa}, dropout={self.dropout}"


class KVCache:
    """The keys and values one self-attention layer has computed so far: k (batch, n_kv_heads, M, d_k), v (batch,
    n_kv_heads, M, d_v), M = the number of positions seen.

    A decoder generates one token at a time, and in a causal model the keys and values of past positions never
    change (a position only attends to earlier ones). So instead of recomputing them at every step, each layer
    keeps them here and computes only the new token's: `append` concatenates along M and returns everything
    for the attention. The keys are stored after RoPE (each is rotated once, by its own position) and, with
    grouped-query attention, only the n_kv_heads heads: the cache is h / n_kv_heads times smaller than with
    ordinary multi-head attention. Beam search reorders the rows when it reorders its beams: `reorder(index)`.
    """

    def __init__(self):
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None

    def __len__(self) -> int:
        """M: the number of cached positions (0 when empty)."""
        return 0 if self.k is None else self.k.shape[-2]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the keys and values of n new positions, (batch, n_kv_heads, n, d); return all M + n of them."""
        self.k = k if self.k is None else torch.cat([self.k, k], dim=-2)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=-2)
        return self.k, self.v

    def reorder(self, index: torch.Tensor) -> None:
        """Keep the rows `index` (batch',) of the batch, in that order (beam search picks its beams' parents)."""
        if self.k is not None:
            self.k = self.k.index_select(0, index)
            self.v = self.v.index_select(0, index)

    def __repr__(self) -> str:
        return f"KVCache(positions={len(self)}, k shape={None if self.k is None else tuple(self.k.shape)})"
