"""GPT, the decoder-only transformer (lecture 6), GPT-2's and Llama's (lecture 8) architectures from one config.

    GPTConfig     a decoder-only architecture in one place; GPTConfig.gpt2() and GPTConfig.llama() are presets
    GPT           token (+ learned position) embeddings -> N pre-LN blocks with a causal mask -> final norm ->
                  LM head tied to the token embedding. GPT-2 by default; Llama (RMSNorm, SwiGLU, rotary
                  positions, grouped-query attention) with GPTConfig.llama.

forward returns the logits; attention_weights(...) returns the attention weights of the same call. SmolLM2's
weights load with course.pretrained.from_hf_llama; generation is scratch.l10_decoding.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn

from scratch import validate
from scratch.l02_positions import LearnedPositionalEmbedding, RotaryEmbedding
from scratch.l03_attention import causal_mask
from scratch.l04_multi_head_attention import KVCache
from scratch.l05_transformer_block import NORMS, EncoderBlock


@dataclasses.dataclass(frozen=True)
class GPTConfig:
    """A decoder-only architecture, all of it in one place. The defaults are GPT-2 small (124 M parameters).

    GPTConfig.gpt2(**changes) is GPT-2 with some sizes changed; GPTConfig.llama(**changes) is the Llama
    architecture with SmolLM2-135M's sizes. Llama changes five things (lecture 8), each a field here:
        norm="rmsnorm"        RMSNorm instead of LayerNorm (in every block and at the end)
        ffn="swiglu"          the gated SwiGLU feed-forward network instead of the GELU MLP
        positional="rotary"   no position embedding added to the input: queries and keys are rotated by their
                              positions in every attention layer (RoPE, base rope_base)
        n_kv_heads            grouped-query attention: n_kv_heads key/value heads shared by the h query heads
        bias=False            no biases anywhere
    """

    vocab_size: int = 50257  # V
    max_len: int = 1024  # the context: positions the model can see
    d_model: int = 768
    h: int = 12  # attention heads
    N: int = 12  # blocks (layers)
    d_ff: int = 3072  # the feed-forward network's hidden width
    dropout: float = 0.0
    norm: str = "layernorm"  # or "rmsnorm"
    eps: float = 1e-5  # the norms' epsilon
    ffn: str = "mlp"  # or "swiglu" (always gated by SiLU)
    activation: str = "gelu_tanh"  # the MLP's non-linearity (GPT-2's gelu_new)
    positional: str = "learned"  # or "rotary"
    rope_base: float = 10000.0
    n_kv_heads: int | None = None  # None: as many as h (ordinary multi-head attention)
    bias: bool = True
    tie_embeddings: bool = True  # the LM head is the token embedding matrix

    def __post_init__(self):
        for name in ("vocab_size", "max_len", "d_model", "h", "N", "d_ff"):
            validate.integer(getattr(self, name), name)
        validate.choice(self.norm, "norm", NORMS)
        validate.choice(self.positional, "positional", ("learned", "rotary"))
        if self.d_model % self.h:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by the number of heads h ({self.h})")

    @classmethod
    def gpt2(cls, **changes) -> GPTConfig:
        """GPT-2 (small unless changed): LayerNorm, GELU MLP, learned positions, biases."""
        return cls(**changes)

    @classmethod
    def llama(cls, **changes) -> GPTConfig:
        """The Llama architecture, with SmolLM2-135M's sizes unless changed."""
        smollm2 = dict(
            vocab_size=49152,
            max_len=8192,
            d_model=576,
            h=9,
            N=30,
            d_ff=1536,
            n_kv_heads=3,
            rope_base=100000.0,
            norm="rmsnorm",
            ffn="swiglu",
            positional="rotary",
            bias=False,
        )
        return cls(**{**smollm2, **changes})


class GPT(nn.Module):
    """A GPT-style language model: logits for the next token at every position.

    The blocks are EncoderBlocks with a causal mask: a decoder-only model has no encoder to cross-attend
    to, so its "decoder block" is just masked self-attention and a feed-forward network, pre-LN.
    Initialised like GPT-2: N(0, 0.02²), with the projections into the residual stream (W^O and W_2)
    scaled down by 1/sqrt(2N) so the stream's variance does not grow with depth.

        model = GPT(GPTConfig.gpt2(vocab_size=65, max_len=64, d_model=128, h=4, N=2, d_ff=512))

    forward(ids, kv_cache=model.new_kv_cache()) feeds only new tokens and attends to the keys and values of the
    past kept in a cache (one scratch.l04_multi_head_attention.KVCache per block, lecture 10).
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig, got {type(config).__name__}")
        self.config = c = config
        self.vocab_size = c.vocab_size
        self.max_len = c.max_len
        self.tok_embed = nn.Embedding(c.vocab_size, c.d_model)
        rotary = None
        self.pos_embed = None
        if c.positional == "learned":
            self.pos_embed = LearnedPositionalEmbedding(c.max_len, c.d_model)
        else:  # one cos/sin table shared by all layers
            rotary = RotaryEmbedding(c.d_model // c.h, c.max_len, c.rope_base)
        self.dropout = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            EncoderBlock(
                c.d_model,
                c.h,
                c.d_ff,
                c.dropout,
                c.activation,
                norm_first=True,
                eps=c.eps,
                bias=c.bias,
                norm=c.norm,
                ffn=c.ffn,
                n_kv_heads=c.n_kv_heads,
                rotary=rotary,
            )
            for _ in range(c.N)
        )
        self.norm = NORMS[c.norm](c.d_model, c.eps)  # pre-LN: one last norm after the stack
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)

        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() > 1:
                residual = name.endswith(("w_o.weight", "linear2.weight", "down.weight"))
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * c.N) if residual else 0.02)
        if c.tie_embeddings:
            self.lm_head.weight = self.tok_embed.weight

    def new_kv_cache(self) -> list[KVCache]:
        """An empty cache for forward's kv_cache: one KVCache per block."""
        return [KVCache() for _ in self.blocks]

    def forward(
        self, ids: torch.Tensor, kv_cache: list[KVCache] | None = None, last_only: bool = False
    ) -> torch.Tensor:
        """ids: (batch, T) -> logits (batch, T, V); position t scores the token at t + 1.
        last_only: logits (batch, 1, V) of the last position only, all generation needs (the output layer
        is the model's largest matrix: no need to apply it T times).

        kv_cache (new_kv_cache(): one KVCache per block): ids are the T tokens that follow the `past` positions
        already in the cache, at positions past..past+T-1 (the learned position embedding starts at offset past,
        rotary turns by these positions); they attend to the cached keys and values and to themselves, and every
        layer appends theirs to its cache. The logits equal those of the full sequence's last T positions.
        """
        return self._forward(ids, kv_cache, last_only)[0]

    def attention_weights(self, ids: torch.Tensor, kv_cache: list[KVCache] | None = None) -> list[torch.Tensor]:
        """The N attention weights of forward(ids, kv_cache), each (batch, h, T, past + T)."""
        return self._forward(ids, kv_cache)[1]

    def _forward(self, ids: torch.Tensor, kv_cache: list[KVCache] | None = None, last_only: bool = False):
        validate.token_ids(ids, self.vocab_size, self.max_len)
        if kv_cache is not None and len(kv_cache) != len(self.blocks):
            raise TypeError(
                f"kv_cache must be a list of {len(self.blocks)} KVCache (one per block), as model.new_kv_cache() makes"
            )
        past = 0 if kv_cache is None else len(kv_cache[0])
        t = ids.shape[1]
        if past + t > self.max_len:
            raise ValueError(
                f"too long: {past} cached positions + {t} new tokens exceed the model's "
                f"max_len = {self.max_len} positions"
            )
        # (T, past + T): no peeking at the future; one new token may see everything, so no mask at all
        mask = None if past and t == 1 else causal_mask(t, device=ids.device, past=past)
        x = self.tok_embed(ids)  # (batch, T, d_model)
        if self.pos_embed is not None:  # rotary positions act inside attention
            x = self.pos_embed(x, offset=past)
        x = self.dropout(x)
        weights = []
        for block, layer_cache in zip(self.blocks, kv_cache or [None] * len(self.blocks)):
            x, w = block.forward_with_weights(x, mask, kv_cache=layer_cache)
            weights.append(w)
        if last_only:
            x = x[:, -1:]  # (batch, 1, d_model)
        return self.lm_head(self.norm(x)), weights  # logits (batch, T, V): x E^T
