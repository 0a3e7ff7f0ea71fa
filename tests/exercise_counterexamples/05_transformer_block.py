"""Wrong and borrowed solutions to the exercises of notebooks/05_transformer_block.ipynb; each must fail its check."""

_LN_FROM_RMS = """

def layer_norm_from_rms(x, gamma, beta, eps=1e-5):
    return rms_norm(x - x.mean(dim=-1, keepdim=True), gamma, eps) + beta
"""

_RMS = """
def rms_norm(x, gamma, eps=1e-6):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma
"""

_HIDDEN = """

def swiglu_hidden_size(d_model, d_ff, multiple_of=1):
    hidden = int(2 * d_ff / 3)
    return multiple_of * math.ceil(hidden / multiple_of)
"""

_FFN = """
def swiglu_ffn(x, W_gate, W_up, W_down):
    gate = x @ W_gate
    return (F.silu(gate) * (x @ W_up)) @ W_down
"""

WRONG_SOLUTIONS = {
    1: {
        "subtracts the mean: that is LayerNorm, not RMSNorm": """
def rms_norm(x, gamma, eps=1e-6):
    centred = x - x.mean(dim=-1, keepdim=True)
    return centred / torch.sqrt(centred.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma
"""
        + _LN_FROM_RMS,
        "eps outside the square root": """
def rms_norm(x, gamma, eps=1e-6):
    return x / (torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True)) + eps) * gamma
"""
        + _LN_FROM_RMS,
        "the root mean square over the positions instead of the features": """
def rms_norm(x, gamma, eps=1e-6):
    return x / torch.sqrt(x.pow(2).mean(dim=-2, keepdim=True) + eps) * gamma
"""
        + _LN_FROM_RMS,
        "borrowed: scratch's RMSNorm": """
from scratch.blocks import RMSNorm

def rms_norm(x, gamma, eps=1e-6):
    norm = RMSNorm(x.shape[-1], eps).to(x.dtype)
    with torch.no_grad():
        norm.weight.copy_(gamma)
    return norm(x)
"""
        + _LN_FROM_RMS,
        "borrowed: torch's rms_norm": """
def rms_norm(x, gamma, eps=1e-6):
    return F.rms_norm(x, (x.shape[-1],), gamma, eps)
"""
        + _LN_FROM_RMS,
        "LayerNorm from RMSNorm without centring": _RMS
        + """

def layer_norm_from_rms(x, gamma, beta, eps=1e-5):
    return rms_norm(x, gamma, eps) + beta
""",
        "LayerNorm from RMSNorm forgets beta": _RMS
        + """

def layer_norm_from_rms(x, gamma, beta, eps=1e-5):
    return rms_norm(x - x.mean(dim=-1, keepdim=True), gamma, eps)
""",
        "borrowed: LayerNorm by the variance, not through rms_norm": _RMS
        + """

def layer_norm_from_rms(x, gamma, beta, eps=1e-5):
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)
""",
    },
    2: {
        "SiLU on the wrong branch (gate and up swapped)": """
def swiglu_ffn(x, W_gate, W_up, W_down):
    return (x @ W_gate * F.silu(x @ W_up)) @ W_down
"""
        + _HIDDEN,
        "SiLU after the product": """
def swiglu_ffn(x, W_gate, W_up, W_down):
    return F.silu((x @ W_gate) * (x @ W_up)) @ W_down
"""
        + _HIDDEN,
        "sigmoid instead of SiLU (a GLU, not SwiGLU)": """
def swiglu_ffn(x, W_gate, W_up, W_down):
    return (torch.sigmoid(x @ W_gate) * (x @ W_up)) @ W_down
"""
        + _HIDDEN,
        "borrowed: scratch's SwiGLUFeedForward": """
from scratch.blocks import SwiGLUFeedForward

def swiglu_ffn(x, W_gate, W_up, W_down):
    ffn = SwiGLUFeedForward(W_gate.shape[0], W_gate.shape[1]).to(x.dtype)
    with torch.no_grad():
        ffn.gate.weight.copy_(W_gate.T)
        ffn.up.weight.copy_(W_up.T)
        ffn.down.weight.copy_(W_down.T)
    return ffn(x)
"""
        + _HIDDEN,
        "rounds to the nearest multiple instead of up": _FFN
        + """

def swiglu_hidden_size(d_model, d_ff, multiple_of=1):
    return multiple_of * round(int(2 * d_ff / 3) / multiple_of)
""",
        "rounds down": _FFN
        + """

def swiglu_hidden_size(d_model, d_ff, multiple_of=1):
    return multiple_of * (int(2 * d_ff / 3) // multiple_of)
""",
        "8/3 of d_model, ignoring d_ff": _FFN
        + """

def swiglu_hidden_size(d_model, d_ff, multiple_of=1):
    return multiple_of * math.ceil(int(8 * d_model / 3) / multiple_of)
""",
        "keeps d_ff: a third more parameters": _FFN
        + """

def swiglu_hidden_size(d_model, d_ff, multiple_of=1):
    return multiple_of * math.ceil(d_ff / multiple_of)
""",
    },
    3: {
        "a threshold: misses a leak of 2e-9": """
def future_leaks(f, x):
    n = x.shape[1]
    base = f(x).detach()
    leaks = torch.zeros(n, n, dtype=torch.bool)
    for j in range(n):
        nudged = x.clone()
        nudged[:, j] += torch.randn_like(x[:, j])
        change = (f(nudged).detach() - base)[0].abs().amax(dim=-1)
        leaks[:j, j] = change[:j] > 1e-6
    return leaks
""",
        "tests only the next position": """
def future_leaks(f, x):
    n = x.shape[1]
    base = f(x).detach()
    leaks = torch.zeros(n, n, dtype=torch.bool)
    for j in range(1, n):
        nudged = x.clone()
        nudged[:, j] += torch.randn_like(x[:, j])
        leaks[j - 1, j] = bool((f(nudged).detach() - base)[0, j - 1].ne(0).any())
    return leaks
""",
        "reports every dependence, the past included": """
def future_leaks(f, x):
    n = x.shape[1]
    base = f(x).detach()
    leaks = torch.zeros(n, n, dtype=torch.bool)
    for j in range(n):
        nudged = x.clone()
        nudged[:, j] += torch.randn_like(x[:, j])
        leaks[:, j] = (f(nudged).detach() - base)[0].ne(0).any(dim=-1)
    return leaks
""",
        "rows and columns swapped: leaks[j, i]": """
def future_leaks(f, x):
    n = x.shape[1]
    base = f(x).detach()
    leaks = torch.zeros(n, n, dtype=torch.bool)
    for j in range(n):
        nudged = x.clone()
        nudged[:, j] += torch.randn_like(x[:, j])
        changed = (f(nudged).detach() - base)[0].ne(0).any(dim=-1)
        leaks[j, :j] = changed[:j]
    return leaks
""",
        "nudges in place and never undoes it: the past looks like the future": """
def future_leaks(f, x):
    n = x.shape[1]
    base = f(x).detach()
    leaks = torch.zeros(n, n, dtype=torch.bool)
    nudged = x.clone()
    for j in range(n):
        nudged[:, j] += torch.randn_like(x[:, j])
        changed = (f(nudged).detach() - base)[0].ne(0).any(dim=-1)
        leaks[:j, j] = changed[:j]
    return leaks
""",
        "nudges every position at once": """
def future_leaks(f, x):
    n = x.shape[1]
    changed = (f(x + torch.randn_like(x)) - f(x)).detach()[0].ne(0).any(dim=-1)
    return changed[:, None].expand(n, n).triu(1).clone()
""",
    },
    4: {
        "1/sqrt(L): forgets that each block writes twice": """
def scale_residual_writes_(stack):
    c = 1 / math.sqrt(len(stack))
    with torch.no_grad():
        for block in stack:
            for last in (block.self_attn.w_o, block.ffn.linear2):
                last.weight.mul_(c)
                last.bias.mul_(c)
""",
        "1/(2L): sizes of independent writes do not add linearly": """
def scale_residual_writes_(stack):
    c = 1 / (2 * len(stack))
    with torch.no_grad():
        for block in stack:
            for last in (block.self_attn.w_o, block.ffn.linear2):
                last.weight.mul_(c)
                last.bias.mul_(c)
""",
        "weights only: the biases still write at full size": """
def scale_residual_writes_(stack):
    c = 1 / math.sqrt(2 * len(stack))
    with torch.no_grad():
        for block in stack:
            for last in (block.self_attn.w_o, block.ffn.linear2):
                last.weight.mul_(c)
""",
        "scales the first layers (w_v, linear1) instead of the last": """
def scale_residual_writes_(stack):
    c = 1 / math.sqrt(2 * len(stack))
    with torch.no_grad():
        for block in stack:
            for first in (block.self_attn.w_v, block.ffn.linear1):
                first.weight.mul_(c)
                first.bias.mul_(c)
""",
        "scales the LayerNorm gains instead": """
def scale_residual_writes_(stack):
    c = 1 / math.sqrt(2 * len(stack))
    with torch.no_grad():
        for block in stack:
            block.norm1.weight.mul_(c)
            block.norm2.weight.mul_(c)
""",
        "scales the FFN only": """
def scale_residual_writes_(stack):
    c = 1 / math.sqrt(2 * len(stack))
    with torch.no_grad():
        for block in stack:
            block.ffn.linear2.weight.mul_(c)
            block.ffn.linear2.bias.mul_(c)
""",
    },
    5: {
        "no cache: each position attends only to itself": """
def decoder_block_step(block, x_t, memory, cache):
    return block(x_t, memory)
""",
        "recomputes the whole prefix at every step": """
def decoder_block_step(block, x_t, memory, cache):
    cache["inputs"] = torch.cat([cache["inputs"], x_t], dim=1) if "inputs" in cache else x_t
    n = cache["inputs"].shape[1]
    return block(cache["inputs"], memory, self_mask=causal_mask(n))[:, -1:]
""",
        "borrowed: the attention's own KVCache": """
from scratch.sampling import KVCache

def decoder_block_step(block, x_t, memory, cache):
    kv = cache.setdefault("kv", KVCache())
    def self_attention(t):
        return block.self_attn(t, kv_cache=kv)
    x = x_t
    if block.norm_first:
        x = x + self_attention(block.norm1(x))
        x = x + block.cross_attn(block.norm2(x), memory)
        return x + block.ffn(block.norm3(x))
    x = block.norm1(x + self_attention(x))
    x = block.norm2(x + block.cross_attn(x, memory))
    return block.norm3(x + block.ffn(x))
""",
    },
}

_STEP = """
def decoder_block_step(block, x_t, memory, cache):
    batch, _, d = x_t.shape
    heads, d_k = block.self_attn.h, d // block.self_attn.h

    def split(t):
        return t.view(batch, -1, heads, d_k).transpose(1, 2)

    def attend(attn, query, k, v):
        q = split(attn.w_q(query))
        weights = (q @ k.transpose(-2, -1) / math.sqrt(SCALE)).softmax(dim=-1)
        return attn.w_o((weights @ v).transpose(1, 2).reshape(batch, 1, d))

    if CROSS_ONCE:
        if not cache:
            cache["cross"] = split(block.cross_attn.w_k(memory)), split(block.cross_attn.w_v(memory))
    else:
        cache["cross"] = split(block.cross_attn.w_k(memory)), split(block.cross_attn.w_v(memory))

    def self_attention(t, raw):
        source = raw if CACHE_RAW else t
        k, v = split(block.self_attn.w_k(source)), split(block.self_attn.w_v(source))
        if "self" in cache:
            k, v = torch.cat([cache["self"][0], k], dim=2), torch.cat([cache["self"][1], v], dim=2)
        cache["self"] = k, v
        return attend(block.self_attn, t, k, v)

    x = x_t
    if block.norm_first:
        x = x + self_attention(block.norm1(x), x)
        x = x + attend(block.cross_attn, block.norm2(x), *cache["cross"])
        return x + block.ffn(block.norm3(x))
    x = block.norm1(x + self_attention(x, x))
    x = block.norm2(x + attend(block.cross_attn, x, *cache["cross"]))
    return block.norm3(x + block.ffn(x))
"""


def _step(scale="d_k", cross_once=True, cache_raw=False):
    return _STEP.replace("SCALE", scale).replace("CROSS_ONCE", str(cross_once)).replace("CACHE_RAW", str(cache_raw))


WRONG_SOLUTIONS[5].update(
    {
        "projects the memory again at every step": _step(cross_once=False),
        "pre-LN: caches keys of the raw input, not of norm1(x)": _step(cache_raw=True),
        "scales the scores by sqrt(d_model) instead of sqrt(d_k)": _step(scale="d"),
    }
)
