"""Known-wrong and borrowed solutions to lecture 3's exercises: each must fail its check with a hint
(tests/test_exercises.py). Each value is the source of a whole solution cell."""

WRONG_SOLUTIONS = {
    1: {
        "borrowed: torch.softmax": """
def softmax(scores):
    return torch.softmax(scores, dim=-1)
""",
        "borrowed: the method, through log_softmax": """
def softmax(scores):
    return scores.log_softmax(dim=-1).exp()
""",
        "no maximum subtracted: exp(1000) overflows": """
def softmax(scores):
    exp = scores.exp()
    return exp / exp.sum(dim=-1, keepdim=True)
""",
        "one global maximum instead of each row's: the -1000 row underflows to 0/0": """
def softmax(scores):
    exp = (scores - scores.max()).exp()
    return exp / exp.sum(dim=-1, keepdim=True)
""",
        "normalised over the wrong dimension": """
def softmax(scores):
    exp = (scores - scores.max(dim=0, keepdim=True).values).exp()
    return exp / exp.sum(dim=0, keepdim=True)
""",
    },
    2: {
        "one key too many: i - j <= window": """
def sliding_window_mask(n, window):
    if window < 1:
        raise ValueError("window must be at least 1")
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    return (j <= i) & (i - j <= window)
""",
        "a band on both sides: sees the future": """
def sliding_window_mask(n, window):
    if window < 1:
        raise ValueError("window must be at least 1")
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    return (i - j).abs() < window
""",
        "a float mask, not a boolean one": """
def sliding_window_mask(n, window):
    if window < 1:
        raise ValueError("window must be at least 1")
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    return ((j <= i) & (i - j < window)).float()
""",
        "window 0 accepted: a row with nothing to attend to": """
def sliding_window_mask(n, window):
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    return (j <= i) & (i - j < window)
""",
        "the causal mask only: the window ignored": """
def sliding_window_mask(n, window):
    if window < 1:
        raise ValueError("window must be at least 1")
    return torch.ones(n, n, dtype=torch.bool).tril()
""",
    },
    3: {
        "offset the wrong way round: i - j": """
def relative_attention(Q, K, V, bias, max_distance):
    n = Q.shape[-2]
    offset = torch.arange(n)[:, None] - torch.arange(n)[None, :]
    table = bias[offset.clamp(-max_distance, max_distance) + max_distance]
    weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]) + table, dim=-1)
    return weights @ V, weights
""",
        "no clipping: offsets beyond max_distance index outside the table": """
def relative_attention(Q, K, V, bias, max_distance):
    n = Q.shape[-2]
    offset = torch.arange(n)[None, :] - torch.arange(n)[:, None]
    table = bias[offset + max_distance]
    weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]) + table, dim=-1)
    return weights @ V, weights
""",
        "the bias scaled by 1/sqrt(d_k) together with the dot products": """
def relative_attention(Q, K, V, bias, max_distance):
    n = Q.shape[-2]
    offset = torch.arange(n)[None, :] - torch.arange(n)[:, None]
    table = bias[offset.clamp(-max_distance, max_distance) + max_distance]
    weights = torch.softmax((Q @ K.transpose(-2, -1) + table) / math.sqrt(Q.shape[-1]), dim=-1)
    return weights @ V, weights
""",
        "the bias added after the softmax": """
def relative_attention(Q, K, V, bias, max_distance):
    n = Q.shape[-2]
    offset = torch.arange(n)[None, :] - torch.arange(n)[:, None]
    table = bias[offset.clamp(-max_distance, max_distance) + max_distance]
    weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1) + table
    return weights @ V, weights
""",
        "plain attention: no bias at all": """
def relative_attention(Q, K, V, bias, max_distance):
    weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    return weights @ V, weights
""",
    },
    4: {
        "borrowed: torch's dropout": """
def attention_dropout(weights, p):
    if not 0 <= p < 1:
        raise ValueError("p must be in [0, 1)")
    return F.dropout(weights, p=p, training=True)
""",
        "survivors not rescaled": """
def attention_dropout(weights, p):
    if not 0 <= p < 1:
        raise ValueError("p must be in [0, 1)")
    return weights * (torch.rand(weights.shape) >= p)
""",
        "survivors multiplied by 1 - p instead of divided": """
def attention_dropout(weights, p):
    if not 0 <= p < 1:
        raise ValueError("p must be in [0, 1)")
    return weights * (torch.rand(weights.shape) >= p) * (1 - p)
""",
        "keeps with probability p instead of dropping with it": """
def attention_dropout(weights, p):
    if not 0 <= p < 1:
        raise ValueError("p must be in [0, 1)")
    return weights * (torch.rand(weights.shape) < p) / (1 - p)
""",
        "reseeded inside: the same mask on every call": """
def attention_dropout(weights, p):
    if not 0 <= p < 1:
        raise ValueError("p must be in [0, 1)")
    generator = torch.Generator().manual_seed(0)
    return weights * (torch.rand(weights.shape, generator=generator) >= p) / (1 - p)
""",
        "one mask per row of keys, shared by every query": """
def attention_dropout(weights, p):
    if not 0 <= p < 1:
        raise ValueError("p must be in [0, 1)")
    keep = torch.rand(weights.shape[:-2] + (1, weights.shape[-1])) >= p
    return weights * keep / (1 - p)
""",
        "in place: the caller's weights are changed": """
def attention_dropout(weights, p):
    if not 0 <= p < 1:
        raise ValueError("p must be in [0, 1)")
    weights.mul_((torch.rand(weights.shape) >= p) / (1 - p))
    return weights
""",
        "p = 1 and negative p accepted": """
def attention_dropout(weights, p):
    keep = torch.rand(weights.shape) >= p
    return weights * keep / max(1 - p, 1e-12)
""",
    },
    5: {
        "not blockwise: concatenates every block, then a full softmax": """
def streaming_attention(Q, blocks):
    pairs = list(blocks)
    K = torch.cat([k for k, _ in pairs])
    V = torch.cat([v for _, v in pairs])
    return torch.softmax(Q @ K.T / math.sqrt(Q.shape[-1]), dim=-1) @ V
""",
        "keeps every block, then two passes over them (max first, then the sums)": """
def streaming_attention(Q, blocks):
    kept = list(blocks)
    scale = math.sqrt(Q.shape[-1])
    row_max = None
    for K_block, _ in kept:
        block_max = (Q @ K_block.T / scale).max(dim=-1, keepdim=True).values
        row_max = block_max if row_max is None else torch.maximum(row_max, block_max)
    total, out = 0, 0
    for K_block, V_block in kept:
        p = torch.exp(Q @ K_block.T / scale - row_max)
        total = total + p.sum(dim=-1, keepdim=True)
        out = out + p @ V_block
    return out / total
""",
        "the scores of all blocks kept and concatenated": """
def streaming_attention(Q, blocks):
    scores, values = [], []
    for K_block, V_block in blocks:
        scores.append(Q @ K_block.T / math.sqrt(Q.shape[-1]))
        values.append(V_block @ torch.eye(V_block.shape[-1], dtype=V_block.dtype))
    return torch.softmax(torch.cat(scores, dim=-1), dim=-1) @ torch.cat(values)
""",
        "the running output is not rescaled when the maximum grows": """
def streaming_attention(Q, blocks):
    running_max = running_sum = out = None
    for K_block, V_block in blocks:
        s = Q @ K_block.T / math.sqrt(Q.shape[-1])
        block_max = s.max(dim=-1, keepdim=True).values
        new_max = block_max if running_max is None else torch.maximum(running_max, block_max)
        p = torch.exp(s - new_max)
        if running_max is None:
            running_sum, out = p.sum(dim=-1, keepdim=True), p @ V_block
        else:
            running_sum = running_sum * torch.exp(running_max - new_max) + p.sum(dim=-1, keepdim=True)
            out = out + p @ V_block
        running_max = new_max
    return out / running_sum
""",
        "rescaled the wrong way: exp(new max - old max)": """
def streaming_attention(Q, blocks):
    running_max = running_sum = out = None
    for K_block, V_block in blocks:
        s = Q @ K_block.T / math.sqrt(Q.shape[-1])
        block_max = s.max(dim=-1, keepdim=True).values
        new_max = block_max if running_max is None else torch.maximum(running_max, block_max)
        p = torch.exp(s - new_max)
        if running_max is None:
            running_sum, out = p.sum(dim=-1, keepdim=True), p @ V_block
        else:
            rescale = torch.exp(new_max - running_max)
            running_sum = running_sum * rescale + p.sum(dim=-1, keepdim=True)
            out = out * rescale + p @ V_block
        running_max = new_max
    return out / running_sum
""",
        "no running maximum: exp of the raw scores overflows": """
def streaming_attention(Q, blocks):
    running_sum = out = 0
    for K_block, V_block in blocks:
        p = torch.exp(Q @ K_block.T / math.sqrt(Q.shape[-1]))
        running_sum = running_sum + p.sum(dim=-1, keepdim=True)
        out = out + p @ V_block
    return out / running_sum
""",
        "a softmax per block, then the block outputs averaged": """
def streaming_attention(Q, blocks):
    outputs = 0
    count = 0
    for K_block, V_block in blocks:
        outputs = outputs + torch.softmax(Q @ K_block.T / math.sqrt(Q.shape[-1]), dim=-1) @ V_block
        count += 1
    return outputs / count
""",
        "unscaled scores": """
def streaming_attention(Q, blocks):
    running_max = running_sum = out = None
    for K_block, V_block in blocks:
        s = Q @ K_block.T
        block_max = s.max(dim=-1, keepdim=True).values
        new_max = block_max if running_max is None else torch.maximum(running_max, block_max)
        p = torch.exp(s - new_max)
        if running_max is None:
            running_sum, out = p.sum(dim=-1, keepdim=True), p @ V_block
        else:
            rescale = torch.exp(running_max - new_max)
            running_sum = running_sum * rescale + p.sum(dim=-1, keepdim=True)
            out = out * rescale + p @ V_block
        running_max = new_max
    return out / running_sum
""",
    },
}

# Hostile solutions: each redefines a name the check relies on (forbid, torch.allclose, a measuring helper) as a
# no-op, then takes the shortcut. They pass a check that looks those names up in the notebook; the checks import
# them, so they fail.
WRONG_SOLUTIONS[1]["hostile: redefines forbid and torch.allclose as no-ops, then borrows torch.softmax"] = """
import contextlib
import types

import torch as real_torch

@contextlib.contextmanager
def forbid(*names, hint):
    yield

torch = types.SimpleNamespace(**{name: getattr(real_torch, name) for name in dir(real_torch) if name[:2] != "__"})
torch.allclose = lambda *args, **kwargs: True

def softmax(scores):
    return real_torch.softmax(scores, dim=-1)
"""
WRONG_SOLUTIONS[5]["hostile: redefines LargestTensor to measure nothing, then builds the whole score matrix"] = """
class LargestTensor:
    largest = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

def streaming_attention(Q, blocks):
    K = V = None
    for K_block, V_block in blocks:  # joined as they come, so no earlier block is held
        K = K_block if K is None else torch.cat([K, K_block])
        V = V_block if V is None else torch.cat([V, V_block])
        del K_block, V_block
    return torch.softmax(Q @ K.T / math.sqrt(Q.shape[-1]), dim=-1) @ V
"""
