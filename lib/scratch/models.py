"""Whole models from the blocks of lecture 5: the original encoder-decoder, GPT, and a BERT encoder (lecture 6).

    Transformer   "Attention Is All You Need": src -> encoder stack -> memory; tgt + memory -> decoder
                  stack -> logits. Sinusoidal positions, embeddings scaled by sqrt(d_model), tied output.
    GPT           decoder-only: token + learned position embeddings -> N pre-LN blocks with a causal mask
                  -> final LayerNorm -> LM head tied to the token embedding. `from_hf_gpt2` loads GPT-2.
                  Options make it a Llama (RMSNorm, SwiGLU, rotary positions, grouped-query attention):
                  `from_hf_llama` loads Llama-architecture models such as SmolLM2. forward(ids, kv_cache=...)
                  computes only new positions, attending to the cached keys and values of the past (lecture 10).
    Encoder       BERT: word + position + token-type embeddings -> LayerNorm -> N post-LN blocks, no mask
                  but padding. `from_hf_bert` loads a Hugging Face BertModel (e.g. MiniLM).

The output layer is the "de-embedding": logits = h E^T, one score per vocabulary entry from the dot
product of the final hidden state h (d_model) with each token's embedding row (weight tying).
Shapes: batch, S source positions, T target positions, d_model, h heads, d_ff, N layers, V vocabulary.
"""
from __future__ import annotations

import math
import operator
from contextlib import contextmanager

import torch
from torch import nn

from scratch.attention import KVCache, causal_mask, padding_mask
from scratch.blocks import DecoderBlock, EncoderBlock, LayerNorm, make_norm
from scratch.embeddings import LearnedPositionalEmbedding, RotaryEmbedding, SinusoidalPositionalEncoding


# ---------------------------------------------------------------- input checks

def _check_ids(ids, vocab_size: int, max_len: int, what: str = "ids") -> torch.Tensor:
    """ids must be an integer tensor (batch, T) with 1 <= T <= max_len and 0 <= every id < vocab_size."""
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor of token ids, got {type(ids).__name__}")
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise TypeError(f"{what} must be an integer tensor of token ids, got {ids.dtype}")
    if ids.dim() != 2:
        raise ValueError(f"{what} must have shape (batch, length), got {tuple(ids.shape)}")
    if ids.shape[0] == 0 or ids.shape[1] == 0:
        raise ValueError(f"{what} is empty: shape {tuple(ids.shape)}")
    if ids.shape[1] > max_len:
        raise ValueError(f"{what} is too long: {ids.shape[1]} tokens, but max_len = {max_len} positions")
    low, high = torch.aminmax(ids)
    if low < 0 or high >= vocab_size:
        raise ValueError(f"{what} contains token ids outside the vocabulary 0..{vocab_size - 1}: "
                         f"found {int(low)}..{int(high)}")
    return ids


def _check_token_id(value, vocab_size: int, what: str) -> int:
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, got {type(value).__name__}") from None
    if not 0 <= value < vocab_size:
        raise ValueError(f"{what} = {value} is outside the vocabulary 0..{vocab_size - 1}")
    return value


def _check_count(value, what: str, minimum: int = 1) -> int:
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, got {type(value).__name__}") from None
    if value < minimum:
        raise ValueError(f"{what} must be at least {minimum}, got {value}")
    return value


def _same_batch(*named: tuple[str, torch.Tensor]) -> None:
    sizes = {name: t.shape[0] for name, t in named}
    if len(set(sizes.values())) > 1:
        raise ValueError("batch sizes differ: " + ", ".join(f"{name} has {size}" for name, size in sizes.items()))


def _copy_(param: torch.Tensor, value: torch.Tensor, name: str) -> None:
    if param.shape != value.shape:
        raise ValueError(f"cannot load {name}: expected shape {tuple(param.shape)}, got {tuple(value.shape)}")
    with torch.no_grad():
        param.copy_(value)


@contextmanager
def _eval_mode(model: nn.Module):
    """Dropout off and no gradients inside the `with`; the previous train/eval mode is restored after."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


# ---------------------------------------------------------------- the encoder-decoder transformer

class Transformer(nn.Module):
    """The encoder-decoder of "Attention Is All You Need" (post-LN by default, as in the paper).

        memory = encode(src)                  # (batch, S, d_model)
        logits = decode(tgt, memory, src)     # (batch, T, V_tgt), src only for its padding mask
        logits = model(src, tgt)              # both at once; teacher forcing: tgt = [BOS, y_1, ..., y_{T-1}]

    pad_id marks padding in src and tgt: padded source tokens are hidden from every query (encoder
    self-attention and cross-attention), padded target tokens from the decoder's self-attention (with
    targets padded on the right, as here, the causal mask alone would already hide them from real tokens).
    Embeddings are N(0, 1/d_model) and multiplied by sqrt(d_model), so each component of the scaled
    embedding has unit variance, comparable to the positional encoding's; with tie_embeddings the output
    layer reuses the target embedding matrix E: logits = h E^T.
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 512, h: int = 8, N: int = 6,
                 d_ff: int = 2048, dropout: float = 0.1, max_len: int = 512, norm_first: bool = False,
                 activation: str = "relu", tie_embeddings: bool = True, pad_id: int = 0):
        super().__init__()
        self.src_vocab_size = _check_count(src_vocab_size, "src_vocab_size")
        self.tgt_vocab_size = _check_count(tgt_vocab_size, "tgt_vocab_size")
        self.d_model, self.max_len = _check_count(d_model, "d_model"), _check_count(max_len, "max_len")
        self.pad_id = _check_token_id(pad_id, min(src_vocab_size, tgt_vocab_size), "pad_id")
        _check_count(N, "N")
        self.src_embed = nn.Embedding(src_vocab_size, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model)
        self.pos = SinusoidalPositionalEncoding(d_model, max_len, dropout)   # adds PE, then dropout
        self.encoder = nn.ModuleList(EncoderBlock(d_model, h, d_ff, dropout, activation, norm_first)
                                     for _ in range(N))
        self.decoder = nn.ModuleList(DecoderBlock(d_model, h, d_ff, dropout, activation, norm_first)
                                     for _ in range(N))
        # pre-LN never normalises the residual stream inside the blocks, so each stack ends with a norm
        self.encoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()
        self.decoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()
        self.lm_head = nn.Linear(d_model, tgt_vocab_size, bias=False)     # the de-embedding, (d_model -> V)

        for p in self.parameters():                  # Glorot for every matrix, as torch.nn.Transformer does
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        for embedding in (self.src_embed, self.tgt_embed):
            nn.init.normal_(embedding.weight, std=d_model ** -0.5)
        if tie_embeddings:
            self.lm_head.weight = self.tgt_embed.weight   # one (V, d_model) matrix E: in as E[id], out as h E^T

    def _embed(self, ids: torch.Tensor, embedding: nn.Embedding) -> torch.Tensor:
        return self.pos(embedding(ids) * math.sqrt(self.d_model))     # (batch, L, d_model)

    def encode(self, src: torch.Tensor, need_weights: bool = False):
        """src: (batch, S) ids -> memory (batch, S, d_model); with need_weights also a list of the N
        encoder self-attention weights, each (batch, h, S, S)."""
        _check_ids(src, self.src_vocab_size, self.max_len, "src")
        mask = padding_mask(src, self.pad_id)                          # (batch, 1, 1, S)
        x = self._embed(src, self.src_embed)
        weights = []
        for block in self.encoder:
            x, w = block(x, mask, need_weights=True)
            weights.append(w)
        x = self.encoder_norm(x)
        return (x, weights) if need_weights else x

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, src: torch.Tensor, need_weights: bool = False):
        """tgt: (batch, T) ids, memory: (batch, S, d_model) from encode(src), src: (batch, S) (for its padding).

        Returns logits (batch, T, V_tgt): position t predicts token t + 1. With need_weights also two lists
        of N weights each: decoder self-attention (batch, h, T, T) and cross-attention (batch, h, T, S).
        """
        _check_ids(tgt, self.tgt_vocab_size, self.max_len, "tgt")
        _check_ids(src, self.src_vocab_size, self.max_len, "src")
        if not isinstance(memory, torch.Tensor):
            raise TypeError(f"memory must be a torch.Tensor (the output of encode), got {type(memory).__name__}")
        _same_batch(("tgt", tgt), ("memory", memory), ("src", src))
        if memory.dim() != 3 or memory.shape[1:] != (src.shape[1], self.d_model):
            raise ValueError(f"memory must have shape (batch, S={src.shape[1]}, d_model={self.d_model}) to match "
                             f"src, got {tuple(memory.shape)}")
        memory_mask = padding_mask(src, self.pad_id)                  # (batch, 1, 1, S)
        # position t sees targets 0..t that are not padding: (T, T) & (batch, 1, 1, T) -> (batch, 1, T, T)
        self_mask = causal_mask(tgt.shape[1], device=tgt.device) & padding_mask(tgt, self.pad_id)
        x = self._embed(tgt, self.tgt_embed)
        self_weights, cross_weights = [], []
        for block in self.decoder:
            x, w_self, w_cross = block(x, memory, self_mask, memory_mask, need_weights=True)
            self_weights.append(w_self)
            cross_weights.append(w_cross)
        logits = self.lm_head(self.decoder_norm(x))                    # (batch, T, V): h E^T
        return (logits, self_weights, cross_weights) if need_weights else logits

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, need_weights: bool = False):
        """src: (batch, S), tgt: (batch, T) -> logits (batch, T, V_tgt).

        With need_weights, returns (logits, weights), weights a dict of lists (one tensor per layer):
        "encoder" (batch, h, S, S), "decoder" (batch, h, T, T) and "cross" (batch, h, T, S), where
        weights["cross"][layer][b, head, t, s] is how much target position t looks at source position s.
        """
        _check_ids(src, self.src_vocab_size, self.max_len, "src")
        _check_ids(tgt, self.tgt_vocab_size, self.max_len, "tgt")
        _same_batch(("src", src), ("tgt", tgt))
        memory, encoder_weights = self.encode(src, need_weights=True)
        if not need_weights:
            return self.decode(tgt, memory, src)
        logits, self_weights, cross_weights = self.decode(tgt, memory, src, need_weights=True)
        return logits, {"encoder": encoder_weights, "decoder": self_weights, "cross": cross_weights}

    def greedy_decode(self, src: torch.Tensor, bos_id: int, eos_id: int, max_len: int | None = None) -> torch.Tensor:
        """Translate src (batch, S) one token at a time, always taking the most probable next token.

        Starts every target from BOS, encodes the source once, and stops when every sequence has emitted
        EOS or after max_len tokens (default: the model's max_len). Returns (batch, L) ids with L <= max_len:
        the generated tokens without BOS, each row ending at its EOS and padded with pad_id after it.
        Runs in eval mode without gradients (and restores the previous mode).
        """
        bos_id = _check_token_id(bos_id, self.tgt_vocab_size, "bos_id")
        eos_id = _check_token_id(eos_id, self.tgt_vocab_size, "eos_id")
        max_len = self.max_len if max_len is None else _check_count(max_len, "max_len")
        if max_len > self.max_len:
            raise ValueError(f"max_len = {max_len} exceeds the model's max_len = {self.max_len} positions")
        with _eval_mode(self):
            memory = self.encode(src)                                   # (batch, S, d_model), computed once
            batch = src.shape[0]
            ys = torch.full((batch, 1), bos_id, dtype=torch.long, device=src.device)   # (batch, 1): BOS
            done = torch.zeros(batch, dtype=torch.bool, device=src.device)
            for _ in range(max_len):
                next_id = self.decode(ys, memory, src)[:, -1].argmax(dim=-1)   # (batch,) from the last position
                next_id = next_id.masked_fill(done, self.pad_id)             # finished rows only get padding
                ys = torch.cat([ys, next_id[:, None]], dim=1)
                done |= next_id == eos_id
                if done.all():
                    break
        return ys[:, 1:]


# ---------------------------------------------------------------- GPT: decoder-only

POSITIONALS = ("learned", "rotary")


class GPT(nn.Module):
    """A GPT-2-style language model: logits for the next token at every position.

    The blocks are EncoderBlocks with a causal mask: a decoder-only model has no encoder to cross-attend
    to, so its "decoder block" is just masked self-attention and a feed-forward network.
    Initialised like GPT-2: N(0, 0.02²), with the projections into the residual stream (W^O and W_2)
    scaled down by 1/sqrt(2N) so the stream's variance does not grow with depth.

    The defaults are GPT-2. Llama (and SmolLM2) changes four things, each an option here:
        norm="rmsnorm"         RMSNorm instead of LayerNorm (in every block and at the end)
        ffn="swiglu"           the gated SwiGLU feed-forward network instead of the GELU MLP
        positional="rotary"    no position embedding added to the input: queries and keys are rotated by
                               their positions in every attention layer (RoPE, base rope_base)
        n_kv_heads             grouped-query attention: n_kv_heads key/value heads shared by the h query heads
    and drops the biases (bias=False). `activation` is the MLP's non-linearity (default "gelu_tanh");
    SwiGLU always uses SiLU.

    Generating with a KV cache (lecture 10): every layer keeps the keys and values of the positions it has
    seen, so each step feeds only the new token:

        cache = model.new_kv_cache()                 # one empty KVCache per block
        logits = model(prompt, kv_cache=cache)       # (batch, T, V); the cache now holds T positions
        logits = model(next_ids, kv_cache=cache)     # next_ids (batch, 1) is position T; the cache grows to T + 1
    """

    def __init__(self, vocab_size: int, d_model: int, h: int, N: int, d_ff: int, max_len: int, dropout: float = 0.0,
                 norm_first: bool = True, activation: str | None = None, tie_embeddings: bool = True,
                 bias: bool = True, eps: float = 1e-5, norm: str = "layernorm", ffn: str = "mlp",
                 positional: str = "learned", rope_base: float = 10000.0, n_kv_heads: int | None = None):
        super().__init__()
        self.vocab_size, self.max_len = _check_count(vocab_size, "vocab_size"), _check_count(max_len, "max_len")
        _check_count(N, "N")
        if positional not in POSITIONALS:
            raise ValueError(f"unknown positional {positional!r}; choose one of {', '.join(POSITIONALS)}")
        if ffn == "mlp" and activation is None:
            activation = "gelu_tanh"                                   # GPT-2's gelu_new
        self.positional = positional
        self.tok_embed = nn.Embedding(vocab_size, d_model)
        if positional == "learned":
            self.pos_embed = LearnedPositionalEmbedding(max_len, d_model)
            rotary = None
        else:                                                          # one cos/sin table shared by all layers
            if h < 1 or d_model % h:
                raise ValueError(f"d_model ({d_model}) must be divisible by the number of heads h ({h})")
            self.pos_embed = None
            rotary = RotaryEmbedding(d_model // h, max_len, rope_base)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(EncoderBlock(d_model, h, d_ff, dropout, activation, norm_first, eps, bias,
                                                 norm=norm, ffn=ffn, n_kv_heads=n_kv_heads, rotary=rotary)
                                    for _ in range(N))
        self.norm = make_norm(norm, d_model, eps) if norm_first else nn.Identity()
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() > 1:
                residual = name.endswith(("w_o.weight", "linear2.weight", "down.weight"))
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * N) if residual else 0.02)
        if tie_embeddings:
            self.lm_head.weight = self.tok_embed.weight

    def new_kv_cache(self) -> list[KVCache]:
        """An empty cache for forward's kv_cache: one KVCache per block."""
        return [KVCache() for _ in self.blocks]

    def forward(self, ids: torch.Tensor, need_weights: bool = False, kv_cache: list[KVCache] | None = None,
                last_only: bool = False):
        """ids: (batch, T) -> logits (batch, T, V); position t scores the token at t + 1.
        With need_weights also a list of N attention weights, each (batch, h, T, T).
        last_only: logits (batch, 1, V) of the last position only, all generation needs (the output layer
        is the model's largest matrix: no need to apply it T times).

        kv_cache (from new_kv_cache()): ids are the T tokens that follow the `past` positions already in the
        cache, at positions past..past+T-1 (the learned position embedding starts at offset past, rotary
        turns by these positions); they attend to the cached keys and values and to themselves, and every
        layer appends their keys and values to its cache. The logits equal those of the full sequence's
        last T positions; the attention weights are (batch, h, T, past + T).
        """
        _check_ids(ids, self.vocab_size, self.max_len)
        past = self._check_kv_cache(kv_cache, ids)
        if past + ids.shape[1] > self.max_len:
            raise ValueError(f"too long: {past} cached positions + {ids.shape[1]} new tokens exceed the model's "
                             f"max_len = {self.max_len} positions")
        # (T, past + T): no peeking at the future; one new token may see everything, so no mask at all
        t = ids.shape[1]
        mask = None if past and t == 1 else causal_mask(t, device=ids.device, past=past)
        x = self.tok_embed(ids)                                        # (batch, T, d_model)
        if self.pos_embed is not None:                                 # rotary positions act inside attention
            x = self.pos_embed(x, offset=past)
        x = self.dropout(x)
        weights = []
        for i, block in enumerate(self.blocks):
            layer_cache = None if kv_cache is None else kv_cache[i]
            positions = past if kv_cache is not None and self.pos_embed is None else None
            x, w = block(x, mask, need_weights=True, positions=positions, kv_cache=layer_cache)
            weights.append(w)
        if last_only:
            x = x[:, -1:]                                              # (batch, 1, d_model)
        logits = self.lm_head(self.norm(x))                            # (batch, T, V): h E^T
        return (logits, weights) if need_weights else logits

    def _check_kv_cache(self, kv_cache, ids) -> int:
        """The number of cached positions (0 without a cache); the cache must fit the model and the batch."""
        if kv_cache is None:
            return 0
        if not isinstance(kv_cache, (list, tuple)) or len(kv_cache) != len(self.blocks) \
                or not all(isinstance(c, KVCache) for c in kv_cache):
            raise TypeError(f"kv_cache must be a list of {len(self.blocks)} KVCache (one per block), as "
                            f"model.new_kv_cache() makes")
        past = len(kv_cache[0])
        if any(len(c) != past for c in kv_cache):
            raise ValueError(f"the layers' caches hold different numbers of positions: {[len(c) for c in kv_cache]}")
        if past and isinstance(ids, torch.Tensor) and kv_cache[0].k.shape[0] != ids.shape[0]:
            raise ValueError(f"the cache holds a batch of {kv_cache[0].k.shape[0]} rows, ids has {ids.shape[0]}")
        return past

    def generate(self, ids: torch.Tensor, max_new_tokens: int, eos_id: int | None = None) -> torch.Tensor:
        """Greedy continuation: append the most probable next token max_new_tokens times.

        ids: (batch, T) prompt -> (batch, T + n) with n <= max_new_tokens. The model sees at most its last
        max_len tokens. With eos_id, a row that emitted EOS is continued with EOS, and the loop stops
        once every row has. Runs in eval mode without gradients (and restores the previous mode).
        It recomputes the whole context every step; scratch.sampling.generate (lecture 10) uses the KV cache
        and also samples and searches beams.
        """
        _check_ids(ids, self.vocab_size, float("inf"))
        max_new_tokens = _check_count(max_new_tokens, "max_new_tokens", minimum=0)
        if eos_id is not None:
            eos_id = _check_token_id(eos_id, self.vocab_size, "eos_id")
        done = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
        with _eval_mode(self):
            for _ in range(max_new_tokens):
                logits = self(ids[:, -self.max_len:])                   # crop the context to max_len
                next_id = logits[:, -1].argmax(dim=-1)                   # (batch,)
                if eos_id is not None:
                    next_id = next_id.masked_fill(done, eos_id)
                    done |= next_id == eos_id
                ids = torch.cat([ids, next_id[:, None]], dim=1)
                if done.all():
                    break
        return ids

    @classmethod
    def from_hf_gpt2(cls, hf_model) -> GPT:
        """A GPT with the weights of a Hugging Face GPT2LMHeadModel (or GPT2Model), same logits.

        GPT-2 stores its linear layers as Conv1D, weight (in, out) with y = x W + b: the transpose of
        nn.Linear's (out, in). Its attention packs W^Q, W^K, W^V side by side in one c_attn (d, 3d).
        """
        config = hf_model.config
        if getattr(config, "model_type", None) != "gpt2":
            raise ValueError(f"expected a GPT-2 model, got model_type {getattr(config, 'model_type', None)!r}")
        activations = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
        if config.activation_function not in activations:
            raise ValueError(f"unsupported GPT-2 activation {config.activation_function!r}")
        if not config.scale_attn_weights or config.scale_attn_by_inverse_layer_idx:
            raise ValueError("only GPT-2's standard 1/sqrt(d_k) attention scaling is supported")
        transformer = getattr(hf_model, "transformer", hf_model)      # GPT2LMHeadModel wraps a GPT2Model
        d_model = config.n_embd
        tied = getattr(config, "tie_word_embeddings", True) or not hasattr(hf_model, "lm_head")
        model = cls(vocab_size=config.vocab_size, d_model=d_model, h=config.n_head, N=config.n_layer,
                    d_ff=config.n_inner or 4 * d_model, max_len=config.n_positions, dropout=config.resid_pdrop,
                    norm_first=True, activation=activations[config.activation_function],
                    tie_embeddings=tied, eps=config.layer_norm_epsilon)
        model.to(transformer.wte.weight.dtype)
        _copy_(model.tok_embed.weight, transformer.wte.weight, "wte")
        _copy_(model.pos_embed.weight, transformer.wpe.weight, "wpe")
        for i, (block, layer) in enumerate(zip(model.blocks, transformer.h)):
            w_q, w_k, w_v = layer.attn.c_attn.weight.t().split(d_model, dim=0)   # (3d, d) -> 3 × (d, d)
            b_q, b_k, b_v = layer.attn.c_attn.bias.split(d_model)
            attn = block.self_attn
            for linear, w, b in ((attn.w_q, w_q, b_q), (attn.w_k, w_k, b_k), (attn.w_v, w_v, b_v),
                                 (attn.w_o, layer.attn.c_proj.weight.t(), layer.attn.c_proj.bias),
                                 (block.ffn.linear1, layer.mlp.c_fc.weight.t(), layer.mlp.c_fc.bias),
                                 (block.ffn.linear2, layer.mlp.c_proj.weight.t(), layer.mlp.c_proj.bias)):
                _copy_(linear.weight, w, f"h.{i} weight")
                _copy_(linear.bias, b, f"h.{i} bias")
            for ours, theirs in ((block.norm1, layer.ln_1), (block.norm2, layer.ln_2)):
                _copy_(ours.weight, theirs.weight, f"h.{i} LayerNorm weight")
                _copy_(ours.bias, theirs.bias, f"h.{i} LayerNorm bias")
        _copy_(model.norm.weight, transformer.ln_f.weight, "ln_f.weight")
        _copy_(model.norm.bias, transformer.ln_f.bias, "ln_f.bias")
        if not tied:
            _copy_(model.lm_head.weight, hf_model.lm_head.weight, "lm_head.weight")
        return model.eval()


    @classmethod
    def from_hf_llama(cls, hf_model) -> GPT:
        """A GPT with the weights of a Hugging Face LlamaForCausalLM (or LlamaModel), same logits: SmolLM2.

        A Llama is this GPT with norm="rmsnorm", ffn="swiglu", positional="rotary", grouped-query
        attention and no biases. The names map one to one: q_proj/k_proj/v_proj/o_proj -> w_q/w_k/w_v/w_o,
        gate_proj/up_proj/down_proj -> gate/up/down, input_layernorm -> norm1,
        post_attention_layernorm -> norm2, model.norm -> norm, embed_tokens -> tok_embed.
        """
        config = hf_model.config
        if getattr(config, "model_type", None) != "llama":
            raise ValueError(f"expected a Llama model, got model_type {getattr(config, 'model_type', None)!r}")
        if config.hidden_act != "silu":
            raise ValueError(f"only Llama's SiLU-gated MLP is supported, got hidden_act {config.hidden_act!r}")
        if bool(config.attention_bias) != bool(config.mlp_bias):
            raise ValueError("attention_bias and mlp_bias differ; this GPT has one `bias` switch for both")
        d_model, h = config.hidden_size, config.num_attention_heads
        head_dim = getattr(config, "head_dim", None) or d_model // h
        if head_dim * h != d_model:
            raise ValueError(f"head_dim ({head_dim}) · num_attention_heads ({h}) must equal hidden_size "
                             f"({d_model}), as d_k = d_model / h here")
        # transformers 5 keeps RoPE's settings in config.rope_parameters; older versions in config.rope_theta
        rope = getattr(config, "rope_parameters", None) or {}
        if rope.get("rope_type", "default") != "default":
            raise ValueError(f"only plain RoPE is supported, got rope_type {rope['rope_type']!r}")
        rope_base = rope.get("rope_theta", getattr(config, "rope_theta", 10000.0))
        llama = getattr(hf_model, "model", hf_model)                   # LlamaForCausalLM wraps a LlamaModel
        tied = getattr(config, "tie_word_embeddings", True) or not hasattr(hf_model, "lm_head")
        model = cls(vocab_size=config.vocab_size, d_model=d_model, h=h, N=config.num_hidden_layers,
                    d_ff=config.intermediate_size, max_len=config.max_position_embeddings,
                    dropout=config.attention_dropout, norm_first=True, tie_embeddings=tied,
                    bias=bool(config.attention_bias), eps=config.rms_norm_eps, norm="rmsnorm", ffn="swiglu",
                    positional="rotary", rope_base=rope_base, n_kv_heads=config.num_key_value_heads)
        model.to(llama.embed_tokens.weight.dtype)
        pairs = [(model.tok_embed, llama.embed_tokens), (model.norm, llama.norm)]
        for block, layer in zip(model.blocks, llama.layers):
            attn, mlp = layer.self_attn, layer.mlp
            pairs += [(block.self_attn.w_q, attn.q_proj), (block.self_attn.w_k, attn.k_proj),
                      (block.self_attn.w_v, attn.v_proj), (block.self_attn.w_o, attn.o_proj),
                      (block.ffn.gate, mlp.gate_proj), (block.ffn.up, mlp.up_proj), (block.ffn.down, mlp.down_proj),
                      (block.norm1, layer.input_layernorm), (block.norm2, layer.post_attention_layernorm)]
        if not tied:
            pairs.append((model.lm_head, hf_model.lm_head))
        theirs_names = {module: name for name, module in hf_model.named_modules()}
        for ours, theirs in pairs:
            for key, param in ours.named_parameters():
                _copy_(param, getattr(theirs, key), f"{theirs_names.get(theirs, '?')}.{key}")
        return model.eval()


# ---------------------------------------------------------------- BERT-style encoder

class Encoder(nn.Module):
    """A BERT encoder: contextual vectors for every token, each position seeing the whole sequence.

    Input = word embedding + position embedding + token-type (segment) embedding, then LayerNorm and
    dropout, then N post-LN EncoderBlocks. There is no causal mask, only padding is hidden.
    Initialised like BERT: N(0, 0.02²) matrices, zero biases.
    """

    def __init__(self, vocab_size: int, d_model: int, h: int, N: int, d_ff: int, max_len: int = 512,
                 type_vocab_size: int = 2, dropout: float = 0.1, activation: str = "gelu", eps: float = 1e-12,
                 pad_id: int = 0):
        super().__init__()
        self.vocab_size, self.max_len = _check_count(vocab_size, "vocab_size"), _check_count(max_len, "max_len")
        self.type_vocab_size = _check_count(type_vocab_size, "type_vocab_size")
        self.pad_id = _check_token_id(pad_id, vocab_size, "pad_id")
        _check_count(N, "N")
        self.tok_embed = nn.Embedding(vocab_size, d_model)
        self.pos_embed = LearnedPositionalEmbedding(max_len, d_model)
        self.type_embed = nn.Embedding(type_vocab_size, d_model)
        self.norm = LayerNorm(d_model, eps)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(EncoderBlock(d_model, h, d_ff, dropout, activation, norm_first=False, eps=eps)
                                    for _ in range(N))
        for name, p in self.named_parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def hidden_states(self, ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                      attention_mask: torch.Tensor | None = None, need_weights: bool = False):
        """Every layer's output: a list of N + 1 tensors (batch, T, d_model), the embeddings first
        (as Hugging Face's output_hidden_states). With need_weights also the N attention weights."""
        _check_ids(ids, self.vocab_size, self.max_len)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(ids)                    # everything is sentence A
        else:
            _check_ids(token_type_ids, self.type_vocab_size, self.max_len, "token_type_ids")
            if token_type_ids.shape != ids.shape:
                raise ValueError(f"token_type_ids must have the shape of ids {tuple(ids.shape)}, "
                                 f"got {tuple(token_type_ids.shape)}")
        if attention_mask is None:
            mask = padding_mask(ids, self.pad_id)                     # (batch, 1, 1, T): True at real tokens
        else:
            if not isinstance(attention_mask, torch.Tensor) or attention_mask.shape != ids.shape:
                found = tuple(attention_mask.shape) if isinstance(attention_mask, torch.Tensor) else attention_mask
                raise ValueError(f"attention_mask must be a tensor of the shape of ids {tuple(ids.shape)} "
                                 f"(1 = real token, 0 = padding), got {found}")
            mask = attention_mask.bool()[:, None, None, :]             # Hugging Face's 1/0 -> (batch, 1, 1, T)
        x = self.tok_embed(ids) + self.type_embed(token_type_ids)
        x = self.dropout(self.norm(self.pos_embed(x)))                # (batch, T, d_model)
        states, weights = [x], []
        for block in self.blocks:
            x, w = block(x, mask, need_weights=True)
            states.append(x)
            weights.append(w)
        return (states, weights) if need_weights else states

    def forward(self, ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None, need_weights: bool = False):
        """ids: (batch, T) -> hidden states (batch, T, d_model) of the last layer.

        token_type_ids: (batch, T), 0 for sentence A and 1 for sentence B (default all 0).
        attention_mask: (batch, T), 1 = real token, 0 = padding (default: ids != pad_id).
        With need_weights also a list of N attention weights, each (batch, h, T, T).
        """
        states, weights = self.hidden_states(ids, token_type_ids, attention_mask, need_weights=True)
        return (states[-1], weights) if need_weights else states[-1]

    @classmethod
    def from_hf_bert(cls, hf_model) -> Encoder:
        """An Encoder with the weights of a Hugging Face BertModel (or a BertFor... model), same outputs."""
        bert = getattr(hf_model, "bert", hf_model)
        config = bert.config
        if getattr(config, "position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"only absolute position embeddings are supported, got {config.position_embedding_type!r}")
        if config.hidden_act not in ("gelu", "relu", "gelu_new"):
            raise ValueError(f"unsupported BERT activation {config.hidden_act!r}")
        model = cls(vocab_size=config.vocab_size, d_model=config.hidden_size, h=config.num_attention_heads,
                    N=config.num_hidden_layers, d_ff=config.intermediate_size,
                    max_len=config.max_position_embeddings, type_vocab_size=config.type_vocab_size,
                    dropout=config.hidden_dropout_prob,
                    activation={"gelu_new": "gelu_tanh"}.get(config.hidden_act, config.hidden_act),
                    eps=config.layer_norm_eps, pad_id=config.pad_token_id or 0)
        embeddings = bert.embeddings
        model.to(embeddings.word_embeddings.weight.dtype)
        pairs = [(model.tok_embed, embeddings.word_embeddings),
                 (model.pos_embed.embedding, embeddings.position_embeddings),
                 (model.type_embed, embeddings.token_type_embeddings), (model.norm, embeddings.LayerNorm)]
        for block, layer in zip(model.blocks, bert.encoder.layer):
            attention = layer.attention
            pairs += [(block.self_attn.w_q, attention.self.query), (block.self_attn.w_k, attention.self.key),
                      (block.self_attn.w_v, attention.self.value), (block.self_attn.w_o, attention.output.dense),
                      (block.norm1, attention.output.LayerNorm), (block.ffn.linear1, layer.intermediate.dense),
                      (block.ffn.linear2, layer.output.dense), (block.norm2, layer.output.LayerNorm)]
        theirs_names = {module: name for name, module in bert.named_modules()}
        for ours, theirs in pairs:
            for key, param in ours.named_parameters():
                _copy_(param, getattr(theirs, key), f"{theirs_names.get(theirs, '?')}.{key}")
        return model.eval()
