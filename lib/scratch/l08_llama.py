"""Llama, the architecture of SmolLM2 (lecture 8), in one file as transformers writes one file per model.

    LlamaConfig         the architecture in one place; the defaults are SmolLM2-135M's sizes
    RMSNorm             y = x / sqrt(mean(x²) + eps) · gamma: LayerNorm without centring and without beta
    SwiGLUFeedForward   down(silu(gate(x)) · up(x)): a gated feed-forward network
    LlamaAttention      grouped-query self-attention (lecture 4) with q and k turned by RoPE (lecture 2)
    LlamaBlock          pre-norm: x + attention(RMSNorm(x)), then x + SwiGLU(RMSNorm(x))
    Llama               token embedding -> N LlamaBlocks with a causal mask -> RMSNorm -> LM head

Llama is lecture 6's GPT with four parts changed, and no biases: RMSNorm for LayerNorm, SwiGLU for the GELU MLP,
rotary positions inside attention for learned ones added to the input, n_kv_heads < h key/value heads.
A piece that is the same as an earlier module's is copied under a "# Copied from" line, which
tests/test_copies.py keeps true. Names follow lecture 6's GPT (course.pretrained.from_hf_llama maps transformers'
names to them). forward takes a KV cache for generation (lecture 10: scratch.l10_decoding.new_kv_cache).
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn
from torch.nn import functional as F

from scratch import validate
from scratch.l03_attention import causal_mask, scaled_dot_product_attention


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    """A Llama architecture, all of it in one place. The defaults are SmolLM2-135M's (134.5 M parameters)."""

    vocab_size: int = 49152  # V
    max_len: int = 8192  # the context: positions the model can see
    d_model: int = 576
    h: int = 9  # query heads
    n_kv_heads: int = 3  # key/value heads, each shared by h / n_kv_heads query heads
    N: int = 30  # blocks (layers)
    d_ff: int = 1536  # SwiGLU's hidden width
    eps: float = 1e-5  # RMSNorm's epsilon
    rope_base: float = 100000.0  # RoPE's base: pair j turns by base^(-2j / d_k) per position
    dropout: float = 0.0  # on the attention weights
    bias: bool = False
    tie_embeddings: bool = True  # the LM head is the token embedding matrix

    def __post_init__(self):
        validate.integers(self, "vocab_size", "max_len", "d_model", "h", "n_kv_heads", "N", "d_ff")
        if validate.heads(self.d_model, self.h) % 2:
            raise ValueError(
                f"d_k = d_model / h ({self.d_model // self.h}) must be even: RoPE turns pairs of dimensions"
            )
        validate.dropout(self.dropout)
        validate.positive(self.eps, "eps")
        if not validate.real(self.rope_base, "rope_base") > 1:
            raise ValueError(f"rope_base must be > 1, got {self.rope_base}")
        if self.h % self.n_kv_heads:
            raise ValueError(f"n_kv_heads ({self.n_kv_heads}) must divide the number of heads h ({self.h})")


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x²) + eps) · gamma, over the last dimension of x (..., d_model).

    LayerNorm without subtracting the mean and without beta: only the scale (root mean square) of each
    position is normalised, which is cheaper and works as well. gamma is called `weight` like
    transformers' LlamaRMSNorm, so state dicts copy over. Like Llama, half-precision inputs are
    normalised in float32 and cast back before the gain (float32 and float64 stay as they are).
    """

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.d_model = d_model
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # gamma

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.to(torch.promote_types(x.dtype, torch.float32))  # float16/bfloat16 -> float32
        mean_square = x32.pow(2).mean(dim=-1, keepdim=True)  # (..., 1)
        return self.weight * (x32 * torch.rsqrt(mean_square + self.eps)).to(x.dtype)

    # Copied from scratch.l05_transformer_block.LayerNorm.extra_repr
    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}"


class SwiGLUFeedForward(nn.Module):
    """FFN(x) = down(silu(gate(x)) · up(x)), applied to every position separately (Shazeer 2020; LlamaMLP).

    Two expansions to d_ff: `gate` goes through SiLU (x · sigmoid(x)) and then multiplies `up` element by
    element, so the network decides per hidden unit how much of up(x) passes; `down` contracts to d_model.
    Three matrices instead of two, so models using it pick d_ff ≈ 8/3 · d_model to keep the size of a
    4 · d_model MLP. Names: gate, up, down = transformers' gate_proj, up_proj, down_proj.
    """

    def __init__(self, d_model: int, d_ff: int, bias: bool = False):
        super().__init__()
        self.d_model = d_model
        self.d_ff = d_ff
        self.gate = nn.Linear(d_model, d_ff, bias=bias)  # (d_model -> d_ff), through SiLU: how much passes
        self.up = nn.Linear(d_model, d_ff, bias=bias)  # (d_model -> d_ff), what passes
        self.down = nn.Linear(d_ff, d_model, bias=bias)  # (d_ff -> d_model), contract

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (..., d_model) -> (..., d_model)."""
        return self.down(F.silu(self.gate(x)) * self.up(x))  # hidden: (..., d_ff)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, d_ff={self.d_ff}"


# Copied from scratch.l02_positions.rotary_tables
def rotary_tables(d_head: int, max_len: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the angles m · θ_j for positions m = 0..max_len-1, each (max_len, d_head).

    transformers' float32 computation (LlamaRotaryEmbedding), so the tables match it bit for bit.
    """
    inv_freq = 1.0 / (base ** (torch.arange(0, d_head, 2, dtype=torch.float32) / d_head))  # θ_j
    angles = torch.arange(max_len).float()[:, None] * inv_freq  # (max_len, d_head / 2): m · θ_j
    angles = torch.cat((angles, angles), dim=-1)  # dimensions j and j + d_head/2 share θ_j
    return angles.cos(), angles.sin()


# Copied from scratch.l02_positions.rotate_half
def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dimension: a 90° turn of every pair (x_j, x_{j+d/2})."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


# Copied from scratch.l02_positions.apply_rotary
def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (x_j, x_{j+d/2}) by its angle: x · cos + rotate_half(x) · sin (cos, sin broadcast to x)."""
    return x * cos + rotate_half(x) * sin


class LlamaAttention(nn.Module):
    """Grouped-query self-attention with rotary positions.

    h query heads and n_kv_heads key/value heads: K/V head j serves the g = h / n_kv_heads consecutive query
    heads j·g .. j·g + g - 1 (lecture 4's exercise). After the head split, q and k are turned by their
    positions (RoPE, lecture 2), so a score depends on the positions only through their distance.
    """

    def __init__(self, d_model: int, h: int, n_kv_heads: int, bias: bool = False, dropout: float = 0.0):
        super().__init__()
        self.d_model = d_model
        self.h = h
        self.d_k = d_model // h
        self.n_kv_heads = n_kv_heads
        self.dropout = dropout
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_k, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, cos, sin, mask=None, kv_cache=None) -> tuple[torch.Tensor, torch.Tensor]:
        """x: (batch, n, d_model); cos, sin: (n, d_k), the angles of the n positions; mask: boolean, True = may
        attend, broadcastable to (batch, h, n, m). The steps of MultiHeadAttention (lecture 4), plus RoPE and the cache.
        kv_cache (a scratch.l10_decoding.KVCache, lecture 10): the n queries attend to the cache's `past` positions
        and to themselves, m = past + n keys (the mask then is (n, past + n)); the n new keys and values, turned,
        are appended to the cache.
        Returns output (batch, n, d_model) and weights (batch, h, n, m).
        """
        batch, n, _ = x.shape
        q = self.w_q(x).view(batch, n, self.h, self.d_k).transpose(1, 2)  # (batch, h, n, d_k)
        k = self.w_k(x).view(batch, n, self.n_kv_heads, self.d_k).transpose(1, 2)  # (batch, n_kv, n, d_k)
        v = self.w_v(x).view(batch, n, self.n_kv_heads, self.d_k).transpose(1, 2)  # (batch, n_kv, n, d_v)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)  # RoPE: each turned by its position
        if kv_cache is not None:
            k, v = kv_cache.append(k, v)  # (batch, n_kv, past + n, d_k)
        if self.n_kv_heads != self.h:  # GQA: each K/V head serves its g query heads
            k = k.repeat_interleave(self.h // self.n_kv_heads, dim=1)  # (batch, h, m, d_k)
            v = v.repeat_interleave(self.h // self.n_kv_heads, dim=1)
        out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=self.dropout if self.training else 0.0)
        out = self.w_o(out.transpose(1, 2).reshape(batch, n, self.d_model))  # heads concatenated, then W^O
        return out, weights

    # Copied from scratch.l04_multi_head_attention.MultiHeadAttention.extra_repr
    def extra_repr(self) -> str:
        gqa = f", n_kv_heads={self.n_kv_heads}" if self.n_kv_heads != self.h else ""
        return f"d_model={self.d_model}, h={self.h}, d_k={self.d_k}{gqa}, dropout={self.dropout}"


class LlamaBlock(nn.Module):
    """Pre-norm, like GPT's block: x = x + attention(RMSNorm(x)), then x = x + SwiGLU(RMSNorm(x)).

    transformers' LlamaDecoderLayer: norm1 is its input_layernorm, norm2 its post_attention_layernorm.
    """

    def __init__(self, c: LlamaConfig):
        super().__init__()
        self.self_attn = LlamaAttention(c.d_model, c.h, c.n_kv_heads, c.bias, c.dropout)
        self.ffn = SwiGLUFeedForward(c.d_model, c.d_ff, c.bias)
        self.norm1 = RMSNorm(c.d_model, c.eps)
        self.norm2 = RMSNorm(c.d_model, c.eps)

    def forward(self, x, cos, sin, mask=None, kv_cache=None) -> tuple[torch.Tensor, torch.Tensor]:
        """x (batch, n, d_model) -> x (batch, n, d_model) and the attention weights (batch, h, n, m)."""
        attn, weights = self.self_attn(self.norm1(x), cos, sin, mask, kv_cache)
        x = x + attn
        return x + self.ffn(self.norm2(x)), weights


class Llama(nn.Module):
    """A Llama language model: logits for the next token at every position.

        model = Llama(LlamaConfig(vocab_size=100, max_len=64, d_model=64, h=4, n_kv_heads=2, N=2, d_ff=172))

    forward(ids, kv_cache=new_kv_cache(model)) (scratch.l10_decoding) feeds only new tokens and attends to the keys
    and values of the past kept in the cache (one per block).
    """

    def __init__(self, config: LlamaConfig):
        super().__init__()
        if not isinstance(config, LlamaConfig):
            raise TypeError(f"config must be a LlamaConfig, got {type(config).__name__}")
        self.config = c = config
        self.vocab_size = c.vocab_size
        self.max_len = c.max_len
        self.tok_embed = nn.Embedding(c.vocab_size, c.d_model)
        self.blocks = nn.ModuleList(LlamaBlock(c) for _ in range(c.N))
        self.norm = RMSNorm(c.d_model, c.eps)
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        cos, sin = rotary_tables(c.d_model // c.h, c.max_len, c.rope_base)  # one table for every layer, not saved
        self.register_buffer("cos_cached", cos, persistent=False)
        self.register_buffer("sin_cached", sin, persistent=False)
        self._init_weights(c.N)
        if c.tie_embeddings:
            self.lm_head.weight = self.tok_embed.weight

    # Copied from scratch.l06_gpt.GPT._init_weights with linear2->down, W_2->W_down
    def _init_weights(self, N: int) -> None:
        """GPT-2's initialisation: N(0, 0.02²) and zero biases, with the projections into the residual stream
        (W^O and W_down) scaled down by 1/sqrt(2N) so the stream's variance does not grow with depth."""
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() > 1:
                residual = name.endswith(("w_o.weight", "down.weight"))
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * N) if residual else 0.02)

    def forward(self, ids: torch.Tensor, kv_cache: list | None = None, last_only: bool = False) -> torch.Tensor:
        """ids: (batch, T) -> logits (batch, T, V); position t scores the token at t + 1.
        last_only: logits (batch, 1, V) of the last position only, all generation needs.
        kv_cache (one scratch.l10_decoding.KVCache per block): ids are the T tokens that follow the `past` positions
        already in the cache, at positions past..past+T-1; every layer appends their keys and values to its cache.
        The logits equal those of the full sequence's last T positions.
        """
        return self._forward(ids, kv_cache, last_only)[0]

    def attention_weights(self, ids: torch.Tensor, kv_cache: list | None = None) -> list[torch.Tensor]:
        """The N attention weights of forward(ids, kv_cache), each (batch, h, T, past + T)."""
        return self._forward(ids, kv_cache)[1]

    def _forward(self, ids, kv_cache=None, last_only=False) -> tuple[torch.Tensor, list[torch.Tensor]]:
        validate.token_ids(ids, self.vocab_size, self.max_len)
        if kv_cache is not None and len(kv_cache) != len(self.blocks):
            raise TypeError(f"kv_cache must be a list of {len(self.blocks)} caches, one per block (new_kv_cache)")
        past = 0 if kv_cache is None else len(kv_cache[0])  # positions already in the cache
        t = ids.shape[1]
        if past + t > self.max_len:
            raise ValueError(
                f"too long: {past} cached positions + {t} new tokens exceed the model's max_len = {self.max_len}"
            )
        # (T, past + T): no peeking at the future; one new token may see everything, so no mask at all
        mask = None if past and t == 1 else causal_mask(t, device=ids.device, past=past)
        x = self.tok_embed(ids)  # (batch, T, d_model): no position embedding, positions turn q and k
        cos, sin = self.cos_cached[past : past + t].to(x.dtype), self.sin_cached[past : past + t].to(x.dtype)
        weights = []
        for block, layer_cache in zip(self.blocks, kv_cache or [None] * len(self.blocks)):
            x, w = block(x, cos, sin, mask, layer_cache)
            weights.append(w)
        if last_only:
            x = x[:, -1:]  # (batch, 1, d_model)
        return self.lm_head(self.norm(x)), weights  # logits (batch, T, V)
