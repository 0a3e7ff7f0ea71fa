"""Known-wrong and borrowed solutions to lecture 4's exercises: each must fail its check with a hint
(tests/test_exercises.py). Each value is the source of a whole solution cell."""

WRONG_SOLUTIONS = {
    1: {
        "the two layouts swapped: 'blocks' viewed as (h, 3, d_k), 'heads' as (3, h, d_k)": """
def split_qkv(qkv, h, layout):
    *lead, n, width = qkv.shape
    d_k = width // (3 * h)
    if layout == "heads":
        parts = qkv.view(*lead, n, 3, h, d_k)
    else:
        parts = qkv.view(*lead, n, h, 3, d_k).transpose(-3, -2)
    q, k, v = parts.movedim(-3, 0).transpose(-3, -2)
    return q, k, v
""",
        "heads left after N: (..., N, h, d_k)": """
def split_qkv(qkv, h, layout):
    *lead, n, width = qkv.shape
    d_k = width // (3 * h)
    if layout == "blocks":
        parts = qkv.view(*lead, n, 3, h, d_k)
    else:
        parts = qkv.view(*lead, n, h, 3, d_k).transpose(-3, -2)
    q, k, v = parts.movedim(-3, 0)
    return q, k, v
""",
        "a direct view to (..., h, N, d_k): mixes positions and heads": """
def split_qkv(qkv, h, layout):
    *lead, n, width = qkv.shape
    d_k = width // (3 * h)
    q, k, v = qkv.split(width // 3, dim=-1) if layout == "blocks" else (None, None, None)
    if layout == "heads":
        parts = qkv.view(*lead, n, h, 3, d_k)
        q, k, v = parts[..., 0, :], parts[..., 1, :], parts[..., 2, :]
        return tuple(t.reshape(*lead, h, n, d_k) for t in (q, k, v))
    return tuple(t.reshape(*lead, h, n, d_k) for t in (q, k, v))
""",
        "batched (3-D) input only": """
def split_qkv(qkv, h, layout):
    batch, n, width = qkv.shape
    d_k = width // (3 * h)
    if layout == "blocks":
        parts = qkv.view(batch, n, 3, h, d_k)
    else:
        parts = qkv.view(batch, n, h, 3, d_k).transpose(2, 3)
    return tuple(parts[:, :, i].transpose(1, 2) for i in range(3))
""",
        "h read from the set-up, not the argument": """
def split_qkv(qkv, heads, layout):
    *lead, n, width = qkv.shape
    d_k = width // (3 * h)
    if layout == "blocks":
        parts = qkv.view(*lead, n, 3, h, d_k)
    else:
        parts = qkv.view(*lead, n, h, 3, d_k).transpose(-3, -2)
    q, k, v = parts.movedim(-3, 0).transpose(-3, -2)
    return q, k, v
""",
        "d_k = width / h: the factor 3 forgotten": """
def split_qkv(qkv, h, layout):
    *lead, n, width = qkv.shape
    d_k = width // h
    parts = qkv.view(*lead, n, h, d_k)
    q, k, v = parts.split(d_k // 3, dim=-1)
    return tuple(t.transpose(-3, -2) for t in (q, k, v))
""",
        "right values, but copies: stacked head by head": """
def split_qkv(qkv, h, layout):
    width = qkv.shape[-1]
    d_k = width // (3 * h)
    out = []
    for part in range(3):
        heads = []
        for j in range(h):
            start = part * h * d_k + j * d_k if layout == "blocks" else j * 3 * d_k + part * d_k
            heads.append(qkv[..., start:start + d_k])
        out.append(torch.stack(heads, dim=-3))
    return tuple(out)
""",
        "right values, but made contiguous (a copy)": """
def split_qkv(qkv, h, layout):
    *lead, n, width = qkv.shape
    d_k = width // (3 * h)
    if layout == "blocks":
        parts = qkv.view(*lead, n, 3, h, d_k)
    else:
        parts = qkv.view(*lead, n, h, 3, d_k).transpose(-3, -2)
    q, k, v = parts.movedim(-3, 0).transpose(-3, -2).contiguous()
    return q, k, v
""",
    },
    2: {
        "borrowed: builds the module and counts": """
def mha_parameter_count(d_model, h, n_kv_heads=None, bias=True):
    module = MultiHeadAttention(d_model, h, bias=bias, n_kv_heads=n_kv_heads)
    return sum(p.numel() for p in module.parameters())
""",
        "borrowed: four nn.Linear layers": """
def mha_parameter_count(d_model, h, n_kv_heads=None, bias=True):
    n_kv = h if n_kv_heads is None else n_kv_heads
    layers = [nn.Linear(d_model, d_model, bias=bias), nn.Linear(d_model, n_kv * d_model // h, bias=bias),
              nn.Linear(d_model, n_kv * d_model // h, bias=bias), nn.Linear(d_model, d_model, bias=bias)]
    return sum(p.numel() for layer in layers for p in layer.parameters())
""",
        "grouped-query attention ignored": """
def mha_parameter_count(d_model, h, n_kv_heads=None, bias=True):
    return 4 * d_model * d_model + (4 * d_model if bias else 0)
""",
        "the K/V biases left at d_model under grouped-query attention": """
def mha_parameter_count(d_model, h, n_kv_heads=None, bias=True):
    n_kv = h if n_kv_heads is None else n_kv_heads
    d_kv = n_kv * (d_model // h)
    return 2 * d_model * d_model + 2 * d_model * d_kv + (4 * d_model if bias else 0)
""",
        "parameters grow with h: one d_model x d_model matrix per head": """
def mha_parameter_count(d_model, h, n_kv_heads=None, bias=True):
    n_kv = h if n_kv_heads is None else n_kv_heads
    return (h + 2 * n_kv + 1) * d_model * d_model + ((h + 2 * n_kv + 1) * d_model if bias else 0)
""",
    },
    3: {
        "borrowed: silences each head and calls the module": """
def head_contributions(mha, x):
    parts = []
    full = mha(x)
    for j in range(mha.h):
        silenced = MultiHeadAttention(mha.d_model, mha.h).double().eval()
        silenced.load_state_dict(mha.state_dict())
        silenced.w_o.weight[:, j * mha.d_k:(j + 1) * mha.d_k] = 0
        parts.append(full - silenced(x))
    return torch.stack(parts, dim=1)
""",
        "W^O split by its (out, in) weight without the transpose": """
def head_contributions(mha, x):
    batch, n, _ = x.shape
    h, d_k = mha.h, mha.d_k
    q = mha.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = mha.w_k(x).view(batch, n, h, d_k).transpose(1, 2)
    v = mha.w_v(x).view(batch, n, h, d_k).transpose(1, 2)
    heads, _ = scaled_dot_product_attention(q, k, v)
    return heads @ mha.w_o.weight.view(h, d_k, -1)
""",
        "the bias b^O added to every head's contribution": """
def head_contributions(mha, x):
    batch, n, _ = x.shape
    h, d_k = mha.h, mha.d_k
    q = mha.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = mha.w_k(x).view(batch, n, h, d_k).transpose(1, 2)
    v = mha.w_v(x).view(batch, n, h, d_k).transpose(1, 2)
    heads, _ = scaled_dot_product_attention(q, k, v)
    return heads @ mha.w_o.weight.T.view(h, d_k, -1) + mha.w_o.bias
""",
        "the heads' outputs themselves, padded to d_model, without W^O": """
def head_contributions(mha, x):
    batch, n, _ = x.shape
    h, d_k = mha.h, mha.d_k
    q = mha.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = mha.w_k(x).view(batch, n, h, d_k).transpose(1, 2)
    v = mha.w_v(x).view(batch, n, h, d_k).transpose(1, 2)
    heads, _ = scaled_dot_product_attention(q, k, v)
    return torch.nn.functional.pad(heads, (0, mha.d_model - d_k))
""",
    },
    4: {
        "borrowed: calls the module": """
def torch_mha_by_hand(torch_mha, query, key, key_padding_mask):
    return torch_mha(query, key, key, key_padding_mask=key_padding_mask, need_weights=True)
""",
        "borrowed: torch's functional multi-head attention": """
def torch_mha_by_hand(torch_mha, query, key, key_padding_mask):
    out, weights = torch.nn.functional.multi_head_attention_forward(
        query.transpose(0, 1), key.transpose(0, 1), key.transpose(0, 1), torch_mha.embed_dim, torch_mha.num_heads,
        torch_mha.in_proj_weight, torch_mha.in_proj_bias, None, None, False, 0.0, torch_mha.out_proj.weight,
        torch_mha.out_proj.bias, training=False, key_padding_mask=key_padding_mask, need_weights=True)
    return out.transpose(0, 1), weights
""",
        "the mask read the scratch way round (True = keep)": """
def torch_mha_by_hand(torch_mha, query, key, key_padding_mask):
    (batch, n, d_model), m, h = query.shape, key.shape[1], torch_mha.num_heads
    d_k = d_model // h
    w_q, w_k, w_v = torch_mha.in_proj_weight.chunk(3)
    b_q, b_k, b_v = torch_mha.in_proj_bias.chunk(3)
    q = (query @ w_q.T + b_q).view(batch, n, h, d_k).transpose(1, 2)
    k = (key @ w_k.T + b_k).view(batch, m, h, d_k).transpose(1, 2)
    v = (key @ w_v.T + b_v).view(batch, m, h, d_k).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).masked_fill(~key_padding_mask[:, None, None, :], float("-inf"))
    weights = scores.softmax(dim=-1)
    return torch_mha.out_proj((weights @ v).transpose(1, 2).reshape(batch, n, d_model)), weights.mean(dim=1)
""",
        "scaled by sqrt(d_model) instead of sqrt(d_k)": """
def torch_mha_by_hand(torch_mha, query, key, key_padding_mask):
    (batch, n, d_model), m, h = query.shape, key.shape[1], torch_mha.num_heads
    d_k = d_model // h
    w_q, w_k, w_v = torch_mha.in_proj_weight.chunk(3)
    b_q, b_k, b_v = torch_mha.in_proj_bias.chunk(3)
    q = (query @ w_q.T + b_q).view(batch, n, h, d_k).transpose(1, 2)
    k = (key @ w_k.T + b_k).view(batch, m, h, d_k).transpose(1, 2)
    v = (key @ w_v.T + b_v).view(batch, m, h, d_k).transpose(1, 2)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_model)
    scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
    weights = scores.softmax(dim=-1)
    return torch_mha.out_proj((weights @ v).transpose(1, 2).reshape(batch, n, d_model)), weights.mean(dim=1)
""",
        "in_proj_bias forgotten": """
def torch_mha_by_hand(torch_mha, query, key, key_padding_mask):
    (batch, n, d_model), m, h = query.shape, key.shape[1], torch_mha.num_heads
    d_k = d_model // h
    w_q, w_k, w_v = torch_mha.in_proj_weight.chunk(3)
    q = (query @ w_q.T).view(batch, n, h, d_k).transpose(1, 2)
    k = (key @ w_k.T).view(batch, m, h, d_k).transpose(1, 2)
    v = (key @ w_v.T).view(batch, m, h, d_k).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
    weights = scores.softmax(dim=-1)
    return torch_mha.out_proj((weights @ v).transpose(1, 2).reshape(batch, n, d_model)), weights.mean(dim=1)
""",
        "heads concatenated without the transpose back": """
def torch_mha_by_hand(torch_mha, query, key, key_padding_mask):
    (batch, n, d_model), m, h = query.shape, key.shape[1], torch_mha.num_heads
    d_k = d_model // h
    w_q, w_k, w_v = torch_mha.in_proj_weight.chunk(3)
    b_q, b_k, b_v = torch_mha.in_proj_bias.chunk(3)
    q = (query @ w_q.T + b_q).view(batch, n, h, d_k).transpose(1, 2)
    k = (key @ w_k.T + b_k).view(batch, m, h, d_k).transpose(1, 2)
    v = (key @ w_v.T + b_v).view(batch, m, h, d_k).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
    weights = scores.softmax(dim=-1)
    return torch_mha.out_proj((weights @ v).reshape(batch, n, d_model)), weights.mean(dim=1)
""",
    },
    5: {
        "borrowed: calls the module": """
def gqa_by_hand(attn, x, mask=None):
    return attn(x, mask=mask)
""",
        "borrowed: torch's scaled_dot_product_attention with enable_gqa": """
def gqa_by_hand(attn, x, mask=None):
    batch, n, d_model = x.shape
    h, n_kv, d_k = attn.h, attn.n_kv_heads, attn.d_k
    q = attn.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = attn.w_k(x).view(batch, n, n_kv, d_k).transpose(1, 2)
    v = attn.w_v(x).view(batch, n, n_kv, d_k).transpose(1, 2)
    heads = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    return attn.w_o(heads.transpose(1, 2).reshape(batch, n, d_model))
""",
        "K/V heads tiled with repeat instead of repeat_interleave": """
def gqa_by_hand(attn, x, mask=None):
    batch, n, d_model = x.shape
    h, n_kv, d_k = attn.h, attn.n_kv_heads, attn.d_k
    q = attn.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = attn.w_k(x).view(batch, n, n_kv, d_k).transpose(1, 2).repeat(1, h // n_kv, 1, 1)
    v = attn.w_v(x).view(batch, n, n_kv, d_k).transpose(1, 2).repeat(1, h // n_kv, 1, 1)
    heads, _ = scaled_dot_product_attention(q, k, v, mask)
    return attn.w_o(heads.transpose(1, 2).reshape(batch, n, d_model))
""",
        "the mask ignored": """
def gqa_by_hand(attn, x, mask=None):
    batch, n, d_model = x.shape
    h, n_kv, d_k = attn.h, attn.n_kv_heads, attn.d_k
    q = attn.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = attn.w_k(x).view(batch, n, n_kv, d_k).transpose(1, 2).repeat_interleave(h // n_kv, dim=1)
    v = attn.w_v(x).view(batch, n, n_kv, d_k).transpose(1, 2).repeat_interleave(h // n_kv, dim=1)
    heads, _ = scaled_dot_product_attention(q, k, v)
    return attn.w_o(heads.transpose(1, 2).reshape(batch, n, d_model))
""",
        "W^O forgotten": """
def gqa_by_hand(attn, x, mask=None):
    batch, n, d_model = x.shape
    h, n_kv, d_k = attn.h, attn.n_kv_heads, attn.d_k
    q = attn.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = attn.w_k(x).view(batch, n, n_kv, d_k).transpose(1, 2).repeat_interleave(h // n_kv, dim=1)
    v = attn.w_v(x).view(batch, n, n_kv, d_k).transpose(1, 2).repeat_interleave(h // n_kv, dim=1)
    heads, _ = scaled_dot_product_attention(q, k, v, mask)
    return heads.transpose(1, 2).reshape(batch, n, d_model)
""",
    },
}


# Fresh mistakes of the kinds the stronger checks catch: arguments read from the set-up, other ranks and sizes,
# masks of every shape, bias=False modules, torch's fused kernel.
WRONG_SOLUTIONS[2].update(
    {
        "a table of the sizes it was tried on (the old check's eight)": """
def mha_parameter_count(d_model, h, n_kv_heads=None, bias=True):
    known = {
        (512, 8, None, True): 1050624,
        (512, 8, None, False): 1048576,
        (512, 1, None, True): 1050624,
        (512, 16, None, True): 1050624,
        (32, 4, None, True): 4224,
        (576, 9, 3, False): 884736,
        (64, 8, 1, True): 9360,
        (32, 4, 2, True): 3168,
    }
    return known[(d_model, h, n_kv_heads, bias)]
""",
        "d_k = d_model / h: a float count": """
def mha_parameter_count(d_model, h, n_kv_heads=None, bias=True):
    n_kv = h if n_kv_heads is None else n_kv_heads
    d_kv = n_kv * (d_model / h)
    return 2 * d_model * d_model + 2 * d_model * d_kv + ((2 * d_model + 2 * d_kv) if bias else 0)
""",
    }
)
WRONG_SOLUTIONS[3].update(
    {
        "h and d_k read from the set-up, not from the module": """
def head_contributions(mha, x):
    batch, n, _ = x.shape
    d_k = d_model // h
    q = mha.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = mha.w_k(x).view(batch, n, h, d_k).transpose(1, 2)
    v = mha.w_v(x).view(batch, n, h, d_k).transpose(1, 2)
    heads, _ = scaled_dot_product_attention(q, k, v)
    return heads @ mha.w_o.weight.T.view(h, d_k, -1)
""",
        "the bias b^O shared out evenly over the heads": """
def head_contributions(mha, x):
    batch, n, _ = x.shape
    h, d_k = mha.h, mha.d_k
    q = mha.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = mha.w_k(x).view(batch, n, h, d_k).transpose(1, 2)
    v = mha.w_v(x).view(batch, n, h, d_k).transpose(1, 2)
    heads, _ = scaled_dot_product_attention(q, k, v)
    return heads @ mha.w_o.weight.T.view(h, d_k, -1) + mha.w_o.bias / h
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "num_heads read from the set-up's h": """
def torch_mha_by_hand(torch_mha, query, key, key_padding_mask):
    (batch, n, d_model), m = query.shape, key.shape[1]
    d_k = d_model // h
    w_q, w_k, w_v = torch_mha.in_proj_weight.chunk(3)
    b_q, b_k, b_v = (0, 0, 0) if torch_mha.in_proj_bias is None else torch_mha.in_proj_bias.chunk(3)
    q = (query @ w_q.T + b_q).view(batch, n, h, d_k).transpose(1, 2)
    k = (key @ w_k.T + b_k).view(batch, m, h, d_k).transpose(1, 2)
    v = (key @ w_v.T + b_v).view(batch, m, h, d_k).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
    weights = scores.softmax(dim=-1)
    return torch_mha.out_proj((weights @ v).transpose(1, 2).reshape(batch, n, d_model)), weights.mean(dim=1)
""",
        "the mask as (batch, 1, M): lined up with the heads, not the batch": """
def torch_mha_by_hand(torch_mha, query, key, key_padding_mask):
    (batch, n, d_model), m, h = query.shape, key.shape[1], torch_mha.num_heads
    d_k = d_model // h
    w_q, w_k, w_v = torch_mha.in_proj_weight.chunk(3)
    b_q, b_k, b_v = (0, 0, 0) if torch_mha.in_proj_bias is None else torch_mha.in_proj_bias.chunk(3)
    q = (query @ w_q.T + b_q).view(batch, n, h, d_k).transpose(1, 2)
    k = (key @ w_k.T + b_k).view(batch, m, h, d_k).transpose(1, 2)
    v = (key @ w_v.T + b_v).view(batch, m, h, d_k).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).masked_fill(key_padding_mask[:, None, :], float("-inf"))
    weights = scores.softmax(dim=-1)
    return torch_mha.out_proj((weights @ v).transpose(1, 2).reshape(batch, n, d_model)), weights.mean(dim=1)
""",
        "in_proj_bias assumed present (bias=False modules have None)": """
def torch_mha_by_hand(torch_mha, query, key, key_padding_mask):
    (batch, n, d_model), m, h = query.shape, key.shape[1], torch_mha.num_heads
    d_k = d_model // h
    w_q, w_k, w_v = torch_mha.in_proj_weight.chunk(3)
    b_q, b_k, b_v = torch_mha.in_proj_bias.chunk(3)
    q = (query @ w_q.T + b_q).view(batch, n, h, d_k).transpose(1, 2)
    k = (key @ w_k.T + b_k).view(batch, m, h, d_k).transpose(1, 2)
    v = (key @ w_v.T + b_v).view(batch, m, h, d_k).transpose(1, 2)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
    weights = scores.softmax(dim=-1)
    return torch_mha.out_proj((weights @ v).transpose(1, 2).reshape(batch, n, d_model)), weights.mean(dim=1)
""",
        "borrowed: torch's fused kernel torch._native_multi_head_attention": """
def torch_mha_by_hand(torch_mha, query, key, key_padding_mask):
    return torch._native_multi_head_attention(
        query, key, key, torch_mha.embed_dim, torch_mha.num_heads, torch_mha.in_proj_weight, torch_mha.in_proj_bias,
        torch_mha.out_proj.weight, torch_mha.out_proj.bias, key_padding_mask, True, True)
""",
    }
)
WRONG_SOLUTIONS[5].update(
    {
        "h read from the set-up": """
def gqa_by_hand(attn, x, mask=None):
    batch, n, d_model = x.shape
    n_kv, d_k = attn.n_kv_heads, attn.d_k
    q = attn.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = attn.w_k(x).view(batch, n, n_kv, d_k).transpose(1, 2).repeat_interleave(h // n_kv, dim=1)
    v = attn.w_v(x).view(batch, n, n_kv, d_k).transpose(1, 2).repeat_interleave(h // n_kv, dim=1)
    heads, _ = scaled_dot_product_attention(q, k, v, mask)
    return attn.w_o(heads.transpose(1, 2).reshape(batch, n, d_model))
""",
        "always a causal mask, whatever mask is given": """
def gqa_by_hand(attn, x, mask=None):
    batch, n, d_model = x.shape
    h, n_kv, d_k = attn.h, attn.n_kv_heads, attn.d_k
    q = attn.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = attn.w_k(x).view(batch, n, n_kv, d_k).transpose(1, 2).repeat_interleave(h // n_kv, dim=1)
    v = attn.w_v(x).view(batch, n, n_kv, d_k).transpose(1, 2).repeat_interleave(h // n_kv, dim=1)
    heads, _ = scaled_dot_product_attention(q, k, v, causal_mask(n))
    return attn.w_o(heads.transpose(1, 2).reshape(batch, n, d_model))
""",
        "each K/V head repeated n_kv_heads times instead of h / n_kv_heads": """
def gqa_by_hand(attn, x, mask=None):
    batch, n, d_model = x.shape
    h, n_kv, d_k = attn.h, attn.n_kv_heads, attn.d_k
    q = attn.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = attn.w_k(x).view(batch, n, n_kv, d_k).transpose(1, 2).repeat_interleave(n_kv, dim=1)
    v = attn.w_v(x).view(batch, n, n_kv, d_k).transpose(1, 2).repeat_interleave(n_kv, dim=1)
    heads, _ = scaled_dot_product_attention(q, k, v, mask)
    return attn.w_o(heads.transpose(1, 2).reshape(batch, n, d_model))
""",
        "the mask given a head dimension whatever its shape (unsqueeze(1))": """
def gqa_by_hand(attn, x, mask=None):
    batch, n, d_model = x.shape
    h, n_kv, d_k = attn.h, attn.n_kv_heads, attn.d_k
    q = attn.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = attn.w_k(x).view(batch, n, n_kv, d_k).transpose(1, 2).repeat_interleave(h // n_kv, dim=1)
    v = attn.w_v(x).view(batch, n, n_kv, d_k).transpose(1, 2).repeat_interleave(h // n_kv, dim=1)
    heads, _ = scaled_dot_product_attention(q, k, v, None if mask is None else mask.unsqueeze(1))
    return attn.w_o(heads.transpose(1, 2).reshape(batch, n, d_model))
""",
    }
)

# Written fresh for issue 34, by kind: (b) a dtype mishandled, (d) the method rule dodged by another path, (e)
# tampering after the set-up (returned objects whose == always agrees, torch's or course.exercises' names rebound).
WRONG_SOLUTIONS[1].update(
    {
        "(b) float32 views whatever the dtype: a float64 qkv comes back converted": """
def split_qkv(qkv, h, layout):
    qkv = qkv.float()
    *lead, n, width = qkv.shape
    d_k = width // (3 * h)
    if layout == "blocks":
        parts = qkv.view(*lead, n, 3, h, d_k)
    else:
        parts = qkv.view(*lead, n, h, 3, d_k).transpose(-3, -2)
    q, k, v = parts.movedim(-3, 0).transpose(-3, -2)
    return q, k, v
""",
        "(e) a tuple subclass that always compares equal, with torch.equal rebound": """
class Always(tuple):
    def __eq__(self, other):
        return True

    __hash__ = tuple.__hash__

torch.equal = lambda *args, **kwargs: True

def split_qkv(qkv, h, layout):
    *lead, n, width = qkv.shape
    d_k = width // (3 * h)
    q = qkv[..., :d_k].unsqueeze(-3).expand(*lead, h, n, d_k)
    return Always((q, q, q))
""",
    }
)
WRONG_SOLUTIONS[2].update(
    {
        "(e) an int subclass that equals everything": """
class Always(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__

def mha_parameter_count(d_model, h, n_kv_heads=None, bias=True):
    return Always(4 * d_model * d_model)
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "(e) forbid rebound in course.exercises, then the module's own forward": """
import contextlib

import course.exercises

course.exercises.forbid = lambda *names, hint: contextlib.nullcontext()

def torch_mha_by_hand(torch_mha, query, key, key_padding_mask):
    return torch_mha(query, key, key, key_padding_mask=key_padding_mask, need_weights=True)
""",
    }
)
WRONG_SOLUTIONS[5].update(
    {
        "(d) torch's fused attention with enable_gqa, reached through torch.ops.aten": """
def gqa_by_hand(attn, x, mask=None):
    batch, n, d_model = x.shape
    h, n_kv, d_k = attn.h, attn.n_kv_heads, attn.d_k
    q = attn.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = attn.w_k(x).view(batch, n, n_kv, d_k).transpose(1, 2)
    v = attn.w_v(x).view(batch, n, n_kv, d_k).transpose(1, 2)
    heads = torch.ops.aten.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    return attn.w_o(heads.transpose(1, 2).reshape(batch, n, d_model))
""",
    }
)

# Written fresh for issue 34, the kinds lecture 4 still lacked: (a) an argument read from the set-up instead of the one
# given, (c) an edge case the statement covers (a mask of a shape that broadcasts, but not one of the three examples).
WRONG_SOLUTIONS[3].update(
    {
        "(a) the number of heads read from the set-up's h = 4, not from mha": """
def head_contributions(mha, x):
    batch, n, d_model = x.shape
    d_k = d_model // h
    q = mha.w_q(x).view(batch, n, h, d_k).transpose(1, 2)
    k = mha.w_k(x).view(batch, n, h, d_k).transpose(1, 2)
    v = mha.w_v(x).view(batch, n, h, d_k).transpose(1, 2)
    heads, _ = scaled_dot_product_attention(q, k, v)
    return heads @ mha.w_o.weight.T.view(h, d_k, -1)
""",
    }
)
WRONG_SOLUTIONS[5].update(
    {
        "(c) heads grouped under their K/V head: a key mask per head for the whole batch, (1, h, 1, N), fails": """
def gqa_by_hand(attn, x, mask=None):
    batch, n, d_model = x.shape
    h, n_kv, d_k = attn.h, attn.n_kv_heads, attn.d_k
    g = h // n_kv
    q = attn.w_q(x).view(batch, n, n_kv, g, d_k).permute(0, 2, 3, 1, 4)  # (batch, n_kv, g, N, d_k)
    k = attn.w_k(x).view(batch, n, n_kv, d_k).transpose(1, 2)[:, :, None]  # (batch, n_kv, 1, N, d_k)
    v = attn.w_v(x).view(batch, n, n_kv, d_k).transpose(1, 2)[:, :, None]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (batch, n_kv, g, N, N)
    if mask is not None:
        if mask.dim() == 4 and mask.shape[1] == h:  # one mask per query head: group it like the heads
            mask = mask.reshape(mask.shape[0], n_kv, g, n, n)
        elif mask.dim() == 4:
            mask = mask.unsqueeze(2)
        scores = scores.masked_fill(~mask, -math.inf)
    weights = torch.softmax(scores, dim=-1)
    heads = (weights @ v).permute(0, 3, 1, 2, 4).reshape(batch, n, d_model)
    return attn.w_o(heads)
""",
    }
)
