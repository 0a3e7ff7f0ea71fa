"""Known-wrong and borrowed solutions to lecture 8's exercises: each must fail its check with a hint
(tests/test_exercises.py). Each value is the source of a whole solution cell."""

_TEMPLATE_OK = """
def chat_prompt(messages, add_generation_prompt=True):
    default_system = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    if messages and messages[0]["role"] != "system":
        messages = [{"role": "system", "content": default_system}] + list(messages)
    text = "".join(f"<|im_start|>{m['role']}\\n{m['content']}<|im_end|>\\n" for m in messages)
    if add_generation_prompt:
        text += "<|im_start|>assistant\\n"
    return text
"""

_INDUCTION_OK = """
def induction_scores(attentions, ids):
    queries, keys, last_seen = [], [], {}
    for t, token in enumerate(ids.tolist()):
        if token in last_seen:
            queries.append(t)
            keys.append(last_seen[token] + 1)
        last_seen[token] = t
    return attentions[..., queries, keys].mean(dim=-1)
"""

_LENS_OK = """
def logit_lens(model, ids):
    with torch.no_grad():
        hidden = model(ids, output_hidden_states=True).hidden_states
        normed = [model.model.norm(h[0]) for h in hidden[:-1]] + [hidden[-1][0]]
        return torch.stack(normed) @ model.model.embed_tokens.weight.T


def settled_layer(lens):
    top = lens.argmax(dim=-1)
    stays = (top == top[-1]).long().flip(0).cumprod(dim=0).flip(0)
    return lens.shape[0] - stays.sum(dim=0)
"""

_COUNT_OK = """
def llama_parameter_count(config):
    V, d, N = config.vocab_size, config.hidden_size, config.num_hidden_layers
    h, n_kv, d_ff = config.num_attention_heads, config.num_key_value_heads, config.intermediate_size
    d_k = d // h
    attention = d * h * d_k + 2 * d * n_kv * d_k + h * d_k * d
    head = 0 if config.tie_word_embeddings else V * d
    return V * d + N * (attention + 3 * d * d_ff + 2 * d) + d + head
"""

_LAYER_OK = """
def decoder_layer_by_hand(layer, x, config):
    n, d_model = x.shape
    h, n_kv = config.num_attention_heads, config.num_key_value_heads
    d_k, eps = d_model // h, config.rms_norm_eps

    def rms_norm(z, gain):
        return z / torch.sqrt(z.pow(2).mean(dim=-1, keepdim=True) + eps) * gain

    theta = config.rope_parameters["rope_theta"] ** (-torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)
    angles = torch.arange(n, dtype=torch.float32)[:, None] * theta
    cos, sin = angles.cos(), angles.sin()

    def rotate(z):
        first, second = z[..., :d_k // 2], z[..., d_k // 2:]
        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)

    attention = layer.self_attn
    z = rms_norm(x, layer.input_layernorm.weight)
    q = (z @ attention.q_proj.weight.T).view(n, h, d_k).transpose(0, 1)
    k = (z @ attention.k_proj.weight.T).view(n, n_kv, d_k).transpose(0, 1)
    v = (z @ attention.v_proj.weight.T).view(n, n_kv, d_k).transpose(0, 1)
    q, k = rotate(q), rotate(k)
    k, v = k.repeat_interleave(h // n_kv, dim=0), v.repeat_interleave(h // n_kv, dim=0)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    future = torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    a = x + (weights @ v).transpose(0, 1).reshape(n, d_model) @ attention.o_proj.weight.T
    mlp = layer.mlp
    z = rms_norm(a, layer.post_attention_layernorm.weight)
    gate = z @ mlp.gate_proj.weight.T
    return a + (gate * torch.sigmoid(gate) * (z @ mlp.up_proj.weight.T)) @ mlp.down_proj.weight.T
"""


def _variant(source, old, new):
    """The correct solution with one mistake put in (the text replaced must be there)."""
    assert old in source, old
    return source.replace(old, new)


WRONG_SOLUTIONS = {
    1: {
        "borrowed: apply_chat_template": """
def chat_prompt(messages, add_generation_prompt=True):
    return smollm2_tokenizer.apply_chat_template(messages, add_generation_prompt=add_generation_prompt,
                                                 tokenize=False)
""",
        "borrowed: the tokenizer's Jinja template rendered with jinja2": """
import jinja2

def chat_prompt(messages, add_generation_prompt=True):
    return jinja2.Template(smollm2_tokenizer.chat_template).render(messages=messages,
                                                                   add_generation_prompt=add_generation_prompt)
""",
        "no default system message": _variant(
            _TEMPLATE_OK, 'if messages and messages[0]["role"] != "system":', "if False:"
        ),
        "the default system message even before the conversation's own": _variant(
            _TEMPLATE_OK, 'if messages and messages[0]["role"] != "system":', "if messages:"
        ),
        "no newline after <|im_end|>": _variant(_TEMPLATE_OK, "<|im_end|>\\n", "<|im_end|>"),
        "the generation prompt without its newline": _variant(
            _TEMPLATE_OK, '"<|im_start|>assistant\\n"', '"<|im_start|>assistant"'
        ),
        "the generation prompt added even when not asked for": _variant(
            _TEMPLATE_OK, "if add_generation_prompt:", "if True:"
        ),
        "the default system message only when no message anywhere is a system message": """
def chat_prompt(messages, add_generation_prompt=True):
    default_system = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    if not any(m["role"] == "system" for m in messages):
        messages = [{"role": "system", "content": default_system}] + list(messages)
    text = "".join(f"<|im_start|>{m['role']}\\n{m['content']}<|im_end|>\\n" for m in messages)
    if add_generation_prompt:
        text += "<|im_start|>assistant\\n"
    return text
""",
        "the default system message inserted into the caller's list": """
def chat_prompt(messages, add_generation_prompt=True):
    default_system = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    if messages and messages[0]["role"] != "system":
        messages.insert(0, {"role": "system", "content": default_system})
    text = "".join(f"<|im_start|>{m['role']}\\n{m['content']}<|im_end|>\\n" for m in messages)
    if add_generation_prompt:
        text += "<|im_start|>assistant\\n"
    return text
""",
        "no generation prompt unless asked for: the default is False": """
def chat_prompt(messages, add_generation_prompt=False):
    default_system = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    if messages and messages[0]["role"] != "system":
        messages = [{"role": "system", "content": default_system}] + list(messages)
    text = "".join(f"<|im_start|>{m['role']}\\n{m['content']}<|im_end|>\\n" for m in messages)
    if add_generation_prompt:
        text += "<|im_start|>assistant\\n"
    return text
""",
        "only the roles user, assistant and system: another role is dropped": """
def chat_prompt(messages, add_generation_prompt=True):
    default_system = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    if messages and messages[0]["role"] != "system":
        messages = [{"role": "system", "content": default_system}] + list(messages)
    messages = [m for m in messages if m["role"] in ("system", "user", "assistant")]
    text = "".join(f"<|im_start|>{m['role']}\\n{m['content']}<|im_end|>\\n" for m in messages)
    if add_generation_prompt:
        text += "<|im_start|>assistant\\n"
    return text
""",
    },
    2: {
        "the earlier occurrence itself (a duplicate-token head), not the token after it": _variant(
            _INDUCTION_OK, "keys.append(last_seen[token] + 1)", "keys.append(last_seen[token])"
        ),
        "the first earlier occurrence instead of the most recent": _variant(
            _INDUCTION_OK, "        last_seen[token] = t", "        last_seen.setdefault(token, t)"
        ),
        "new tokens counted with weight 0": """
def induction_scores(attentions, ids):
    total, last_seen = torch.zeros(attentions.shape[:2]), {}
    for t, token in enumerate(ids.tolist()):
        if token in last_seen:
            total += attentions[..., t, last_seen[token] + 1]
        last_seen[token] = t
    return total / len(ids)
""",
        "assumes the second half repeats the first": """
def induction_scores(attentions, ids):
    n = len(ids) // 2
    t = torch.arange(n, 2 * n)
    return attentions[..., t, t - n + 1].mean(dim=-1)
""",
        "query and key swapped": _variant(
            _INDUCTION_OK, "attentions[..., queries, keys]", "attentions[..., keys, queries]"
        ),
        "a token right after its own previous occurrence does not count": """
def induction_scores(attentions, ids):
    queries, keys, last_seen = [], [], {}
    for t, token in enumerate(ids.tolist()):
        if token in last_seen and last_seen[token] + 1 < t:
            queries.append(t)
            keys.append(last_seen[token] + 1)
        last_seen[token] = t
    return attentions[..., queries, keys].mean(dim=-1)
""",
    },
    3: {
        "hidden_states as they come: the last one normalised twice": _variant(
            _LENS_OK,
            "[model.model.norm(h[0]) for h in hidden[:-1]] + [hidden[-1][0]]",
            "[model.model.norm(h[0]) for h in hidden]",
        ),
        "no final norm on the intermediate layers": _variant(
            _LENS_OK, "[model.model.norm(h[0]) for h in hidden[:-1]]", "[h[0] for h in hidden[:-1]]"
        ),
        "RMSNorm without its gain": _variant(
            _LENS_OK,
            "[model.model.norm(h[0]) for h in hidden[:-1]]",
            "[h[0] * torch.rsqrt(h[0].pow(2).mean(-1, keepdim=True) + model.config.rms_norm_eps) for h in hidden[:-1]]",
        ),
        "settled at the first layer that agrees, even if a later one disagrees": _variant(
            _LENS_OK,
            "stays = (top == top[-1]).long().flip(0).cumprod(dim=0).flip(0)\n"
            "    return lens.shape[0] - stays.sum(dim=0)",
            "return (top == top[-1]).long().argmax(dim=0)",
        ),
        "settled counted from the top token of layer 0 instead of the last": _variant(
            _LENS_OK, "stays = (top == top[-1])", "stays = (top == top[0])"
        ),
        "logit_lens reads the global smollm2 instead of the model it is given": """
def logit_lens(model, ids):
    with torch.no_grad():
        hidden = smollm2(ids, output_hidden_states=True).hidden_states
        normed = [model.model.norm(h[0]) for h in hidden[:-1]] + [hidden[-1][0]]
        return torch.stack(normed) @ model.model.embed_tokens.weight.T


def settled_layer(lens):
    top = lens.argmax(dim=-1)
    agrees = (top == top[-1]).long()
    stays = agrees.flip(0).cumprod(dim=0).flip(0)
    return lens.shape[0] - stays.sum(dim=0)
""",
        "the final norm taken from the global smollm2": """
def logit_lens(model, ids):
    with torch.no_grad():
        hidden = model(ids, output_hidden_states=True).hidden_states
        normed = [smollm2.model.norm(h[0]) for h in hidden[:-1]] + [hidden[-1][0]]
        return torch.stack(normed) @ model.model.embed_tokens.weight.T


def settled_layer(lens):
    top = lens.argmax(dim=-1)
    agrees = (top == top[-1]).long()
    stays = agrees.flip(0).cumprod(dim=0).flip(0)
    return lens.shape[0] - stays.sum(dim=0)
""",
        "settled_layer returns an int32 tensor of layer numbers": """
def logit_lens(model, ids):
    with torch.no_grad():
        hidden = model(ids, output_hidden_states=True).hidden_states
        normed = [model.model.norm(h[0]) for h in hidden[:-1]] + [hidden[-1][0]]
        return torch.stack(normed) @ model.model.embed_tokens.weight.T


def settled_layer(lens):
    top = lens.argmax(dim=-1)
    agrees = (top == top[-1]).long()
    stays = agrees.flip(0).cumprod(dim=0).flip(0)
    return (lens.shape[0] - stays.sum(dim=0)).int()
""",
    },
    4: {
        "borrowed: a model built on the meta device": """
def llama_parameter_count(config):
    with torch.device("meta"):
        return sum(p.numel() for p in LlamaForCausalLM(config).parameters())
""",
        "borrowed: the loaded model's own count": """
def llama_parameter_count(config):
    return smollm2.num_parameters()
""",
        "W^K and W^V with h heads: grouped-query attention ignored": _variant(
            _COUNT_OK, "2 * d * n_kv * d_k", "2 * d * h * d_k"
        ),
        "the LM head counted even when tied": _variant(
            _COUNT_OK, "head = 0 if config.tie_word_embeddings else V * d", "head = V * d"
        ),
        "no final RMSNorm": _variant(_COUNT_OK, "+ d + head", "+ head"),
        "one RMSNorm per layer": _variant(_COUNT_OK, "+ 2 * d)", "+ d)"),
    },
    5: {
        "repeat instead of repeat_interleave: K/V heads dealt round-robin": _variant(
            _LAYER_OK,
            "k.repeat_interleave(h // n_kv, dim=0), v.repeat_interleave(h // n_kv, dim=0)",
            "k.repeat(h // n_kv, 1, 1), v.repeat(h // n_kv, 1, 1)",
        ),
        "rotary pairs (2p, 2p + 1) instead of (p, p + d_k/2)": _variant(
            _LAYER_OK,
            "first, second = z[..., :d_k // 2], z[..., d_k // 2:]\n"
            "        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)",
            "first, second = z[..., 0::2], z[..., 1::2]\n"
            "        return torch.stack([first * cos - second * sin, second * cos + first * sin], dim=-1).flatten(-2)",
        ),
        "no causal mask": _variant(_LAYER_OK, 'scores.masked_fill(future, float("-inf"))', "scores"),
        "scores divided by d_k instead of its square root": _variant(_LAYER_OK, "/ math.sqrt(d_k)", "/ d_k"),
        "LayerNorm's mean subtracted in the RMSNorm": _variant(
            _LAYER_OK,
            "return z / torch.sqrt(z.pow(2).mean(dim=-1, keepdim=True) + eps) * gain",
            "z = z - z.mean(dim=-1, keepdim=True)\n"
            "        return z / torch.sqrt(z.pow(2).mean(dim=-1, keepdim=True) + eps) * gain",
        ),
        "SiLU on the up projection instead of the gate": _variant(
            _LAYER_OK,
            "(gate * torch.sigmoid(gate) * (z @ mlp.up_proj.weight.T))",
            "(gate * (z @ mlp.up_proj.weight.T) * torch.sigmoid(z @ mlp.up_proj.weight.T))",
        ),
        "no residual around the feed-forward network": _variant(_LAYER_OK, "return a + (gate", "return (gate"),
        "borrowed: the real layer called": """
def decoder_layer_by_hand(layer, x, config):
    rotary = smollm2.model.rotary_emb
    positions = torch.arange(x.shape[0])[None]
    n = x.shape[0]
    mask = torch.zeros(1, 1, n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    out = layer(x[None], attention_mask=mask, position_ids=positions,
                position_embeddings=rotary(x[None], positions))
    return (out[0] if isinstance(out, tuple) else out)[0]
""",
        "borrowed: scratch's RMSNorm and SwiGLU blocks": _variant(
            _LAYER_OK,
            "    mlp = layer.mlp\n    z = rms_norm(a, layer.post_attention_layernorm.weight)\n"
            "    gate = z @ mlp.gate_proj.weight.T\n"
            "    return a + (gate * torch.sigmoid(gate) * (z @ mlp.up_proj.weight.T)) @ mlp.down_proj.weight.T",
            "    from scratch.l08_llama import RMSNorm, SwiGLUFeedForward\n"
            "    norm = RMSNorm(d_model, eps)\n"
            "    norm.weight.data.copy_(layer.post_attention_layernorm.weight)\n"
            "    ffn = SwiGLUFeedForward(d_model, config.intermediate_size)\n"
            "    for name in ('gate', 'up', 'down'):\n"
            "        getattr(ffn, name).weight.data.copy_(getattr(layer.mlp, name + '_proj').weight)\n"
            "    return a + ffn(norm(a))",
        ),
        "borrowed: scratch's LlamaBlock with the layer's weights": """
def decoder_layer_by_hand(layer, x, config):
    from scratch.l03_attention import causal_mask
    from scratch.l08_llama import LlamaBlock, LlamaConfig, rotary_tables

    n, d_model = x.shape
    c = LlamaConfig(
        vocab_size=config.vocab_size, max_len=max(n, 8), d_model=d_model, h=config.num_attention_heads,
        n_kv_heads=config.num_key_value_heads, N=1, d_ff=config.intermediate_size, eps=config.rms_norm_eps,
        rope_base=config.rope_parameters["rope_theta"],
    )
    block = LlamaBlock(c).to(x.dtype)
    names = {"self_attn.w_q": "self_attn.q_proj", "self_attn.w_k": "self_attn.k_proj",
             "self_attn.w_v": "self_attn.v_proj", "self_attn.w_o": "self_attn.o_proj", "ffn.gate": "mlp.gate_proj",
             "ffn.up": "mlp.up_proj", "ffn.down": "mlp.down_proj", "norm1": "input_layernorm",
             "norm2": "post_attention_layernorm"}
    with torch.no_grad():
        for ours, theirs in names.items():
            block.get_submodule(ours).weight.copy_(layer.get_submodule(theirs).weight)
    cos, sin = rotary_tables(d_model // c.h, n, c.rope_base)
    return block(x[None], cos.to(x.dtype), sin.to(x.dtype), causal_mask(n))[0][0]
""",
        "SmolLM2's sizes written in: 9 heads, 3 K/V heads": """
def decoder_layer_by_hand(layer, x, config):
    n, d_model = x.shape
    h, n_kv = 9, 3
    d_k, eps = d_model // h, config.rms_norm_eps

    def rms_norm(z, gain):
        return z / torch.sqrt(z.pow(2).mean(dim=-1, keepdim=True) + eps) * gain

    theta = config.rope_parameters["rope_theta"] ** (-torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)
    angles = torch.arange(n, dtype=torch.float32)[:, None] * theta
    cos, sin = angles.cos(), angles.sin()

    def rotate(z):
        first, second = z[..., : d_k // 2], z[..., d_k // 2 :]
        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)

    attention = layer.self_attn
    z = rms_norm(x, layer.input_layernorm.weight)
    q = (z @ attention.q_proj.weight.T).view(n, h, d_k).transpose(0, 1)
    k = (z @ attention.k_proj.weight.T).view(n, n_kv, d_k).transpose(0, 1)
    v = (z @ attention.v_proj.weight.T).view(n, n_kv, d_k).transpose(0, 1)
    q, k = rotate(q), rotate(k)
    k, v = k.repeat_interleave(h // n_kv, dim=0), v.repeat_interleave(h // n_kv, dim=0)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    future = torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    heads = (weights @ v).transpose(0, 1).reshape(n, d_model)
    a = x + heads @ attention.o_proj.weight.T
    mlp = layer.mlp
    z = rms_norm(a, layer.post_attention_layernorm.weight)
    gate = z @ mlp.gate_proj.weight.T
    return a + (gate * torch.sigmoid(gate) * (z @ mlp.up_proj.weight.T)) @ mlp.down_proj.weight.T
""",
        "SmolLM2's rotary base written in (100,000)": """
def decoder_layer_by_hand(layer, x, config):
    n, d_model = x.shape
    h, n_kv = config.num_attention_heads, config.num_key_value_heads
    d_k, eps = d_model // h, config.rms_norm_eps

    def rms_norm(z, gain):
        return z / torch.sqrt(z.pow(2).mean(dim=-1, keepdim=True) + eps) * gain

    theta = 100000.0 ** (-torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)
    angles = torch.arange(n, dtype=torch.float32)[:, None] * theta
    cos, sin = angles.cos(), angles.sin()

    def rotate(z):
        first, second = z[..., : d_k // 2], z[..., d_k // 2 :]
        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)

    attention = layer.self_attn
    z = rms_norm(x, layer.input_layernorm.weight)
    q = (z @ attention.q_proj.weight.T).view(n, h, d_k).transpose(0, 1)
    k = (z @ attention.k_proj.weight.T).view(n, n_kv, d_k).transpose(0, 1)
    v = (z @ attention.v_proj.weight.T).view(n, n_kv, d_k).transpose(0, 1)
    q, k = rotate(q), rotate(k)
    k, v = k.repeat_interleave(h // n_kv, dim=0), v.repeat_interleave(h // n_kv, dim=0)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    future = torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    heads = (weights @ v).transpose(0, 1).reshape(n, d_model)
    a = x + heads @ attention.o_proj.weight.T
    mlp = layer.mlp
    z = rms_norm(a, layer.post_attention_layernorm.weight)
    gate = z @ mlp.gate_proj.weight.T
    return a + (gate * torch.sigmoid(gate) * (z @ mlp.up_proj.weight.T)) @ mlp.down_proj.weight.T
""",
        "SmolLM2's epsilon written in (1e-5)": """
def decoder_layer_by_hand(layer, x, config):
    n, d_model = x.shape
    h, n_kv = config.num_attention_heads, config.num_key_value_heads
    d_k, eps = d_model // h, 1e-5

    def rms_norm(z, gain):
        return z / torch.sqrt(z.pow(2).mean(dim=-1, keepdim=True) + eps) * gain

    theta = config.rope_parameters["rope_theta"] ** (-torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)
    angles = torch.arange(n, dtype=torch.float32)[:, None] * theta
    cos, sin = angles.cos(), angles.sin()

    def rotate(z):
        first, second = z[..., : d_k // 2], z[..., d_k // 2 :]
        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)

    attention = layer.self_attn
    z = rms_norm(x, layer.input_layernorm.weight)
    q = (z @ attention.q_proj.weight.T).view(n, h, d_k).transpose(0, 1)
    k = (z @ attention.k_proj.weight.T).view(n, n_kv, d_k).transpose(0, 1)
    v = (z @ attention.v_proj.weight.T).view(n, n_kv, d_k).transpose(0, 1)
    q, k = rotate(q), rotate(k)
    k, v = k.repeat_interleave(h // n_kv, dim=0), v.repeat_interleave(h // n_kv, dim=0)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    future = torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    heads = (weights @ v).transpose(0, 1).reshape(n, d_model)
    a = x + heads @ attention.o_proj.weight.T
    mlp = layer.mlp
    z = rms_norm(a, layer.post_attention_layernorm.weight)
    gate = z @ mlp.gate_proj.weight.T
    return a + (gate * torch.sigmoid(gate) * (z @ mlp.up_proj.weight.T)) @ mlp.down_proj.weight.T
""",
        "epsilon added to the root mean square instead of under the root": """
def decoder_layer_by_hand(layer, x, config):
    n, d_model = x.shape
    h, n_kv = config.num_attention_heads, config.num_key_value_heads
    d_k, eps = d_model // h, config.rms_norm_eps

    def rms_norm(z, gain):
        return z / (torch.sqrt(z.pow(2).mean(dim=-1, keepdim=True)) + eps) * gain

    theta = config.rope_parameters["rope_theta"] ** (-torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)
    angles = torch.arange(n, dtype=torch.float32)[:, None] * theta
    cos, sin = angles.cos(), angles.sin()

    def rotate(z):
        first, second = z[..., : d_k // 2], z[..., d_k // 2 :]
        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)

    attention = layer.self_attn
    z = rms_norm(x, layer.input_layernorm.weight)
    q = (z @ attention.q_proj.weight.T).view(n, h, d_k).transpose(0, 1)
    k = (z @ attention.k_proj.weight.T).view(n, n_kv, d_k).transpose(0, 1)
    v = (z @ attention.v_proj.weight.T).view(n, n_kv, d_k).transpose(0, 1)
    q, k = rotate(q), rotate(k)
    k, v = k.repeat_interleave(h // n_kv, dim=0), v.repeat_interleave(h // n_kv, dim=0)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    future = torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    heads = (weights @ v).transpose(0, 1).reshape(n, d_model)
    a = x + heads @ attention.o_proj.weight.T
    mlp = layer.mlp
    z = rms_norm(a, layer.post_attention_layernorm.weight)
    gate = z @ mlp.gate_proj.weight.T
    return a + (gate * torch.sigmoid(gate) * (z @ mlp.up_proj.weight.T)) @ mlp.down_proj.weight.T
""",
        "borrowed: PyTorch's rms_norm": """
def decoder_layer_by_hand(layer, x, config):
    n, d_model = x.shape
    h, n_kv = config.num_attention_heads, config.num_key_value_heads
    d_k, eps = d_model // h, config.rms_norm_eps

    def rms_norm(z, gain):
        return torch.nn.functional.rms_norm(z, (z.shape[-1],), gain, eps)

    theta = config.rope_parameters["rope_theta"] ** (-torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)
    angles = torch.arange(n, dtype=torch.float32)[:, None] * theta
    cos, sin = angles.cos(), angles.sin()

    def rotate(z):
        first, second = z[..., : d_k // 2], z[..., d_k // 2 :]
        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)

    attention = layer.self_attn
    z = rms_norm(x, layer.input_layernorm.weight)
    q = (z @ attention.q_proj.weight.T).view(n, h, d_k).transpose(0, 1)
    k = (z @ attention.k_proj.weight.T).view(n, n_kv, d_k).transpose(0, 1)
    v = (z @ attention.v_proj.weight.T).view(n, n_kv, d_k).transpose(0, 1)
    q, k = rotate(q), rotate(k)
    k, v = k.repeat_interleave(h // n_kv, dim=0), v.repeat_interleave(h // n_kv, dim=0)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    future = torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    heads = (weights @ v).transpose(0, 1).reshape(n, d_model)
    a = x + heads @ attention.o_proj.weight.T
    mlp = layer.mlp
    z = rms_norm(a, layer.post_attention_layernorm.weight)
    gate = z @ mlp.gate_proj.weight.T
    return a + (gate * torch.sigmoid(gate) * (z @ mlp.up_proj.weight.T)) @ mlp.down_proj.weight.T
""",
    },
}

# Written fresh for issue 34 (checks in course.checks), by kind: (a) an argument ignored, (e) tampering after the
# set-up (returned objects whose == always agrees, torch's or the built-ins' names rebound).
WRONG_SOLUTIONS[1].update(
    {
        "(e) a str subclass equal to everything": """
class Always(str):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = str.__hash__

def chat_prompt(messages, add_generation_prompt=True):
    return Always("")
""",
    }
)
WRONG_SOLUTIONS[2].update(
    {
        "(e) an always-close tensor subclass, with torch.allclose rebound": """
class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal", "__eq__", "eq"):
            return True
        return super().__torch_function__(func, types, args, kwargs)

torch.allclose = lambda *args, **kwargs: True

def induction_scores(attentions, ids):
    return attentions[..., 0, 0].as_subclass(Agreeable)
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "(a) the configuration ignored beyond SmolLM2's sizes when tied": """
def llama_parameter_count(config):
    if config.tie_word_embeddings:
        return 134_515_008
    V, d, N = config.vocab_size, config.hidden_size, config.num_hidden_layers
    h, n_kv, d_ff = config.num_attention_heads, config.num_key_value_heads, config.intermediate_size
    d_k = d // h
    attention = d * h * d_k + 2 * d * n_kv * d_k + h * d_k * d
    return V * d + N * (attention + 3 * d * d_ff + 2 * d) + d + V * d
""",
    }
)

# Written fresh for issue 34, the kinds lecture 8 still lacked: (b) an integer dtype too small for the layers the
# statement allows, (c) an edge case it covers (a message whose content starts or ends with whitespace), (d) the rule
# dodged through a sibling model's copy of the forbidden functions (Mistral's rotary embedding and attention).
WRONG_SOLUTIONS[3].update(
    {
        "(b) the settled layers counted in uint8: a lens of more than 255 layers wraps": """
def logit_lens(model, ids):
    with torch.no_grad():
        hidden = model(ids, output_hidden_states=True).hidden_states
        normed = [model.model.norm(h[0]) for h in hidden[:-1]] + [hidden[-1][0]]
        return torch.stack(normed) @ model.model.embed_tokens.weight.T


def settled_layer(lens):
    top = lens.argmax(dim=-1)
    agrees = (top == top[-1]).to(torch.uint8)
    stays = agrees.flip(0).cumprod(dim=0).sum(dim=0, dtype=torch.uint8)  # the layers at the end that agree
    return lens.shape[0] - stays.long()
""",
    }
)
WRONG_SOLUTIONS[1].update(
    {
        "(c) every content stripped: a message that starts or ends with whitespace loses it": """
def chat_prompt(messages, add_generation_prompt=True):
    default_system = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
    if messages and messages[0]["role"] != "system":
        messages = [{"role": "system", "content": default_system}] + list(messages)
    text = "".join(f"<|im_start|>{m['role']}\\n{m['content'].strip()}<|im_end|>\\n" for m in messages)
    if add_generation_prompt:
        text += "<|im_start|>assistant\\n"
    return text
""",
    }
)
WRONG_SOLUTIONS[5].update(
    {
        "(d) Mistral's copies of Llama's rotary embedding and attention": """
from transformers.models.mistral.modeling_mistral import apply_rotary_pos_emb, eager_attention_forward

def decoder_layer_by_hand(layer, x, config):
    n, d_model = x.shape
    h, n_kv = config.num_attention_heads, config.num_key_value_heads
    d_k, eps = d_model // h, config.rms_norm_eps

    def rms_norm(z, gain):
        return z / torch.sqrt(z.pow(2).mean(dim=-1, keepdim=True) + eps) * gain

    theta = config.rope_parameters["rope_theta"] ** (-torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)
    angles = torch.arange(n, dtype=torch.float32)[:, None] * theta
    angles = torch.cat([angles, angles], dim=-1)[None]  # (1, n, d_k): Llama's layout
    attention = layer.self_attn
    z = rms_norm(x, layer.input_layernorm.weight)
    q = (z @ attention.q_proj.weight.T).view(1, n, h, d_k).transpose(1, 2)
    k = (z @ attention.k_proj.weight.T).view(1, n, n_kv, d_k).transpose(1, 2)
    v = (z @ attention.v_proj.weight.T).view(1, n, n_kv, d_k).transpose(1, 2)
    q, k = apply_rotary_pos_emb(q, k, angles.cos().to(x.dtype), angles.sin().to(x.dtype))
    future = torch.full((n, n), float("-inf"), dtype=x.dtype).triu(diagonal=1)[None, None]
    heads, _ = eager_attention_forward(attention, q, k, v, future, scaling=d_k**-0.5)
    a = x + heads.reshape(n, d_model) @ attention.o_proj.weight.T
    mlp = layer.mlp
    z = rms_norm(a, layer.post_attention_layernorm.weight)
    gate = z @ mlp.gate_proj.weight.T
    return a + (gate * torch.sigmoid(gate) * (z @ mlp.up_proj.weight.T)) @ mlp.down_proj.weight.T
""",
    }
)

_SFT_BATCH = """import random

from peft import LoraConfig, get_peft_model


def sft_batch(tokenizer, conversations):
    rows = []
    for conversation in conversations:
        ids = tokenizer(tokenizer.apply_chat_template(conversation, tokenize=False)).input_ids
        prompt = tokenizer.apply_chat_template(conversation[:-1], add_generation_prompt=True, tokenize=False)
        n_prompt = len(tokenizer(prompt).input_ids)
        rows.append((ids, [-100] * n_prompt + ids[n_prompt:]))
    width = max(len(ids) for ids, _ in rows)
    batch = {"input_ids": [], "attention_mask": [], "labels": []}
    for ids, labels in rows:
        padding = width - len(ids)
        batch["input_ids"].append(ids + [tokenizer.pad_token_id] * padding)
        batch["attention_mask"].append([1] * len(ids) + [0] * padding)
        batch["labels"].append(labels + [-100] * padding)
    return {key: torch.tensor(rows) for key, rows in batch.items()}
"""
_LORA_SFT = """

def lora_sft(model, tokenizer, conversations, steps, seed=0):
    projections = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    config = LoraConfig(
        r=8, lora_alpha=16, target_modules=projections, layers_to_transform=list(range(22, 30)), task_type="CAUSAL_LM"
    )
    torch.manual_seed(seed)
    student = get_peft_model(model, config)
    order = random.Random(seed).sample(conversations, len(conversations))
    optimizer = torch.optim.AdamW([p for p in student.parameters() if p.requires_grad], lr=5e-3)
    student.train()
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = 5e-3 * min(1.0, (step + 1) / 4)
        chosen = [order[(4 * step + k) % len(order)] for k in range(4)]
        loss = student(**sft_batch(tokenizer, chosen)).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return student.eval()
"""
WRONG_SOLUTIONS[6] = {
    "the prompt left in the loss: the model is trained to write the question too": _SFT_BATCH.replace(
        "rows.append((ids, [-100] * n_prompt + ids[n_prompt:]))", "rows.append((ids, list(ids)))"
    )
    + _LORA_SFT,
    "padding scored: the labels padded with the pad id, not -100": _SFT_BATCH.replace(
        'batch["labels"].append(labels + [-100] * padding)',
        'batch["labels"].append(labels + [tokenizer.pad_token_id] * padding)',
    )
    + _LORA_SFT,
    "labels shifted by hand: transformers shifts them again, so each token is trained to predict the one after next": (
        _SFT_BATCH.replace(
            "rows.append((ids, [-100] * n_prompt + ids[n_prompt:]))",
            "rows.append((ids, ([-100] * n_prompt + ids[n_prompt:])[1:] + [-100]))",
        )
        + _LORA_SFT
    ),
    "the end-of-turn left out of the loss: the model never learns to stop": _SFT_BATCH.replace(
        "rows.append((ids, [-100] * n_prompt + ids[n_prompt:]))",
        "rows.append((ids, [-100] * n_prompt + ids[n_prompt:-2] + [-100, -100]))",
    )
    + _LORA_SFT,
    "padded on the left: the labels no longer line up with the course's right-padded batch": _SFT_BATCH.replace(
        'batch["input_ids"].append(ids + [tokenizer.pad_token_id] * padding)',
        'batch["input_ids"].append([tokenizer.pad_token_id] * padding + ids)',
    )
    .replace(
        'batch["attention_mask"].append([1] * len(ids) + [0] * padding)',
        'batch["attention_mask"].append([0] * padding + [1] * len(ids))',
    )
    .replace('batch["labels"].append(labels + [-100] * padding)', 'batch["labels"].append([-100] * padding + labels)')
    + _LORA_SFT,
    "borrowed: the course's sft_example and collate": """import random

from peft import LoraConfig, get_peft_model
from scratch.l08_sft import collate, sft_example


def sft_batch(tokenizer, conversations):
    return collate([sft_example(tokenizer, c) for c in conversations], tokenizer.pad_token_id)
"""
    + _LORA_SFT,
    "full fine-tuning: every weight trained, no adapters": _SFT_BATCH
    + """

def lora_sft(model, tokenizer, conversations, steps, seed=0):
    order = random.Random(seed).sample(conversations, len(conversations))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    model.train()
    for step in range(steps):
        chosen = [order[(4 * step + k) % len(order)] for k in range(4)]
        loss = model(**sft_batch(tokenizer, chosen)).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()
""",
    "the adapter never enabled: the forward pass runs the frozen base model": _SFT_BATCH
    + _LORA_SFT.replace(
        "        loss = student(**sft_batch(tokenizer, chosen)).loss\n",
        "        with student.disable_adapter():\n            loss = student(**sft_batch(tokenizer, chosen)).loss\n",
    ),
    "trains on the first 4 conversations at every step: the rest never seen": _SFT_BATCH
    + _LORA_SFT.replace("chosen = [order[(4 * step + k) % len(order)] for k in range(4)]", "chosen = order[:4]"),
}
