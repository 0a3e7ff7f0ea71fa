"""The transformer block: attention and a feed-forward network, each wrapped in Add & Norm (lecture 5).

    LayerNorm      y = (x - mean) / sqrt(var + eps) · gamma + beta, per position over the d_model features
    FeedForward    Linear(d_model, d_ff) -> activation -> Linear(d_ff, d_model), the same at every position
    EncoderBlock   self-attention, Add & Norm, feed-forward, Add & Norm; with a causal mask also the block of
                   decoder-only models (GPT-2, lecture 6)
    DecoderBlock   masked self-attention, Add & Norm, cross-attention to the encoder, Add & Norm, FFN, Add & Norm

The residual stream: every sub-layer reads x and *adds* its result, x = x + f(x), so gradients reach
early layers through the identity and each sub-layer only has to learn a correction. Attention moves
information between positions; the feed-forward network transforms each position on its own.

Where the norm sits (norm_first):
    post-LN (the paper, BERT)   x = norm(x + f(x))        every block's output is normalised
    pre-LN  (GPT-2 and later)   x = x + f(norm(x))        the residual stream itself is never normalised,
                                                           so a stack ends with one last LayerNorm
Parameter and sub-module names follow torch.nn.TransformerEncoderLayer / DecoderLayer where they can.
Shapes: batch, n positions (queries), m encoder positions (keys of cross-attention), d_model, h heads, d_ff.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from scratch import validate
from scratch.l04_multi_head_attention import MultiHeadAttention

# name -> function; "gelu" is the exact x · Φ(x) (BERT), "gelu_tanh" its tanh approximation (GPT-2's gelu_new).
ACTIVATIONS = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
}


class LayerNorm(nn.Module):
    """y = (x - E[x]) / sqrt(Var[x] + eps) · gamma + beta, over the last dimension of x (..., d_model).

    Statistics are per position (each token's own d_model features), never across the batch, so a
    token is normalised the same way whatever else is in the batch. Var is the biased variance (divide
    by d_model), as in torch.nn.LayerNorm. gamma and beta are called `weight` and `bias` like torch's,
    so state dicts copy over.
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.d_model = validate.integer(d_model, "d_model")
        self.eps = validate.positive(eps, "eps")  # it keeps the division finite
        self.weight = nn.Parameter(torch.ones(d_model))  # gamma: starts as "keep the normalised value"
        self.bias = nn.Parameter(torch.zeros(d_model))  # beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var, mean = torch.var_mean(x, dim=-1, correction=0, keepdim=True)  # each (..., 1)
        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}"


class FeedForward(nn.Module):
    """FFN(x) = activation(x W_1 + b_1) W_2 + b_2, applied to every position separately.

    Expand to d_ff (4 · d_model in the paper), apply the non-linearity (a name in ACTIVATIONS), contract back to
    d_model. The same weights serve every position of a sequence; every layer has its own. Lecture 5 derives this
    class in the same words (tests/test_copies.py compares the two).
    """

    def __init__(self, d_model, d_ff, activation="relu", dropout=0.0, bias=True):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)  # W_1, b_1: expand
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)  # W_2, b_2: contract
        self.activation = ACTIVATIONS[activation]
        self.dropout = nn.Dropout(dropout)  # on the hidden values, in training only

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (..., d_model) -> (..., d_model)."""
        hidden = self.dropout(self.activation(self.linear1(x)))  # (..., d_ff)
        return self.linear2(hidden)


class EncoderBlock(nn.Module):
    """Self-attention, Add & Norm, feed-forward, Add & Norm (post-LN, the paper's), or pre-LN with norm_first.

    With a causal mask it is also the block of a decoder-only model (GPT): nothing in it knows whether
    positions may look ahead, only the mask does. Dropout is applied where torch.nn.TransformerEncoderLayer
    applies it: to the attention weights, to each sub-layer's output before the residual addition, and inside
    the FFN after the activation. Lecture 5 derives this class in the same words.

    forward(x, mask) -> x (batch, n, d_model); forward_with_weights(x, mask) adds the attention weights
    (batch, h, n, n). mask: boolean, True = may attend, broadcastable to (batch, h, n, n) (causal_mask(n) for
    GPT, padding_mask(ids, pad_id) for BERT).
    """

    def __init__(self, d_model, h, d_ff, dropout=0.1, activation="relu", norm_first=False, eps=1e-5, bias=True):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, h, bias, dropout)
        self.ffn = FeedForward(d_model, d_ff, activation, dropout, bias)
        self.norm1, self.norm2 = LayerNorm(d_model, eps), LayerNorm(d_model, eps)
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, x, mask=None):
        return self.forward_with_weights(x, mask)[0]

    def forward_with_weights(self, x, mask=None):
        if self.norm_first:  # pre-LN: x + f(LN(x))
            attn, weights = self.self_attn.forward_with_weights(self.norm1(x), mask=mask)
            x = x + self.dropout1(attn)
            return x + self.dropout2(self.ffn(self.norm2(x))), weights
        attn, weights = self.self_attn.forward_with_weights(x, mask=mask)
        x = self.norm1(x + self.dropout1(attn))  # self-attention, Add & Norm
        return self.norm2(x + self.dropout2(self.ffn(x))), weights  # feed-forward, Add & Norm


class DecoderBlock(nn.Module):
    """Masked self-attention, Add & Norm, cross-attention, Add & Norm, feed-forward, Add & Norm.

    Cross-attention: the queries come from the decoder (x), the keys and values from the encoder's
    output (memory, (batch, m, d_model)), so every target position can look at every source position.
    self_mask: broadcastable to (batch, h, n, n), usually causal_mask(n); memory_mask: broadcastable to
    (batch, h, n, m), usually padding_mask(src, pad_id). forward_with_weights adds both attentions' weights,
    (batch, h, n, n) and (batch, h, n, m). Lecture 5 derives this class in the same words.
    """

    def __init__(self, d_model, h, d_ff, dropout=0.1, activation="relu", norm_first=False, eps=1e-5, bias=True):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, h, bias, dropout)
        self.cross_attn = MultiHeadAttention(d_model, h, bias, dropout)
        self.ffn = FeedForward(d_model, d_ff, activation, dropout, bias)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model, eps), LayerNorm(d_model, eps), LayerNorm(d_model, eps)
        self.dropout1, self.dropout2, self.dropout3 = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        return self.forward_with_weights(x, memory, self_mask, memory_mask)[0]

    def forward_with_weights(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:  # pre-LN
            attn, self_weights = self.self_attn.forward_with_weights(self.norm1(x), mask=self_mask)
            x = x + self.dropout1(attn)
            attn, cross_weights = self.cross_attn.forward_with_weights(self.norm2(x), memory, mask=memory_mask)
            x = x + self.dropout2(attn)
            return x + self.dropout3(self.ffn(self.norm3(x))), self_weights, cross_weights
        attn, self_weights = self.self_attn.forward_with_weights(x, mask=self_mask)
        x = self.norm1(x + self.dropout1(attn))  # masked self-attention, Add & Norm
        attn, cross_weights = self.cross_attn.forward_with_weights(x, memory, mask=memory_mask)
        x = self.norm2(x + self.dropout2(attn))  # cross-attention, Add & Norm
        return self.norm3(x + self.dropout3(self.ffn(x))), self_weights, cross_weights  # FFN, Add & Norm
