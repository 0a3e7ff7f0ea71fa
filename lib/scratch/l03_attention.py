"""Attention from scratch (lecture 3): scaled dot-product attention and its masks.

    scaled_dot_product_attention   softmax(Q K^T / sqrt(d_k)) V, returning the output and the weights
    causal_mask                    (n, past + n) boolean: query i may attend to keys 0..past + i (decoders)
    padding_mask                   (batch, 1, 1, m) boolean from token ids: no query attends to padding

Masks follow torch's boolean `attn_mask` convention: True = this query MAY attend to this key.
Notation: n queries, m keys, d_k the query/key size, d_v the value size.
"""

from __future__ import annotations

import math

import torch
from torch.nn import functional as F

from scratch import validate


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
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., n, m); the scale keeps var ≈ 1
    if mask is not None:
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
