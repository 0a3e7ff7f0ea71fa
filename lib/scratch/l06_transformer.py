"""The whole encoder-decoder transformer of "Attention Is All You Need", from lecture 5's blocks (lecture 6).

    TransformerConfig   the architecture in one place (the arguments of Transformer), checked once
    Transformer     src -> encoder stack -> memory; tgt + memory -> decoder stack -> logits. Sinusoidal positions,
                    embeddings scaled by sqrt(d_model), the output layer tied to the target embedding.
    greedy_decode   translate: encode once, then the most probable next token until every row has emitted EOS

The output layer is the "de-embedding": logits = x E^T, one score per vocabulary entry from the dot product
of the final hidden state x (d_model) with each token's embedding row (weight tying).
forward returns one tensor, the logits; attention_weights(...) returns the attention weights of the same call.
Shapes: batch, S source positions, T target positions, d_model, h heads, d_ff, N layers, V vocabulary.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn

from scratch import validate
from scratch.l02_positions import SinusoidalPositionalEncoding
from scratch.l03_attention import causal_mask, padding_mask
from scratch.l05_transformer_block import ACTIVATIONS, DecoderBlock, EncoderBlock, LayerNorm
from scratch.l06_training import eval_mode


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """An encoder-decoder architecture, all of it in one place. The defaults are the paper's base model."""

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 512
    h: int = 8
    N: int = 6  # blocks in each stack
    d_ff: int = 2048
    dropout: float = 0.1
    max_len: int = 512
    norm_first: bool = False  # post-LN, as in the paper
    activation: str = "relu"
    tie_embeddings: bool = True
    pad_id: int = 0

    def __post_init__(self):
        validate.integers(self, "src_vocab_size", "tgt_vocab_size", "d_model", "h", "N", "d_ff", "max_len")
        validate.heads(self.d_model, self.h)
        validate.token_id(self.pad_id, min(self.src_vocab_size, self.tgt_vocab_size), "pad_id")
        validate.dropout(self.dropout)
        validate.choice(self.activation, "activation", ACTIVATIONS)


class Transformer(nn.Module):
    """The encoder-decoder of "Attention Is All You Need" (post-LN by default, as in the paper).

        memory = encode(src)                  # (batch, S, d_model)
        logits = decode(tgt, memory, src)     # (batch, T, V_tgt), src only for its padding mask
        logits = model(src, tgt)              # both at once; teacher forcing: tgt = [BOS, y_1, ..., y_{T-1}]

    The arguments are torch.nn.Transformer's (d_model, h = nhead, N = num_encoder_layers = num_decoder_layers,
    d_ff = dim_feedforward, dropout, activation, norm_first), plus the vocabularies and max_len.
    pad_id marks padding in src and tgt: padded source tokens are hidden from every query (encoder
    self-attention and cross-attention), padded target tokens from the decoder's self-attention (with
    targets padded on the right, as here, the causal mask alone would already hide them from real tokens).
    Embeddings are N(0, 1/d_model) and multiplied by sqrt(d_model), so each component of the scaled
    embedding has unit variance, comparable to the positional encoding's; with tie_embeddings the output
    layer reuses the target embedding matrix E: logits = x E^T. The arguments are checked as a TransformerConfig,
    kept in `config`; Transformer.from_config(config) builds the model a config describes.
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        d_model: int = 512,
        h: int = 8,
        N: int = 6,
        d_ff: int = 2048,
        dropout: float = 0.1,
        max_len: int = 512,
        norm_first: bool = False,
        activation: str = "relu",
        tie_embeddings: bool = True,
        pad_id: int = 0,
    ):
        super().__init__()
        self.config = TransformerConfig(
            src_vocab_size, tgt_vocab_size, d_model, h, N, d_ff, dropout, max_len, norm_first, activation,
            tie_embeddings, pad_id,
        )  # fmt: skip
        self.src_vocab_size, self.tgt_vocab_size = src_vocab_size, tgt_vocab_size
        self.d_model, self.max_len, self.pad_id = d_model, max_len, pad_id
        self.src_embed = nn.Embedding(src_vocab_size, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model)
        self.pos = SinusoidalPositionalEncoding(d_model, max_len, dropout)  # adds PE, then dropout
        self.encoder = nn.ModuleList(EncoderBlock(d_model, h, d_ff, dropout, activation, norm_first) for _ in range(N))
        self.decoder = nn.ModuleList(DecoderBlock(d_model, h, d_ff, dropout, activation, norm_first) for _ in range(N))
        # pre-LN never normalises the residual stream inside the blocks, so each stack ends with a norm
        self.encoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()
        self.decoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()
        self.lm_head = nn.Linear(d_model, tgt_vocab_size, bias=False)  # the de-embedding, (d_model -> V)

        for p in self.parameters():  # Glorot for every matrix, as torch.nn.Transformer does
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        for embedding in (self.src_embed, self.tgt_embed):
            nn.init.normal_(embedding.weight, std=d_model**-0.5)
        if tie_embeddings:
            self.lm_head.weight = self.tgt_embed.weight  # one (V, d_model) matrix E: in as E[id], out as x E^T

    @classmethod
    def from_config(cls, config: TransformerConfig) -> Transformer:
        return cls(**dataclasses.asdict(config))

    def _embed(self, ids: torch.Tensor, embedding: nn.Embedding) -> torch.Tensor:
        return self.pos(embedding(ids) * math.sqrt(self.d_model))  # (batch, L, d_model)

    def encode(self, src: torch.Tensor) -> torch.Tensor:
        """src: (batch, S) ids -> memory (batch, S, d_model)."""
        return self._encode(src)[0]

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        """tgt: (batch, T) ids, memory: (batch, S, d_model) from encode(src), src: (batch, S) (for its padding)
        -> logits (batch, T, V_tgt): position t predicts token t + 1."""
        return self._decode(tgt, memory, src)[0]

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        """src: (batch, S), tgt: (batch, T) -> logits (batch, T, V_tgt)."""
        return self.decode(tgt, self.encode(src), src)

    def attention_weights(self, src: torch.Tensor, tgt: torch.Tensor) -> dict[str, list[torch.Tensor]]:
        """The attention weights of forward(src, tgt): a dict of lists (one tensor per layer), "encoder"
        (batch, h, S, S), "decoder" (batch, h, T, T) and "cross" (batch, h, T, S), where
        weights["cross"][layer][b, head, t, s] is how much target position t looks at source position s."""
        memory, encoder_weights = self._encode(src)
        _, self_weights, cross_weights = self._decode(tgt, memory, src)
        return {"encoder": encoder_weights, "decoder": self_weights, "cross": cross_weights}

    def _encode(self, src: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        validate.token_ids(src, self.src_vocab_size, self.max_len, "src")
        mask = padding_mask(src, self.pad_id)  # (batch, 1, 1, S)
        x = self._embed(src, self.src_embed)
        weights = []
        for block in self.encoder:
            x, w = block.forward_with_weights(x, mask)
            weights.append(w)
        return self.encoder_norm(x), weights

    def _decode(self, tgt: torch.Tensor, memory: torch.Tensor, src: torch.Tensor):
        validate.token_ids(tgt, self.tgt_vocab_size, self.max_len, "tgt")
        _same_batch(tgt=tgt, memory=memory, src=src)
        memory_mask = padding_mask(src, self.pad_id)  # (batch, 1, 1, S)
        # position t sees targets 0..t that are not padding: (T, T) & (batch, 1, 1, T) -> (batch, 1, T, T)
        self_mask = causal_mask(tgt.shape[1], device=tgt.device) & padding_mask(tgt, self.pad_id)
        x = self._embed(tgt, self.tgt_embed)
        self_weights, cross_weights = [], []
        for block in self.decoder:
            x, w_self, w_cross = block.forward_with_weights(x, memory, self_mask, memory_mask)
            self_weights.append(w_self)
            cross_weights.append(w_cross)
        logits = self.lm_head(self.decoder_norm(x))  # (batch, T, V): x E^T
        return logits, self_weights, cross_weights


def _same_batch(**tensors: torch.Tensor) -> None:
    if len({t.shape[0] for t in tensors.values()}) > 1:
        raise ValueError("batch sizes differ: " + ", ".join(f"{name} has {t.shape[0]}" for name, t in tensors.items()))


@torch.no_grad()
def greedy_decode(model: Transformer, src: torch.Tensor, bos_id: int, eos_id: int, max_len: int | None = None):
    """Translate src (batch, S) greedily: lecture 6's loop, for a whole batch.

    Encodes the source once, starts every target from BOS, appends the most probable next token of each row, and
    stops when every row has emitted EOS or after max_len tokens (default: the model's max_len). Returns (batch, L)
    ids with L <= max_len: the generated tokens without BOS, each row ending at its EOS and padded with the model's
    pad_id after it. It runs in eval mode, without gradients.
    """
    bos_id = validate.token_id(bos_id, model.tgt_vocab_size, "bos_id")
    eos_id = validate.token_id(eos_id, model.tgt_vocab_size, "eos_id")
    max_len = model.max_len if max_len is None else validate.integer(max_len, "max_len")
    if max_len > model.max_len:
        raise ValueError(f"max_len = {max_len} exceeds the model's max_len = {model.max_len} positions")
    with eval_mode(model):
        memory = model.encode(src)  # (batch, S, d_model), computed once
        ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)  # (batch, 1): BOS
        unfinished = torch.ones(src.shape[0], dtype=torch.bool, device=src.device)
        for _ in range(max_len):
            next_ids = model.decode(ys, memory, src)[:, -1].argmax(dim=-1)  # (batch,)
            next_ids = torch.where(unfinished, next_ids, model.pad_id)  # finished rows only get padding
            unfinished &= next_ids != eos_id
            ys = torch.cat([ys, next_ids[:, None]], dim=1)
            if not unfinished.any():
                break
    return ys[:, 1:]
