"""GPT, the decoder-only transformer (lecture 6): GPT-2's architecture from one config.

    GPTConfig     a decoder-only architecture in one place; the defaults are GPT-2 small
    GPT           token + learned position embeddings -> N pre-LN blocks with a causal mask -> final LayerNorm ->
                  LM head tied to the token embedding

forward returns the logits; attention_weights(...) returns the attention weights of the same call. Lecture 8's
Llama (scratch.l08_llama) is this model with four parts changed; generation is scratch.l10_decoding.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn

from scratch import validate
from scratch.l02_positions import LearnedPositionalEmbedding
from scratch.l03_attention import causal_mask
from scratch.l05_transformer_block import ACTIVATIONS, EncoderBlock, LayerNorm


@dataclasses.dataclass(frozen=True)
class GPTConfig:
    """A decoder-only architecture, all of it in one place. The defaults are GPT-2 small (124 M parameters).

    GPTConfig.gpt2(**changes) is GPT-2 with some sizes changed.
    """

    vocab_size: int = 50257  # V
    max_len: int = 1024  # the context: positions the model can see
    d_model: int = 768
    h: int = 12  # attention heads
    N: int = 12  # blocks (layers)
    d_ff: int = 3072  # the feed-forward network's hidden width
    dropout: float = 0.0
    eps: float = 1e-5  # LayerNorm's epsilon
    activation: str = "gelu_tanh"  # the MLP's non-linearity (GPT-2's gelu_new)
    bias: bool = True
    tie_embeddings: bool = True  # the LM head is the token embedding matrix

    def __post_init__(self):
        validate.integers(self, "vocab_size", "max_len", "d_model", "h", "N", "d_ff")
        validate.heads(self.d_model, self.h)
        validate.dropout(self.dropout)
        validate.positive(self.eps, "eps")
        validate.choice(self.activation, "activation", ACTIVATIONS)

    @classmethod
    def gpt2(cls, **changes) -> GPTConfig:
        """GPT-2 (small unless changed): LayerNorm, GELU MLP, learned positions, biases."""
        return cls(**changes)


class GPT(nn.Module):
    """A GPT-style language model: logits for the next token at every position.

    The blocks are EncoderBlocks with a causal mask: a decoder-only model has no encoder to cross-attend
    to, so its "decoder block" is just masked self-attention and a feed-forward network, pre-LN.

        model = GPT(GPTConfig.gpt2(vocab_size=65, max_len=64, d_model=128, h=4, N=2, d_ff=512))
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"config must be a GPTConfig, got {type(config).__name__}")
        self.config = c = config
        self.vocab_size = c.vocab_size
        self.max_len = c.max_len
        self.tok_embed = nn.Embedding(c.vocab_size, c.d_model)
        self.pos_embed = LearnedPositionalEmbedding(c.max_len, c.d_model)
        self.dropout = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            EncoderBlock(c.d_model, c.h, c.d_ff, c.dropout, c.activation, norm_first=True, eps=c.eps, bias=c.bias)
            for _ in range(c.N)
        )
        self.norm = LayerNorm(c.d_model, c.eps)  # pre-LN: one last norm after the stack
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self._init_weights(c.N)
        if c.tie_embeddings:
            self.lm_head.weight = self.tok_embed.weight

    def _init_weights(self, N: int) -> None:
        """GPT-2's initialisation: N(0, 0.02²) and zero biases, with the projections into the residual stream
        (W^O and W_2) scaled down by 1/sqrt(2N) so the stream's variance does not grow with depth."""
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() > 1:
                residual = name.endswith(("w_o.weight", "linear2.weight"))
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * N) if residual else 0.02)

    def forward(self, ids: torch.Tensor, last_only: bool = False) -> torch.Tensor:
        """ids: (batch, T) -> logits (batch, T, V); position t scores the token at t + 1.
        last_only: logits (batch, 1, V) of the last position only, all generation needs (the output layer
        is the model's largest matrix: no need to apply it T times).
        """
        return self._forward(ids, last_only)[0]

    def attention_weights(self, ids: torch.Tensor) -> list[torch.Tensor]:
        """The N attention weights of forward(ids), each (batch, h, T, T)."""
        return self._forward(ids)[1]

    def _forward(self, ids: torch.Tensor, last_only: bool = False) -> tuple[torch.Tensor, list[torch.Tensor]]:
        validate.token_ids(ids, self.vocab_size, self.max_len)
        mask = causal_mask(ids.shape[1], device=ids.device)  # (T, T): no peeking at the future
        x = self.dropout(self.pos_embed(self.tok_embed(ids)))  # (batch, T, d_model)
        weights = []
        for block in self.blocks:
            x, w = block.forward_with_weights(x, mask)
            weights.append(w)
        if last_only:
            x = x[:, -1:]  # (batch, 1, d_model)
        return self.lm_head(self.norm(x)), weights  # logits (batch, T, V): x E^T
