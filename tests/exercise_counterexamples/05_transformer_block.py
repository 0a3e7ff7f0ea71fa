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
from scratch.l08_llama import RMSNorm

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
from scratch.l08_llama import SwiGLUFeedForward

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
        "no residual: a block's output at i keeps only what its mask lets i read": """
def receptive_field(masks):
    n = masks[0].shape[-1]
    keep = torch.eye(n, dtype=torch.bool)
    reach = keep
    for mask in masks:
        reach = (mask.double() @ reach.double()) > 0
    return reach
""",
        "blocks composed top first (reach @ step)": """
def receptive_field(masks):
    n = masks[0].shape[-1]
    keep = torch.eye(n, dtype=torch.bool)
    reach = keep
    for mask in masks:
        reach = (reach.double() @ (mask | keep).double()) > 0
    return reach
""",
        "the union of the masks: what one block lets i read, whichever block": """
def receptive_field(masks):
    n = masks[0].shape[-1]
    keep = torch.eye(n, dtype=torch.bool)
    reach = keep
    for mask in masks:
        reach = reach | mask
    return reach
""",
        "only the last block counted": """
def receptive_field(masks):
    n = masks[0].shape[-1]
    keep = torch.eye(n, dtype=torch.bool)
    reach = keep
    reach = masks[-1] | keep
    return reach
""",
        "rows and columns swapped: [j, i]": """
def receptive_field(masks):
    n = masks[0].shape[-1]
    keep = torch.eye(n, dtype=torch.bool)
    reach = keep
    for mask in masks:
        reach = ((mask | keep).double() @ reach.double()) > 0
    reach = reach.transpose(-2, -1)
    return reach
""",
        "counts of paths, not a bool tensor": """
def receptive_field(masks):
    n = masks[0].shape[-1]
    keep = torch.eye(n, dtype=torch.bool)
    reach = keep
    reach = reach.double()
    for mask in masks:
        reach = (mask | keep).double() @ reach
    return reach
""",
        "the residual added once at the end, not in every block": """
def receptive_field(masks):
    n = masks[0].shape[-1]
    keep = torch.eye(n, dtype=torch.bool)
    reach = keep
    reach = reach.double()
    for mask in masks:
        reach = mask.double() @ reach
    reach = (reach > 0) | keep
    return reach
""",
        "the batch dimension dropped: masks[0] of each batched mask": """
def receptive_field(masks):
    n = masks[0].shape[-1]
    keep = torch.eye(n, dtype=torch.bool)
    reach = keep
    for mask in masks:
        mask = mask[0] if mask.dim() == 3 else mask
        reach = ((mask | keep).double() @ reach.double()) > 0
    return reach
""",
        "borrowed: real blocks and gradients": """
from scratch.l05_transformer_block import EncoderBlock

def receptive_field(masks):
    n = masks[0].shape[-1]
    batch = max([m.shape[0] for m in masks if m.dim() == 3], default=1)
    blocks = [EncoderBlock(8, 2, 16, dropout=0.0).double().eval() for _ in masks]
    inputs = torch.randn(batch, n, 8, dtype=torch.float64, requires_grad=True)
    out = inputs
    for block, mask in zip(blocks, masks):
        out = block(out, mask if mask.dim() == 2 else mask[:, None])
    depends = torch.zeros(batch, n, n, dtype=torch.bool)
    for i in range(n):
        (grad,) = torch.autograd.grad(out[:, i].sum(), inputs, retain_graph=True)
        depends[:, i] = grad.ne(0).any(dim=-1)
    return depends if any(m.dim() == 3 for m in masks) else depends[0]
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
from scratch.l10_decoding import KVCache

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


# Fresh mistakes of the kinds the stronger checks catch: eps and d_model read wrongly, other ranks, LayerNorm
# borrowed through other norms or computed beside rms_norm, hooks and new Parameters, bias=False, h from the
# set-up, and work done again on copies or with F.linear.
WRONG_SOLUTIONS[1].update(
    {
        "eps hard-coded to 1e-6 in rms_norm": """
def rms_norm(x, gamma, eps=1e-6):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * gamma


def layer_norm_from_rms(x, gamma, beta, eps=1e-5):
    return rms_norm(x - x.mean(dim=-1, keepdim=True), gamma, eps) + beta
""",
        "mean over dim 2 (right for 3-D input only)": """
def rms_norm(x, gamma, eps=1e-6):
    return x / torch.sqrt(x.pow(2).mean(dim=2, keepdim=True) + eps) * gamma


def layer_norm_from_rms(x, gamma, beta, eps=1e-5):
    return rms_norm(x - x.mean(dim=-1, keepdim=True), gamma, eps) + beta
""",
        "divides the sum of squares by the set-up's d_model": """
def rms_norm(x, gamma, eps=1e-6):
    return x / torch.sqrt(x.pow(2).sum(dim=-1, keepdim=True) / d_model + eps) * gamma


def layer_norm_from_rms(x, gamma, beta, eps=1e-5):
    return rms_norm(x - x.mean(dim=-1, keepdim=True), gamma, eps) + beta
""",
        "LayerNorm computed by hand (its own variance), rms_norm not used": """
def rms_norm(x, gamma, eps=1e-6):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma


def layer_norm_from_rms(x, gamma, beta, eps=1e-5):
    c = x - x.mean(dim=-1, keepdim=True)
    return c / torch.sqrt((c * c).mean(dim=-1, keepdim=True) + eps) * gamma + beta
""",
        "borrowed: LayerNorm through group_norm with one group": """
def rms_norm(x, gamma, eps=1e-6):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma


def layer_norm_from_rms(x, gamma, beta, eps=1e-5):
    flat = x.reshape(-1, x.shape[-1])
    return F.group_norm(flat, 1, None, None, eps).reshape(x.shape) * gamma + beta
""",
        "borrowed: LayerNorm through batch_norm on the transposed input": """
def rms_norm(x, gamma, eps=1e-6):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma


def layer_norm_from_rms(x, gamma, beta, eps=1e-5):
    flat = x.reshape(-1, x.shape[-1]).T
    return F.batch_norm(flat, None, None, training=True, eps=eps).T.reshape(x.shape) * gamma + beta
""",
        "layer_norm_from_rms passes the default eps to rms_norm": """
def rms_norm(x, gamma, eps=1e-6):
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma


def layer_norm_from_rms(x, gamma, beta, eps=1e-5):
    return rms_norm(x - x.mean(dim=-1, keepdim=True), gamma) + beta
""",
    }
)
WRONG_SOLUTIONS[2].update(
    {
        "swiglu_ffn for (batch, N, d_model) only: einsum with fixed letters": """
def swiglu_ffn(x, W_gate, W_up, W_down):
    gate = torch.einsum("bnd,df->bnf", x, W_gate)
    up = torch.einsum("bnd,df->bnf", x, W_up)
    return torch.einsum("bnf,fd->bnd", gate * torch.sigmoid(gate) * up, W_down)


def swiglu_hidden_size(d_model, d_ff, multiple_of=1):
    hidden = int(2 * d_ff / 3)
    return multiple_of * math.ceil(hidden / multiple_of)
""",
        "a table of the famous sizes, 2 d_ff / 3 rounded to the nearest otherwise": """
def swiglu_ffn(x, W_gate, W_up, W_down):
    gate = x @ W_gate
    return (gate * torch.sigmoid(gate) * (x @ W_up)) @ W_down


def swiglu_hidden_size(d_model, d_ff, multiple_of=1):
    known = {(4096, 16384, 256): 11008, (5120, 20480, 256): 13824, (576, 2304, 256): 1536}
    return known.get((d_model, d_ff, multiple_of), round(2 * d_ff / 3))
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "a forward hook multiplies each write by c (parameters untouched)": """
def scale_residual_writes_(stack):
    c = 1 / math.sqrt(2 * len(stack))
    for block in stack:
        for last in (block.self_attn.w_o, block.ffn.linear2):
            last.register_forward_hook(lambda module, args, out: out * c)
""",
        "new Parameters instead of the old ones rescaled in place": """
def scale_residual_writes_(stack):
    c = 1 / math.sqrt(2 * len(stack))
    for block in stack:
        for last in (block.self_attn.w_o, block.ffn.linear2):
            last.weight = torch.nn.Parameter(last.weight.detach() * c)
            last.bias = torch.nn.Parameter(last.bias.detach() * c)
""",
        "biases assumed present (bias=False blocks have None)": """
def scale_residual_writes_(stack):
    c = 1 / math.sqrt(2 * len(stack))
    with torch.no_grad():
        for block in stack:
            for last in (block.self_attn.w_o, block.ffn.linear2):
                last.weight.mul_(c)
                last.bias.mul_(c)
""",
        "both FFN layers scaled by c: the FFN's write shrinks by about c squared": """
def scale_residual_writes_(stack):
    c = 1 / math.sqrt(2 * len(stack))
    with torch.no_grad():
        for block in stack:
            for layer in (block.self_attn.w_o, block.ffn.linear1, block.ffn.linear2):
                layer.weight.mul_(c)
                if layer.bias is not None:
                    layer.bias.mul_(c)
""",
    }
)
WRONG_SOLUTIONS[5].update(
    {
        "h read from the set-up, not from block.self_attn.h": """
import copy as _copy

def decoder_block_step(block, x_t, memory, cache):
    batch, _, d = x_t.shape
    heads = globals()['h']
    d_k = d // heads

    def split(t):
        return t.view(batch, -1, heads, d_k).transpose(1, 2)

    def attend(attn, query, k, v):
        q = split(attn.w_q(query))
        weights = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).softmax(dim=-1)
        return attn.w_o((weights @ v).transpose(1, 2).reshape(batch, 1, d))

    if "cross" not in cache:
        cache["cross"] = split(block.cross_attn.w_k(memory)), split(block.cross_attn.w_v(memory))

    def self_attention(t):
        mode = "once"
        cache["inputs"] = torch.cat([cache["inputs"], t], dim=1) if "inputs" in cache else t
        if mode == "once":
            k, v = split(block.self_attn.w_k(t)), split(block.self_attn.w_v(t))
            if "self" in cache:
                k, v = torch.cat([cache["self"][0], k], dim=2), torch.cat([cache["self"][1], v], dim=2)
            cache["self"] = k, v
        elif mode == "flinear":
            a = block.self_attn
            k = split(F.linear(cache["inputs"], a.w_k.weight, a.w_k.bias))
            v = split(F.linear(cache["inputs"], a.w_v.weight, a.w_v.bias))
        else:
            wk, wv = _copy.deepcopy(block.self_attn.w_k), _copy.deepcopy(block.self_attn.w_v)
            k, v = split(wk(cache["inputs"])), split(wv(cache["inputs"]))
        return attend(block.self_attn, t, k, v)

    x = x_t
    if block.norm_first:
        x = x + self_attention(block.norm1(x))
        x = x + attend(block.cross_attn, block.norm2(x), *cache["cross"])
        return x + block.ffn(block.norm3(x))
    x = block.norm1(x + self_attention(x))
    x = block.norm2(x + attend(block.cross_attn, x, *cache["cross"]))
    return block.norm3(x + block.ffn(x))
""",
        "the past's keys and values recomputed every step with F.linear": """
import copy as _copy

def decoder_block_step(block, x_t, memory, cache):
    batch, _, d = x_t.shape
    heads = block.self_attn.h
    d_k = d // heads

    def split(t):
        return t.view(batch, -1, heads, d_k).transpose(1, 2)

    def attend(attn, query, k, v):
        q = split(attn.w_q(query))
        weights = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).softmax(dim=-1)
        return attn.w_o((weights @ v).transpose(1, 2).reshape(batch, 1, d))

    if "cross" not in cache:
        cache["cross"] = split(block.cross_attn.w_k(memory)), split(block.cross_attn.w_v(memory))

    def self_attention(t):
        mode = "flinear"
        cache["inputs"] = torch.cat([cache["inputs"], t], dim=1) if "inputs" in cache else t
        if mode == "once":
            k, v = split(block.self_attn.w_k(t)), split(block.self_attn.w_v(t))
            if "self" in cache:
                k, v = torch.cat([cache["self"][0], k], dim=2), torch.cat([cache["self"][1], v], dim=2)
            cache["self"] = k, v
        elif mode == "flinear":
            a = block.self_attn
            k = split(F.linear(cache["inputs"], a.w_k.weight, a.w_k.bias))
            v = split(F.linear(cache["inputs"], a.w_v.weight, a.w_v.bias))
        else:
            wk, wv = _copy.deepcopy(block.self_attn.w_k), _copy.deepcopy(block.self_attn.w_v)
            k, v = split(wk(cache["inputs"])), split(wv(cache["inputs"]))
        return attend(block.self_attn, t, k, v)

    x = x_t
    if block.norm_first:
        x = x + self_attention(block.norm1(x))
        x = x + attend(block.cross_attn, block.norm2(x), *cache["cross"])
        return x + block.ffn(block.norm3(x))
    x = block.norm1(x + self_attention(x))
    x = block.norm2(x + attend(block.cross_attn, x, *cache["cross"]))
    return block.norm3(x + block.ffn(x))
""",
        "the past's keys and values recomputed every step on copies of w_k and w_v": """
import copy as _copy

def decoder_block_step(block, x_t, memory, cache):
    batch, _, d = x_t.shape
    heads = block.self_attn.h
    d_k = d // heads

    def split(t):
        return t.view(batch, -1, heads, d_k).transpose(1, 2)

    def attend(attn, query, k, v):
        q = split(attn.w_q(query))
        weights = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).softmax(dim=-1)
        return attn.w_o((weights @ v).transpose(1, 2).reshape(batch, 1, d))

    if "cross" not in cache:
        cache["cross"] = split(block.cross_attn.w_k(memory)), split(block.cross_attn.w_v(memory))

    def self_attention(t):
        mode = "clone"
        cache["inputs"] = torch.cat([cache["inputs"], t], dim=1) if "inputs" in cache else t
        if mode == "once":
            k, v = split(block.self_attn.w_k(t)), split(block.self_attn.w_v(t))
            if "self" in cache:
                k, v = torch.cat([cache["self"][0], k], dim=2), torch.cat([cache["self"][1], v], dim=2)
            cache["self"] = k, v
        elif mode == "flinear":
            a = block.self_attn
            k = split(F.linear(cache["inputs"], a.w_k.weight, a.w_k.bias))
            v = split(F.linear(cache["inputs"], a.w_v.weight, a.w_v.bias))
        else:
            wk, wv = _copy.deepcopy(block.self_attn.w_k), _copy.deepcopy(block.self_attn.w_v)
            k, v = split(wk(cache["inputs"])), split(wv(cache["inputs"]))
        return attend(block.self_attn, t, k, v)

    x = x_t
    if block.norm_first:
        x = x + self_attention(block.norm1(x))
        x = x + attend(block.cross_attn, block.norm2(x), *cache["cross"])
        return x + block.ffn(block.norm3(x))
    x = block.norm1(x + self_attention(x))
    x = block.norm2(x + attend(block.cross_attn, x, *cache["cross"]))
    return block.norm3(x + block.ffn(x))
""",
    }
)

# Written fresh for issue 34 (checks in course.checks), by kind: (a) an argument ignored, (e) tampering after the
# set-up (returned objects whose == always agrees, torch's or math's names rebound).
WRONG_SOLUTIONS[2].update(
    {
        "(e) an int subclass that equals everything, with math.ceil rebound": """
class Always(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = int.__hash__

math.ceil = lambda x: 0

def swiglu_ffn(x, W_gate, W_up, W_down):
    gate = x @ W_gate
    return (gate * torch.sigmoid(gate) * (x @ W_up)) @ W_down


def swiglu_hidden_size(d_model, d_ff, multiple_of=1):
    return Always(d_ff)
""",
    }
)
WRONG_SOLUTIONS[3].update(
    {
        "(e) an always-equal tensor subclass, with torch.equal rebound": """
class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal", "__eq__", "eq"):
            return True
        return super().__torch_function__(func, types, args, kwargs)

torch.equal = lambda *args, **kwargs: True

def receptive_field(masks):
    return masks[-1].as_subclass(Agreeable)
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "(a) the depth ignored: one factor 1 / sqrt(2) for every stack": """
def scale_residual_writes_(stack):
    c = 1 / math.sqrt(2)
    with torch.no_grad():
        for block in stack:
            for last in (block.self_attn.w_o, block.ffn.linear2):
                last.weight.mul_(c)
                if last.bias is not None:
                    last.bias.mul_(c)
""",
    }
)

# Written fresh for issue 34, the kinds lecture 5 still lacked: (b) a dtype the statement covers mishandled, (c) an edge
# case it covers (a deep stack), (d) the rule dodged where the instrument does not look (the
# keys and values of every position computed again at each step, in numpy, where PyTorch's FLOP counter sees nothing).
WRONG_SOLUTIONS[1].update(
    {
        "(b) the mean square in float32 whatever the dtype of x": """
def rms_norm(x, gamma, eps=1e-6):
    mean_square = (x.float() ** 2).mean(dim=-1, keepdim=True)
    return x / torch.sqrt(mean_square + eps).to(x.dtype) * gamma


def layer_norm_from_rms(x, gamma, beta, eps=1e-5):
    centred = x - x.mean(dim=-1, keepdim=True)
    return rms_norm(centred, gamma, eps) + beta
""",
    }
)
WRONG_SOLUTIONS[3].update(
    {
        "(c) paths counted in int64 and compared with 0 at the end: a deep stack's counts overflow": """
def receptive_field(masks):
    n = masks[0].shape[-1]
    keep = torch.eye(n, dtype=torch.bool)
    paths = keep.long()
    for mask in masks:
        paths = (mask | keep).long() @ paths  # the number of ways from i down to j
    return paths > 0
""",
    }
)
WRONG_SOLUTIONS[5].update(
    {
        "(d) every position's keys and values projected again at each step, in numpy through DLPack": """
import numpy as np

def decoder_block_step(block, x_t, memory, cache):
    batch, _, d = x_t.shape
    heads, d_k = block.self_attn.h, d // block.self_attn.h

    def split(t):
        return t.view(batch, -1, heads, d_k).transpose(1, 2)

    def project(linear, t):  # in numpy: PyTorch does not see these multiply-adds
        out = np.from_dlpack(t.detach().contiguous()) @ np.from_dlpack(linear.weight.detach()).T
        if linear.bias is not None:
            out = out + np.from_dlpack(linear.bias.detach())
        return torch.from_numpy(np.ascontiguousarray(out))

    def attend(attn, query, keys_from):
        q = split(attn.w_q(query))
        k, v = split(project(attn.w_k, keys_from)), split(project(attn.w_v, keys_from))
        weights = (q @ k.transpose(-2, -1) / math.sqrt(d_k)).softmax(dim=-1)
        return attn.w_o((weights @ v).transpose(1, 2).reshape(batch, 1, d))

    def self_attention(t):
        cache["inputs"] = torch.cat([cache["inputs"], t], dim=1) if "inputs" in cache else t
        return attend(block.self_attn, t, cache["inputs"])

    x = x_t
    if block.norm_first:
        x = x + self_attention(block.norm1(x))
        x = x + attend(block.cross_attn, block.norm2(x), memory)
        return x + block.ffn(block.norm3(x))
    x = block.norm1(x + self_attention(x))
    x = block.norm2(x + attend(block.cross_attn, x, memory))
    return block.norm3(x + block.ffn(x))
""",
    }
)
