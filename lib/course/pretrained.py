"""Pretrained weights in the course's models: the bridge to Hugging Face transformers (lectures 7-10).

    from_hf_llama(model)   a Llama (scratch.l08_llama) with the weights of a LlamaForCausalLM, e.g. SmolLM2
    from_hf_bert(model)    a BERT with the weights of a BertModel (or a BertFor... model), e.g. MiniLM

Each from_hf_* reads the architecture from the model's config, builds ours, and copies every weight with one
helper (`_copy`), which refuses a tensor whose shape differs. Nothing here is needed to understand the models:
it maps names (q_proj -> w_q, ...) and checks every shape. The course's own
checkpoints are loaded by course.checkpoints.
"""

from __future__ import annotations

import torch
from torch import nn

from scratch.l07_bert import BERT
from scratch.l08_llama import Llama, LlamaConfig

ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
# Our post-LN EncoderBlock's parts -> the same parts of transformers' BertLayer (both directions use it)
BERT_LAYER = {
    "self_attn.w_q": "attention.self.query",
    "self_attn.w_k": "attention.self.key",
    "self_attn.w_v": "attention.self.value",
    "self_attn.w_o": "attention.output.dense",
    "norm1": "attention.output.LayerNorm",
    "ffn.linear1": "intermediate.dense",
    "ffn.linear2": "output.dense",
    "norm2": "output.LayerNorm",
}


def _copy(pairs: list[tuple[nn.Module, nn.Module | dict, str]]) -> None:
    """For each (ours, theirs, their name): every parameter ours.<key> <- theirs.<key> (theirs a module, or a
    dict key -> tensor for weights that need reshaping first)."""
    with torch.no_grad():
        for ours, theirs, name in pairs:
            for key, param in ours.named_parameters():
                value = theirs[key] if isinstance(theirs, dict) else getattr(theirs, key)
                if param.shape != value.shape:
                    raise ValueError(
                        f"cannot load {name}.{key}: expected shape {tuple(param.shape)}, got {tuple(value.shape)}"
                    )
                param.copy_(value)


def _model_type(hf_model, expected: str) -> None:
    found = getattr(hf_model.config, "model_type", None)
    if found != expected:
        raise ValueError(f"expected a {expected!r} model, got model_type {found!r}")


def _tied(hf_model) -> bool:
    return getattr(hf_model.config, "tie_word_embeddings", True) or not hasattr(hf_model, "lm_head")


def from_hf_llama(hf_model) -> Llama:
    """A Llama with the weights of a Hugging Face LlamaForCausalLM (or LlamaModel), same logits: SmolLM2.

    The names map one to one: q_proj/k_proj/v_proj/o_proj -> w_q/w_k/w_v/w_o, gate_proj/up_proj/down_proj ->
    gate/up/down, input_layernorm -> norm1, post_attention_layernorm -> norm2, model.norm -> norm,
    embed_tokens -> tok_embed.
    """
    _model_type(hf_model, "llama")
    c = hf_model.config
    if c.hidden_act != "silu":
        raise ValueError(f"only Llama's SiLU-gated MLP is supported, got hidden_act {c.hidden_act!r}")
    if bool(c.attention_bias) != bool(c.mlp_bias):
        raise ValueError("attention_bias and mlp_bias differ; our Llama has one `bias` switch for both")
    if (
        getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    ) * c.num_attention_heads != c.hidden_size:
        raise ValueError(f"head_dim · num_attention_heads must equal hidden_size ({c.hidden_size}): d_k = d_model / h")
    # transformers 5 keeps RoPE's settings in config.rope_parameters; older versions in config.rope_theta
    rope = getattr(c, "rope_parameters", None) or {}
    if rope.get("rope_type", "default") != "default":
        raise ValueError(f"only plain RoPE is supported, got rope_type {rope['rope_type']!r}")
    sizes = dict(
        vocab_size=c.vocab_size, max_len=c.max_position_embeddings, d_model=c.hidden_size, N=c.num_hidden_layers
    )
    heads = dict(h=c.num_attention_heads, n_kv_heads=c.num_key_value_heads, d_ff=c.intermediate_size)
    options = dict(
        eps=c.rms_norm_eps, dropout=c.attention_dropout, bias=bool(c.attention_bias), tie_embeddings=_tied(hf_model)
    )
    rope_base = rope.get("rope_theta", getattr(c, "rope_theta", 10000.0))
    model = Llama(LlamaConfig(**sizes, **heads, **options, rope_base=rope_base))
    llama = getattr(hf_model, "model", hf_model)  # LlamaForCausalLM wraps a LlamaModel
    model.to(llama.embed_tokens.weight.dtype)
    pairs = [(model.tok_embed, llama.embed_tokens), (model.norm, llama.norm)]
    for block, layer in zip(model.blocks, llama.layers):
        attn, mlp = layer.self_attn, layer.mlp
        pairs += [
            (block.self_attn.w_q, attn.q_proj),
            (block.self_attn.w_k, attn.k_proj),
            (block.self_attn.w_v, attn.v_proj),
            (block.self_attn.w_o, attn.o_proj),
            (block.ffn.gate, mlp.gate_proj),
            (block.ffn.up, mlp.up_proj),
            (block.ffn.down, mlp.down_proj),
            (block.norm1, layer.input_layernorm),
            (block.norm2, layer.post_attention_layernorm),
        ]
    if not model.config.tie_embeddings:
        pairs.append((model.lm_head, hf_model.lm_head))
    _copy(_named(pairs, hf_model))
    return model.eval()


def from_hf_bert(hf_model) -> BERT:
    """A BERT with the weights of a Hugging Face BertModel (or a BertFor... model), same outputs."""
    bert = getattr(hf_model, "bert", hf_model)
    c = bert.config
    if getattr(c, "position_embedding_type", "absolute") != "absolute":
        raise ValueError(f"only absolute position embeddings are supported, got {c.position_embedding_type!r}")
    if c.hidden_act not in ACTIVATIONS:
        raise ValueError(f"unsupported BERT activation {c.hidden_act!r}")
    model = BERT(
        vocab_size=c.vocab_size,
        d_model=c.hidden_size,
        h=c.num_attention_heads,
        N=c.num_hidden_layers,
        d_ff=c.intermediate_size,
        max_len=c.max_position_embeddings,
        type_vocab_size=c.type_vocab_size,
        dropout=c.hidden_dropout_prob,
        activation=ACTIVATIONS[c.hidden_act],
        eps=c.layer_norm_eps,
        pad_id=c.pad_token_id or 0,
    )
    embeddings = bert.embeddings
    model.to(embeddings.word_embeddings.weight.dtype)
    pairs = [
        (model.tok_embed, embeddings.word_embeddings),
        (model.pos_embed.embedding, embeddings.position_embeddings),
        (model.type_embed, embeddings.token_type_embeddings),
        (model.norm, embeddings.LayerNorm),
    ]
    for block, layer in zip(model.blocks, bert.encoder.layer):
        pairs += [(block.get_submodule(ours), layer.get_submodule(theirs)) for ours, theirs in BERT_LAYER.items()]
    _copy(_named(pairs, bert))
    return model.eval()


def _named(pairs: list[tuple[nn.Module, nn.Module]], hf_model) -> list[tuple[nn.Module, nn.Module, str]]:
    """Each (ours, theirs) pair with their module's name in hf_model, for error messages."""
    names = {module: name for name, module in hf_model.named_modules()}
    return [(ours, theirs, names.get(theirs, "?")) for ours, theirs in pairs]
