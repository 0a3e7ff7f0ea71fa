"""Whole models from the blocks of lecture 5: the original encoder-decoder, GPT, and BERT (lectures 6-8).

    Transformer   "Attention Is All You Need": src -> encoder stack -> memory; tgt + memory -> decoder
                  stack -> logits. Sinusoidal positions, embeddings scaled by sqrt(d_model), tied output.
    GPTConfig     a decoder-only architecture in one place; GPTConfig.gpt2() and GPTConfig.llama() are presets
    GPT           decoder-only: token (+ learned position) embeddings -> N pre-LN blocks with a causal mask
                  -> final norm -> LM head tied to the token embedding. GPT-2 by default; Llama (RMSNorm,
                  SwiGLU, rotary positions, grouped-query attention) with GPTConfig.llama (lecture 8).
    BERT          word + position + token-type embeddings -> LayerNorm -> N post-LN blocks, no mask but
                  padding (lecture 7).

Every model's forward returns one tensor (logits, or BERT's hidden states); attention_weights(...) returns the
attention weights of the same call. Pretrained weights (GPT-2, SmolLM2, MiniLM) are loaded by scratch.pretrained;
generation is scratch.sampling.
The output layer is the "de-embedding": logits = x E^T, one score per vocabulary entry from the dot product
of the final hidden state x (d_model) with each token's embedding row (weight tying).
Shapes: batch, S source positions, T target positions, d_model, h heads, d_ff, N layers, V vocabulary.
"""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn

from scratch import validate
from scratch.attention import KVCache, causal_mask, padding_mask
from scratch.blocks import NORMS, DecoderBlock, EncoderBlock, LayerNorm
from scratch.embeddings import LearnedPositionalEmbedding, RotaryEmbedding, SinusoidalPositionalEncoding

# ---------------------------------------------------------------- the encoder-decoder transformer


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
    layer reuses the target embedding matrix E: logits = x E^T.
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
        self.src_vocab_size = validate.integer(src_vocab_size, "src_vocab_size")
        self.tgt_vocab_size = validate.integer(tgt_vocab_size, "tgt_vocab_size")
        self.d_model = validate.integer(d_model, "d_model")
        self.max_len = validate.integer(max_len, "max_len")
        self.pad_id = validate.token_id(pad_id, min(src_vocab_size, tgt_vocab_size), "pad_id")
        validate.integer(N, "N")
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


# ---------------------------------------------------------------- GPT: decoder-only


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
    past kept in a cache (one scratch.attention.KVCache per block, lecture 10).
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


# ---------------------------------------------------------------- BERT


class BERT(nn.Module):
    """A BERT encoder: contextual vectors for every token, each position seeing the whole sequence.

    Input = word embedding + position embedding + token-type (segment) embedding, then LayerNorm and
    dropout, then N post-LN EncoderBlocks. There is no causal mask, only padding is hidden.
    The arguments are transformers' BertConfig's. Initialised like BERT: N(0, 0.02²) matrices, zero biases.
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
        self.vocab_size = validate.integer(vocab_size, "vocab_size")
        self.max_len = validate.integer(max_len, "max_len")
        self.type_vocab_size = validate.integer(type_vocab_size, "type_vocab_size")
        self.pad_id = validate.token_id(pad_id, vocab_size, "pad_id")
        self.tok_embed = nn.Embedding(vocab_size, d_model)
        self.pos_embed = LearnedPositionalEmbedding(max_len, d_model)
        self.type_embed = nn.Embedding(type_vocab_size, d_model)
        self.norm = LayerNorm(d_model, eps)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            EncoderBlock(d_model, h, d_ff, dropout, activation, norm_first=False, eps=eps)
            for _ in range(validate.integer(N, "N"))
        )
        for name, p in self.named_parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

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
