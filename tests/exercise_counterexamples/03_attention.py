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
        "hostile: redefines forbid and torch.allclose as no-ops, then borrows torch.softmax": """
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
""",
        "the row's mean subtracted instead of its maximum: far-apart scores overflow": """
def softmax(scores):
    exp = (scores - scores.mean(dim=-1, keepdim=True)).exp()
    return exp / exp.sum(dim=-1, keepdim=True)
""",
        "only positive maxima subtracted: rows of very negative scores underflow to 0/0": """
def softmax(scores):
    exp = (scores - scores.max(dim=-1, keepdim=True).values.clamp(min=0)).exp()
    return exp / exp.sum(dim=-1, keepdim=True)
""",
        "borrowed: logsumexp does the maximum trick": """
def softmax(scores):
    return (scores - scores.logsumexp(dim=-1, keepdim=True)).exp()
""",
        "written for 2-D scores: max over dim 1": """
def softmax(scores):
    exp = (scores - scores.max(dim=1, keepdim=True).values).exp()
    return exp / exp.sum(dim=1, keepdim=True)
""",
        "computed in float32 whatever the dtype of the scores": """
def softmax(scores):
    scores = scores.float()
    exp = (scores - scores.max(dim=-1, keepdim=True).values).exp()
    return exp / exp.sum(dim=-1, keepdim=True)
""",
        "masked scores replaced by 0 before the softmax": """
def softmax(scores):
    scores = scores.nan_to_num(neginf=0.0)
    exp = (scores - scores.max(dim=-1, keepdim=True).values).exp()
    return exp / exp.sum(dim=-1, keepdim=True)
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
        "the window clipped to n - 1: window >= n loses the first key": """
def sliding_window_mask(n, window):
    if window < 1:
        raise ValueError("window must be at least 1")
    window = min(window, n - 1) if n > 1 else window
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    return (j <= i) & (i - j < window)
""",
        "an empty list for n = 1": """
def sliding_window_mask(n, window):
    if window < 1:
        raise ValueError("window must be at least 1")
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    mask = (j <= i) & (i - j < window)
    return mask if n > 1 else torch.zeros(0, 0, dtype=torch.bool)
""",
        "raises a TypeError for a bad window": """
def sliding_window_mask(n, window):
    if window < 1:
        raise TypeError("window must be at least 1")
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    return (j <= i) & (i - j < window)
""",
    },
    3: {
        "pads assumed on the right, as in an encoder batch": """
def left_padded_causal_attention(Q, K, V, lengths):
    n = Q.shape[-2]
    position = torch.arange(n)
    query, key = position[None, :, None], position[None, None, :]
    allowed = (key < lengths[:, None, None]) & (key <= query)
    scores = (Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(~allowed, -math.inf)
    is_pad = query >= lengths[:, None, None]
    weights = torch.softmax(scores.masked_fill(is_pad, 0.0), dim=-1).masked_fill(is_pad, 0.0)
    return weights @ V, weights
""",
        "pad rows left as the softmax makes them: nan": """
def left_padded_causal_attention(Q, K, V, lengths):
    n = Q.shape[-2]
    position = torch.arange(n)
    first_real = (n - lengths)[:, None, None]
    query, key = position[None, :, None], position[None, None, :]
    allowed = (key >= first_real) & (key <= query)
    scores = (Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(~allowed, -math.inf)
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
""",
        "pad queries attend to themselves instead of to nothing": """
def left_padded_causal_attention(Q, K, V, lengths):
    n = Q.shape[-2]
    position = torch.arange(n)
    first_real = (n - lengths)[:, None, None]
    query, key = position[None, :, None], position[None, None, :]
    allowed = ((key >= first_real) & (key <= query)) | (key == query)
    scores = (Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(~allowed, -math.inf)
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights
""",
        "only the causal mask: real queries also attend to the pads in front": """
def left_padded_causal_attention(Q, K, V, lengths):
    n = Q.shape[-2]
    position = torch.arange(n)
    first_real = (n - lengths)[:, None, None]
    query, key = position[None, :, None], position[None, None, :]
    scores = (Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(key > query, -math.inf)
    weights = torch.softmax(scores, dim=-1).masked_fill(query < first_real, 0.0)
    return weights @ V, weights
""",
        "the first sequence's length used for the whole batch": """
def left_padded_causal_attention(Q, K, V, lengths):
    n = Q.shape[-2]
    position = torch.arange(n)
    first_real = n - int(lengths[0])
    query, key = position[:, None], position[None, :]
    allowed = (key >= first_real) & (key <= query)
    scores = (Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(~allowed, -math.inf)
    is_pad = query < first_real
    weights = torch.softmax(scores.masked_fill(is_pad, 0.0), dim=-1).masked_fill(is_pad, 0.0)
    return weights @ V, weights
""",
        "pad weights zeroed after the softmax without renormalising the row": """
def left_padded_causal_attention(Q, K, V, lengths):
    n = Q.shape[-2]
    position = torch.arange(n)
    first_real = (n - lengths)[:, None, None]
    query, key = position[None, :, None], position[None, None, :]
    scores = (Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(key > query, -math.inf)
    weights = torch.softmax(scores, dim=-1) * (key >= first_real) * (query >= first_real)
    return weights @ V, weights
""",
        "borrowed: PyTorch's fused attention through torch.ops.aten": """
def left_padded_causal_attention(Q, K, V, lengths):
    n = Q.shape[-2]
    position = torch.arange(n)
    first_real = (n - lengths)[:, None, None]
    query, key = position[None, :, None], position[None, None, :]
    allowed = ((key >= first_real) & (key <= query)) | (query < first_real)
    output = torch.ops.aten.scaled_dot_product_attention(Q, K, V, allowed)
    weights = torch.softmax((Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(~allowed, -math.inf), -1)
    is_pad = query < first_real
    return output.masked_fill(is_pad, 0.0), weights.masked_fill(is_pad, 0.0)
""",
    },
    4: {
        "the variance of dropout without the rescaling: p (1 - p) sum w^2 v^2": """
def dropout_output_variance(weights, V, p):
    if not 0 <= p < 1:
        raise ValueError("p must be in [0, 1)")
    return p * (1 - p) * (weights**2 @ V**2)
""",
        "the square of the sum instead of the sum of squares": """
def dropout_output_variance(weights, V, p):
    if not 0 <= p < 1:
        raise ValueError("p must be in [0, 1)")
    return p / (1 - p) * (weights @ V) ** 2
""",
        "(1 - p) / p instead of p / (1 - p)": """
def dropout_output_variance(weights, V, p):
    if not 0 <= p < 1:
        raise ValueError("p must be in [0, 1)")
    return (1 - p) / max(p, 1e-12) * (weights**2 @ V**2)
""",
        "the variance of one weight, not of the output: p / (1 - p) w^2 summed over the row": """
def dropout_output_variance(weights, V, p):
    if not 0 <= p < 1:
        raise ValueError("p must be in [0, 1)")
    return p / (1 - p) * (weights**2).sum(-1, keepdim=True).expand(*weights.shape[:-1], V.shape[-1])
""",
        "estimated from 20,000 sampled masks": """
def dropout_output_variance(weights, V, p):
    if not 0 <= p < 1:
        raise ValueError("p must be in [0, 1)")
    keep = (torch.rand((20_000,) + weights.shape, dtype=weights.dtype) >= p).to(weights.dtype)
    return ((weights * keep / (1 - p)) @ V).var(dim=0)
""",
        "written for 2-D weights and V only (einsum over n, m, d)": """
def dropout_output_variance(weights, V, p):
    if not 0 <= p < 1:
        raise ValueError("p must be in [0, 1)")
    return p / (1 - p) * torch.einsum("nm,md->nd", weights**2, V**2)
""",
        "p = 1 accepted": """
def dropout_output_variance(weights, V, p):
    if p < 0:
        raise ValueError("p must be at least 0")
    return p / max(1 - p, 1e-12) * (weights**2 @ V**2)
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
        "hostile: redefines LargestTensor to measure nothing, then builds the whole score matrix": """
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
""",
        "the running maximum starts at 0: a query whose scores are all very negative gets 0/0": """
def streaming_attention(Q, blocks):
    running_max = torch.zeros(Q.shape[0], 1, dtype=Q.dtype)
    running_sum = out = 0
    for K_block, V_block in blocks:
        s = Q @ K_block.T / math.sqrt(Q.shape[-1])
        new_max = torch.maximum(running_max, s.max(dim=-1, keepdim=True).values)
        p = torch.exp(s - new_max)
        rescale = torch.exp(running_max - new_max)
        running_sum = running_sum * rescale + p.sum(dim=-1, keepdim=True)
        out = out * rescale + p @ V_block
        running_max = new_max
    return out / running_sum
""",
        "clones every block to keep it, then two passes over the clones": """
def streaming_attention(Q, blocks):
    kept = [(K_block.clone(), V_block.clone()) for K_block, V_block in blocks]
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
        "keeps each block's scores in a list (detached copies), then a second pass": """
def streaming_attention(Q, blocks):
    scores, values = [], []
    for K_block, V_block in blocks:
        scores.append(Q @ K_block.T / math.sqrt(Q.shape[-1]))
        values.append(V_block.detach())
    row_max = torch.stack([s.max(dim=-1).values for s in scores]).max(dim=0).values[:, None]
    total = sum(torch.exp(s - row_max).sum(dim=-1, keepdim=True) for s in scores)
    out = sum(torch.exp(s - row_max) @ v for s, v in zip(scores, values))
    return out / total
""",
        "copies the blocks into numpy and attends there": """
import numpy as np

def streaming_attention(Q, blocks):
    pairs = [(K_block.numpy().copy(), V_block.numpy().copy()) for K_block, V_block in blocks]
    K, V = np.concatenate([k for k, _ in pairs]), np.concatenate([v for _, v in pairs])
    s = Q.numpy() @ K.T / math.sqrt(Q.shape[-1])
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return torch.from_numpy((w / w.sum(axis=-1, keepdims=True)) @ V)
""",
    },
}

# Written fresh for issue 34, by kind: (b) a dtype the statement covers mishandled, (c) an edge case or a size the
# statement covers (here: too slow for a row of 40 keys), (e) tampering after the set-up (returned objects whose ==
# always agrees, torch's or the built-ins' functions rebound).
WRONG_SOLUTIONS[1].update(
    {
        "(b) computed in float32 whatever the dtype: float64 scores beyond float32's range overflow": """
def softmax(scores):
    shifted = scores.float() - scores.float().max(dim=-1, keepdim=True).values
    exp = shifted.exp()
    return (exp / exp.sum(dim=-1, keepdim=True)).to(scores.dtype)
""",
        "(e) an always-equal tensor subclass, with torch.allclose and torch.isfinite rebound": """
class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal", "isfinite", "__eq__", "eq"):
            return True
        return super().__torch_function__(func, types, args, kwargs)

torch.allclose = lambda *args, **kwargs: True
torch.isfinite = lambda *args, **kwargs: torch.ones((), dtype=torch.bool)

def softmax(scores):
    return torch.zeros_like(scores).as_subclass(Agreeable)
""",
    }
)
WRONG_SOLUTIONS[3].update(
    {
        "(b) scores and weights always in float64: float32 inputs come back as float64": """
def left_padded_causal_attention(Q, K, V, lengths):
    Q, K, V = Q.double(), K.double(), V.double()
    n = Q.shape[-2]
    position = torch.arange(n)
    first_real = (n - lengths)[:, None, None]
    query, key = position[None, :, None], position[None, None, :]
    allowed = (key >= first_real) & (key <= query)
    scores = (Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(~allowed, -math.inf)
    is_pad = query < first_real
    weights = torch.softmax(scores.masked_fill(is_pad, 0.0), dim=-1).masked_fill(is_pad, 0.0)
    return weights @ V, weights
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "(c) every keep/drop mask enumerated: right, but 2^40 masks for a row of 40 keys": """
import itertools

def dropout_output_variance(weights, V, p):
    if not 0 <= p < 1:
        raise ValueError(p)
    m = weights.shape[-1]
    mean = second = torch.zeros_like(weights @ V)
    for keep in itertools.product([0.0, 1.0], repeat=m):
        mask = torch.tensor(keep, dtype=weights.dtype)
        probability = (1 - p) ** mask.sum().item() * p ** (m - mask.sum().item())
        out = (weights * mask / (1 - p)) @ V
        mean, second = mean + probability * out, second + probability * out**2
    return second - mean**2
""",
        "(e) builtins.all and torch.allclose rebound, an always-equal tensor returned": """
import builtins

class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal", "__eq__", "eq"):
            return True
        return super().__torch_function__(func, types, args, kwargs)

builtins.all = lambda iterable: True
torch.allclose = lambda *args, **kwargs: True

def dropout_output_variance(weights, V, p):
    if not 0 <= p < 1:
        raise ValueError(p)
    return torch.zeros_like(weights @ V).as_subclass(Agreeable)
""",
    }
)

# Written fresh for issue 34, the kinds lecture 3 still lacked: (a) an argument ignored, (d) the rule dodged through
# another PyTorch function that does the forbidden trick (a cumulative logsumexp's last entry is the logsumexp).
WRONG_SOLUTIONS[1].update(
    {
        "(d) the normaliser from logcumsumexp's last entry": """
def softmax(scores):
    wide = scores.double()
    return (wide - wide.logcumsumexp(dim=-1)[..., -1:]).exp().to(scores.dtype)
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "(a) p ignored in the rescaling: survivors divided by 0.9, the lecture's p = 0.1": """
def dropout_output_variance(weights, V, p):
    if not 0 <= p < 1:
        raise ValueError(f"p must be in [0, 1), got {p}")
    scaled = weights / 0.9
    return (p * (1 - p)) * (scaled**2) @ (V**2)
""",
    }
)
