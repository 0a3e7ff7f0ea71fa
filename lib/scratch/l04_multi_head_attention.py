"""Multi-head attention (lecture 4): h heads in one batched computation.

    MultiHeadAttention   W^Q, W^K, W^V, split into h heads, attend, concatenate, W^O; with n_kv_heads < h
                         key/value heads shared by groups of query heads (grouped-query attention, GQA)

Notation: n queries, m keys, d_model the model width, h heads, d_k = d_model / h.
"""

from __future__ import annotations

import torch
from torch import nn

from scratch import validate
from scratch.l03_attention import scaled_dot_product_attention


class MultiHeadAttention(nn.Module):
    """h attention heads computed at once: MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O.

    Each head j attends with its own slice of W^Q, W^K, W^V (d_k = d_v = d_model / h columns each); one
    big d_model × d_model projection holds all h slices side by side, so a reshape splits it into heads.

    n_kv_heads   grouped-query attention (GQA, lecture 4's exercise; SmolLM2 uses it): only n_kv_heads key/value
                 heads, so W^K and W^V have n_kv_heads · d_k outputs, and K/V head j serves the g = h / n_kv_heads
                 consecutive query heads j·g .. j·g + g - 1 (n_kv_heads = h is ordinary multi-head attention).
    """

    def __init__(
        self,
        d_model: int,
        h: int,
        bias: bool = True,
        dropout: float = 0.0,
        n_kv_heads: int | None = None,
    ):
        super().__init__()
        validate.heads(d_model, h)
        n_kv_heads = h if n_kv_heads is None else n_kv_heads
        if h % n_kv_heads:
            raise ValueError(
                f"n_kv_heads ({n_kv_heads}) must divide the number of heads h ({h}): each key/value "
                f"head is shared by h / n_kv_heads query heads"
            )
        self.d_model = d_model
        self.h = h
        self.d_k = d_model // h
        self.n_kv_heads = n_kv_heads
        self.dropout = dropout
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)  # d_model unless grouped-query
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key=None, value=None, mask=None) -> torch.Tensor:
        """The output (batch, n, d_model); forward_with_weights takes the same arguments and adds the weights."""
        return self.forward_with_weights(query, key, value, mask)[0]

    def forward_with_weights(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Self-attention when key and value are None; cross-attention otherwise (n queries, m keys).

        query: (batch, n, d_model); key, value: (batch, m, d_model) (value defaults to key).
        mask: boolean, True = may attend; (n, m), (batch, n, m) or broadcastable to (batch, h, n, m)
        (e.g. padding_mask's (batch, 1, 1, m)).
        Returns output (batch, n, d_model) and weights (batch, h, n, m).
        """
        key = query if key is None else key
        value = key if value is None else value
        batch, n, m = query.shape[0], query.shape[1], key.shape[1]

        # project, then split into heads of d_k: (batch, length, heads · d_k) -> (batch, heads, length, d_k)
        q = self.w_q(query).view(batch, n, self.h, self.d_k).transpose(1, 2)  # (batch, h, n, d_k)
        k = self.w_k(key).view(batch, m, self.n_kv_heads, self.d_k).transpose(1, 2)  # (batch, n_kv, m, d_k)
        v = self.w_v(value).view(batch, m, self.n_kv_heads, self.d_k).transpose(1, 2)  # (batch, n_kv, m, d_v)
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
