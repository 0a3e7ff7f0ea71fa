"""BERT (lecture 7): word + position + token-type embeddings -> LayerNorm -> N post-LN blocks, no mask but padding.

forward returns the hidden states; attention_weights(...) returns the attention weights of the same call.
MiniLM's pretrained weights load into it with course.pretrained.from_hf_bert.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from scratch import validate
from scratch.l02_positions import LearnedPositionalEmbedding
from scratch.l03_attention import padding_mask
from scratch.l05_transformer_block import ACTIVATIONS, EncoderBlock, LayerNorm


@dataclasses.dataclass(frozen=True)
class BERTConfig:
    """A BERT architecture, all of it in one place: the fields of transformers' BertConfig, in the course's names."""

    vocab_size: int
    d_model: int
    h: int
    N: int
    d_ff: int
    max_len: int = 512
    type_vocab_size: int = 2
    dropout: float = 0.1
    activation: str = "gelu"
    eps: float = 1e-12
    pad_id: int = 0

    def __post_init__(self):
        validate.integers(self, "vocab_size", "d_model", "h", "N", "d_ff", "max_len", "type_vocab_size")
        validate.heads(self.d_model, self.h)
        validate.token_id(self.pad_id, self.vocab_size, "pad_id")
        validate.dropout(self.dropout)
        validate.positive(self.eps, "eps")
        validate.choice(self.activation, "activation", ACTIVATIONS)


class BERT(nn.Module):
    """A BERT encoder: contextual vectors for every token, each position seeing the whole sequence.

    Input = word embedding + position embedding + token-type (segment) embedding, then LayerNorm and
    dropout, then N post-LN EncoderBlocks. There is no causal mask, only padding is hidden.
    The arguments are transformers' BertConfig's, checked as a BERTConfig and kept in `config`
    (BERT.from_config(config) builds the model a config describes). Initialised like BERT: N(0, 0.02²) matrices,
    zero biases.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        h: int,
        N: int,
        d_ff: int,
        max_len: int = 512,
        type_vocab_size: int = 2,
        dropout: float = 0.1,
        activation: str = "gelu",
        eps: float = 1e-12,
        pad_id: int = 0,
    ):
        super().__init__()
        self.config = BERTConfig(
            vocab_size, d_model, h, N, d_ff, max_len, type_vocab_size, dropout, activation, eps, pad_id
        )  # fmt: skip
        self.vocab_size, self.max_len, self.type_vocab_size, self.pad_id = vocab_size, max_len, type_vocab_size, pad_id
        self.tok_embed = nn.Embedding(vocab_size, d_model)
        self.pos_embed = LearnedPositionalEmbedding(max_len, d_model)
        self.type_embed = nn.Embedding(type_vocab_size, d_model)
        self.norm = LayerNorm(d_model, eps)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            EncoderBlock(d_model, h, d_ff, dropout, activation, norm_first=False, eps=eps) for _ in range(N)
        )
        for name, p in self.named_parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    @classmethod
    def from_config(cls, config: BERTConfig) -> BERT:
        return cls(**dataclasses.asdict(config))

    def hidden_states(
        self,
        ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
    ) -> list[torch.Tensor]:
        """Every layer's output: a list of N + 1 tensors (batch, T, d_model), the embeddings first
        (as Hugging Face's output_hidden_states)."""
        return self._forward(ids, token_type_ids, attention_mask)[0]

    def attention_weights(self, ids: torch.Tensor, token_type_ids=None, attention_mask=None) -> list[torch.Tensor]:
        """The N attention weights of forward(ids, ...), each (batch, h, T, T)."""
        return self._forward(ids, token_type_ids, attention_mask)[1]

    def forward(self, ids: torch.Tensor, token_type_ids=None, attention_mask=None) -> torch.Tensor:
        """ids: (batch, T) -> hidden states (batch, T, d_model) of the last layer.

        token_type_ids: (batch, T), 0 for sentence A and 1 for sentence B (default all 0).
        attention_mask: (batch, T), 1 = real token, 0 = padding (default: ids != pad_id).
        """
        return self.hidden_states(ids, token_type_ids, attention_mask)[-1]

    def _forward(self, ids, token_type_ids, attention_mask) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        validate.token_ids(ids, self.vocab_size, self.max_len)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(ids)  # everything is sentence A
        if validate.token_ids(token_type_ids, self.type_vocab_size, name="token_type_ids").shape != ids.shape:
            raise ValueError(
                f"token_type_ids must have the shape of ids {tuple(ids.shape)}, got {tuple(token_type_ids.shape)}"
            )
        if attention_mask is None:
            mask = padding_mask(ids, self.pad_id)  # (batch, 1, 1, T): True at real tokens
        elif isinstance(attention_mask, torch.Tensor) and attention_mask.shape == ids.shape:
            mask = attention_mask.bool()[:, None, None, :]  # Hugging Face's 1/0 -> (batch, 1, 1, T)
        else:
            raise ValueError(
                f"attention_mask must be a tensor of the shape of ids {tuple(ids.shape)} "
                f"(1 = real token, 0 = padding), got {getattr(attention_mask, 'shape', attention_mask)}"
            )
        x = self.tok_embed(ids) + self.type_embed(token_type_ids)
        x = self.dropout(self.norm(self.pos_embed(x)))  # (batch, T, d_model)
        states = [x]
        weights = []
        for block in self.blocks:
            x, w = block.forward_with_weights(x, mask)
            states.append(x)
            weights.append(w)
        return states, weights
