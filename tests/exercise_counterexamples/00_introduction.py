"""Known-wrong and borrowed solutions for lecture 0's exercises: each must fail its check with a hint."""

WRONG_SOLUTIONS = {
    1: {
        "borrowed: F.cross_entropy": """
def perplexity(logits, targets):
    return F.cross_entropy(logits, targets).exp().item()
""",
        "one over the mean probability instead of exp of the mean -log p": """
def perplexity(logits, targets):
    probs = torch.softmax(logits, dim=-1)[torch.arange(len(targets)), targets]
    return 1 / probs.mean().item()
""",
        "exp of the sum instead of the mean": """
def perplexity(logits, targets):
    log_probs = torch.log_softmax(logits, dim=-1)
    return math.exp(-log_probs[torch.arange(len(targets)), targets].sum().item())
""",
        "raw logits, not normalised": """
def perplexity(logits, targets):
    return math.exp(-logits[torch.arange(len(targets)), targets].mean().item())
""",
        "softmax over the positions (dim 0)": """
def perplexity(logits, targets):
    log_probs = torch.log_softmax(logits, dim=0)
    return math.exp(-log_probs[torch.arange(len(targets)), targets].mean().item())
""",
        "softmax then log: a correct token with probability below 1e-45 gives log 0": """
def perplexity(logits, targets):
    probs = torch.softmax(logits, dim=-1)
    return math.exp(-probs[torch.arange(len(targets)), targets].log().mean().item())
""",
        "borrowed through torch._C._nn.cross_entropy_loss": """
def perplexity(logits, targets):
    return math.exp(torch._C._nn.cross_entropy_loss(logits, targets, None, 1, -100, 0.0).item())
""",
        "borrowed through torch.ops.aten.nll_loss": """
def perplexity(logits, targets):
    return math.exp(torch.ops.aten.nll_loss(torch.log_softmax(logits, -1), targets, None, 1, -100).item())
""",
        "the sum divided by a fixed 8 positions": """
def perplexity(logits, targets):
    log_probs = torch.log_softmax(logits, dim=-1)
    return math.exp(-log_probs[torch.arange(len(targets)), targets].sum().item() / 8)
""",
        "the mean of the whole N x N matrix logits[:, targets], not of its diagonal": """
def perplexity(logits, targets):
    log_probs = torch.log_softmax(logits, dim=-1)
    return math.exp(-log_probs[:, targets].mean().item())
""",
    },
    2: {
        "borrowed: autograd": """
def bptt_gradient(W, T):
    h0 = torch.ones(W.shape[0], dtype=W.dtype, requires_grad=True)
    h = h0
    for _ in range(T):
        h = W @ h
    h.sum().backward()
    return h0.grad
""",
        "multiplies by W instead of W.T": """
def bptt_gradient(W, T):
    grad = torch.ones(W.shape[0], dtype=W.dtype)
    for _ in range(T):
        grad = W @ grad
    return grad
""",
        "one step too many": """
def bptt_gradient(W, T):
    grad = torch.ones(W.shape[0], dtype=W.dtype)
    for _ in range(T + 1):
        grad = W.T @ grad
    return grad
""",
        "forward state instead of gradient (starts from zeros)": """
def bptt_gradient(W, T):
    grad = torch.zeros(W.shape[0], dtype=W.dtype)
    for _ in range(T):
        grad = W.T @ grad
    return grad
""",
        "d fixed at 6": """
def bptt_gradient(W, T):
    grad = torch.ones(6, dtype=W.dtype)
    for _ in range(T):
        grad = W.T @ grad
    return grad
""",
        "float32 ones whatever W's dtype: crashes on float64": """
def bptt_gradient(W, T):
    grad = torch.ones(W.shape[0])
    for _ in range(T):
        grad = W.T @ grad
    return grad
""",
        "borrowed: torch.func.grad": """
def bptt_gradient(W, T):
    def total(h0):
        h = h0
        for _ in range(T):
            h = W @ h
        return h.sum()
    return torch.func.grad(total)(torch.ones(W.shape[0], dtype=W.dtype))
""",
        "borrowed: autograd's engine directly, with inference mode switched off": """
def bptt_gradient(W, T):
    with torch.inference_mode(False):
        h0 = torch.ones(W.shape[0], dtype=W.dtype, requires_grad=True)
        h = h0
        for _ in range(T):
            h = W.clone() @ h
        out = h.sum() + 0 * h0.sum()
        engine = torch.autograd.Variable._execution_engine
        return engine.run_backward((out,), (torch.ones((), dtype=W.dtype),), False, False, (h0,), False, False)[0]
""",
        "borrowed: torch.autograd.functional.vjp": """
def bptt_gradient(W, T):
    def last(h0):
        h = h0
        for _ in range(T):
            h = W @ h
        return h.sum()
    return torch.autograd.functional.vjp(last, torch.ones(W.shape[0], dtype=W.dtype))[1]
""",
    },
    3: {
        "no shift: reads the logits at the continuation's own positions": """
def continuation_log_prob(model, prompt, continuation):
    ids = torch.cat([prompt, continuation], dim=1)
    with torch.no_grad():
        log_probs = torch.log_softmax(model(ids).logits[0], dim=-1)
    n, c = prompt.shape[1], continuation.shape[1]
    return log_probs[n:n + c][torch.arange(c), continuation[0]].sum().item()
""",
        "mean instead of sum": """
def continuation_log_prob(model, prompt, continuation):
    ids = torch.cat([prompt, continuation], dim=1)
    with torch.no_grad():
        log_probs = torch.log_softmax(model(ids).logits[0], dim=-1)
    n, c = prompt.shape[1], continuation.shape[1]
    return log_probs[n - 1:n - 1 + c][torch.arange(c), continuation[0]].mean().item()
""",
        "raw logits instead of log-probabilities": """
def continuation_log_prob(model, prompt, continuation):
    ids = torch.cat([prompt, continuation], dim=1)
    with torch.no_grad():
        logits = model(ids).logits[0]
    n, c = prompt.shape[1], continuation.shape[1]
    return logits[n - 1:n - 1 + c][torch.arange(c), continuation[0]].sum().item()
""",
        "softmax over the positions": """
def continuation_log_prob(model, prompt, continuation):
    ids = torch.cat([prompt, continuation], dim=1)
    with torch.no_grad():
        log_probs = torch.log_softmax(model(ids).logits[0], dim=0)
    n, c = prompt.shape[1], continuation.shape[1]
    return log_probs[n - 1:n - 1 + c][torch.arange(c), continuation[0]].sum().item()
""",
        "borrowed: transformers' loss with labels": """
def continuation_log_prob(model, prompt, continuation):
    ids = torch.cat([prompt, continuation], dim=1)
    labels = ids.clone()
    labels[:, :prompt.shape[1]] = -100
    with torch.no_grad():
        return -model(ids, labels=labels).loss.item() * continuation.shape[1]
""",
        "scores with the global tiny_lm, not the model passed in": """
def continuation_log_prob(model, prompt, continuation):
    ids = torch.cat([prompt, continuation], dim=1)
    with torch.no_grad():
        log_probs = torch.log_softmax(tiny_lm(ids).logits[0], dim=-1)
    n, c = prompt.shape[1], continuation.shape[1]
    return log_probs[n - 1:n - 1 + c][torch.arange(c), continuation[0]].sum().item()
""",
        "one model call per continuation token": """
def continuation_log_prob(model, prompt, continuation):
    total, ids = 0.0, prompt
    for token in continuation[0]:
        with torch.no_grad():
            total += torch.log_softmax(model(ids).logits[0, -1], dim=-1)[token].item()
        ids = torch.cat([ids, token.view(1, 1)], dim=1)
    return total
""",
        "the prompt's length fixed at 5": """
def continuation_log_prob(model, prompt, continuation):
    ids = torch.cat([prompt, continuation], dim=1)
    with torch.no_grad():
        log_probs = torch.log_softmax(model(ids).logits[0], dim=-1)
    c = continuation.shape[1]
    return log_probs[4:4 + c][torch.arange(c), continuation[0]].sum().item()
""",
        "borrowed through torch._C._nn.cross_entropy_loss": """
def continuation_log_prob(model, prompt, continuation):
    ids = torch.cat([prompt, continuation], dim=1)
    n, c = prompt.shape[1], continuation.shape[1]
    with torch.no_grad():
        logits = model(ids).logits[0, n - 1:n - 1 + c]
    return -torch._C._nn.cross_entropy_loss(logits, continuation[0], None, 2, -100, 0.0).item()
""",
    },
    4: {
        "the greedy pair": """
def best_two_tokens(model, prompt):
    with torch.no_grad():
        first = torch.log_softmax(model(prompt).logits[0, -1], dim=-1)
        a = first.argmax().item()
        second = torch.log_softmax(model(torch.cat([prompt, torch.tensor([[a]])], dim=1)).logits[0, -1], dim=-1)
    b = second.argmax().item()
    return (a, b), (first[a] + second[b]).item()
""",
        "one model call per first token (V + 1 calls)": """
def best_two_tokens(model, prompt):
    with torch.no_grad():
        first = torch.log_softmax(model(prompt).logits[0, -1], dim=-1)
        V = first.shape[0]
        second = torch.stack([torch.log_softmax(model(torch.cat([prompt, torch.tensor([[v]])], dim=1)).logits[0, -1],
                                                dim=-1) for v in range(V)])
    total = first[:, None] + second
    a, b = divmod(total.argmax().item(), V)
    return (a, b), total[a, b].item()
""",
        "second token scored as if the first were not there": """
def best_two_tokens(model, prompt):
    with torch.no_grad():
        first = torch.log_softmax(model(prompt).logits[0, -1], dim=-1)
    V = first.shape[0]
    total = first[:, None] + first[None, :]
    a, b = divmod(total.argmax().item(), V)
    return (a, b), total[a, b].item()
""",
        "logits summed instead of log-probabilities": """
def best_two_tokens(model, prompt):
    with torch.no_grad():
        first = model(prompt).logits[0, -1]
        V = first.shape[0]
        extended = torch.cat([prompt.repeat(V, 1), torch.arange(V).view(V, 1)], dim=1)
        second = model(extended).logits[:, -1]
    total = first[:, None] + second
    a, b = divmod(total.argmax().item(), V)
    return (a, b), total[a, b].item()
""",
        "scores with the global tiny_lm": """
def best_two_tokens(model, prompt):
    model = tiny_lm
    with torch.no_grad():
        first = torch.log_softmax(model(prompt).logits[0, -1], dim=-1)
        V = first.shape[0]
        extended = torch.cat([prompt.repeat(V, 1), torch.arange(V).view(V, 1)], dim=1)
        second = torch.log_softmax(model(extended).logits[:, -1], dim=-1)
    total = first[:, None] + second
    a, b = divmod(total.argmax().item(), V)
    return (a, b), total[a, b].item()
""",
        "V read from the set-up's config": """
def best_two_tokens(model, prompt):
    V = config.vocab_size
    with torch.no_grad():
        first = torch.log_softmax(model(prompt).logits[0, -1], dim=-1)
        extended = torch.cat([prompt.repeat(V, 1), torch.arange(V).view(V, 1)], dim=1)
        second = torch.log_softmax(model(extended).logits[:, -1], dim=-1)
    total = first[:, None] + second
    a, b = divmod(total.argmax().item(), V)
    return (a, b), total[a, b].item()
""",
        "V + 1 calls through model.forward (no hooks fire)": """
def best_two_tokens(model, prompt):
    with torch.no_grad():
        first = torch.log_softmax(model.forward(prompt).logits[0, -1], dim=-1)
        V = first.shape[0]
        rows = [model.forward(torch.cat([prompt, torch.tensor([[v]])], dim=1)).logits[0, -1] for v in range(V)]
        second = torch.log_softmax(torch.stack(rows), dim=-1)
    total = first[:, None] + second
    a, b = divmod(total.argmax().item(), V)
    return (a, b), total[a, b].item()
""",
        "V + 1 calls through the inner model and the head": """
def best_two_tokens(model, prompt):
    def logits(ids):
        return model.lm_head(model.model(ids).last_hidden_state)
    with torch.no_grad():
        first = torch.log_softmax(logits(prompt)[0, -1], dim=-1)
        V = first.shape[0]
        rows = [logits(torch.cat([prompt, torch.tensor([[v]])], dim=1))[0, -1] for v in range(V)]
        second = torch.log_softmax(torch.stack(rows), dim=-1)
    total = first[:, None] + second
    a, b = divmod(total.argmax().item(), V)
    return (a, b), total[a, b].item()
""",
    },
    5: {
        "the sequential loop": """
def linear_recurrence(a, b):
    h, states = torch.zeros_like(b[0]), []
    for t in range(len(a)):
        h = a[t] * h + b[t]
        states.append(h)
    return torch.stack(states)
""",
        "closed form with cumprod": """
def linear_recurrence(a, b):
    P = torch.cumprod(a, dim=0)
    return P * torch.cumsum(b / P, dim=0)
""",
        "updates A before B (B then uses the new A)": """
def linear_recurrence(a, b):
    A, B = a.clone(), b.clone()
    span = 1
    while span < len(a):
        A = torch.cat([A[:span], A[span:] * A[:-span]])
        B = torch.cat([B[:span], A[span:] * B[:-span] + B[span:]])
        span *= 2
    return B
""",
        "roll wraps the last positions around to the front": """
def linear_recurrence(a, b):
    A, B = a.clone(), b.clone()
    span = 1
    while span < len(a):
        B = A * torch.roll(B, span, dims=0) + B
        A = A * torch.roll(A, span, dims=0)
        span *= 2
    return B
""",
        "python loop over a list copy": """
def linear_recurrence(a, b):
    a_list, b_list = a.tolist(), b.tolist()
    h, states = [0.0] * len(b_list[0]), []
    for a_t, b_t in zip(a_list, b_list):
        h = [x * y + z for x, y, z in zip(a_t, h, b_t)]
        states.append(h)
    return torch.tensor(states, dtype=b.dtype)
""",
        "the N x N matrix of products: no scan, quadratic memory": """
def linear_recurrence(a, b):
    n = len(a)
    S = torch.tril(torch.ones(n, n, dtype=a.dtype)) @ a.log()
    future = ~torch.ones(n, n, dtype=torch.bool).tril()[:, :, None]
    diff = (S[:, None, :] - S[None, :, :]).masked_fill(future, -math.inf)
    return (diff.exp() * b[None, :, :]).sum(dim=1)
""",
        "cumsum through torch.ops.aten, in log space": """
def linear_recurrence(a, b):
    log_P = torch.ops.aten.cumsum(a.log(), 0)
    weights = (log_P[:, None, :] - log_P[None, :, :])
    mask = torch.ones(len(a), len(a), dtype=torch.bool).tril()[:, :, None]
    return (weights.masked_fill(~mask, -math.inf).exp() * b[None]).sum(dim=1)
""",
        "only for d = 4 (the shape fixed)": """
def linear_recurrence(a, b):
    A, B = a.clone().reshape(-1, 4), b.clone().reshape(-1, 4)
    span = 1
    while span < len(A):
        B = torch.cat([B[:span], A[span:] * B[:-span] + B[span:]])
        A = torch.cat([A[:span], A[span:] * A[:-span]])
        span *= 2
    return B
""",
    },
}

# Written fresh for issue 34, one or more per kind: (a) an argument ignored, (b) a dtype or shape the statement covers
# mishandled, (c) an edge case, (d) the method rule dodged by another path, (e) tampering after the set-up (returned
# objects whose == always agrees, torch's or the built-ins' functions rebound).
WRONG_SOLUTIONS[1].update(
    {
        "(b) the logits in half precision, whatever their dtype": """
def perplexity(logits, targets):
    log_probs = torch.log_softmax(logits.half(), dim=-1)
    return math.exp(-log_probs[torch.arange(len(targets)), targets].float().mean().item())
""",
        "(e) an always-equal float, with torch.allclose, math.isclose and builtins.abs rebound": """
import builtins

class Always(float):
    def __eq__(self, other):
        return True

    def __sub__(self, other):
        return Always(0.0)

    __rsub__ = __sub__

    def __abs__(self):
        return Always(0.0)

    def __lt__(self, other):
        return True

    __hash__ = float.__hash__

torch.allclose = lambda *args, **kwargs: True
math.isclose = lambda *args, **kwargs: True
builtins.abs = lambda x: 0.0

def perplexity(logits, targets):
    return Always(1.0)
""",
    }
)
WRONG_SOLUTIONS[2].update(
    {
        "(a) n ignored after the first step: two steps at most": """
def bptt_gradient(W, n):
    grad = torch.ones(W.shape[0], dtype=W.dtype)
    for _ in range(min(n, 2)):
        grad = W.T @ grad
    return grad
""",
        "(e) a tensor subclass whose comparisons always agree, with torch.allclose rebound": """
class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") in ("allclose", "equal", "__eq__", "eq"):
            return True
        return super().__torch_function__(func, types, args, kwargs)

torch.allclose = lambda *args, **kwargs: True

def bptt_gradient(W, n):
    return torch.ones(W.shape[0], dtype=W.dtype).as_subclass(Agreeable)
""",
    }
)
WRONG_SOLUTIONS[3].update(
    {
        "(d) one call of model.forward per continuation token": """
def continuation_log_prob(model, prompt, continuation):
    total = 0.0
    ids = prompt
    for token in continuation[0]:
        with torch.no_grad():
            logits = model.forward(ids).logits[0, -1]
        total += torch.log_softmax(logits, dim=-1)[token].item()
        ids = torch.cat([ids, token.view(1, 1)], dim=1)
    return total
""",
        "(e) forbid rebound in course.exercises, then transformers' loss": """
import contextlib

import course.exercises

course.exercises.forbid = lambda *names, hint: contextlib.nullcontext()

def continuation_log_prob(model, prompt, continuation):
    ids = torch.cat([prompt, continuation], dim=1)
    labels = ids.clone()
    labels[:, : prompt.shape[1]] = -100
    with torch.no_grad():
        return -model(ids, labels=labels).loss.item() * continuation.shape[1]
""",
    }
)
WRONG_SOLUTIONS[4].update(
    {
        "(e) an always-equal tuple of ints": """
class Always(tuple):
    def __eq__(self, other):
        return True

    __hash__ = tuple.__hash__

def best_two_tokens(model, prompt):
    return Always(((0, 0), 0.0))
""",
    }
)
WRONG_SOLUTIONS[5].update(
    {
        "(c) products in log space: a weight of 0 or below gives nan": """
def linear_recurrence(a, b):
    log_a = a.log()
    A, B = log_a.clone(), b.clone()
    span = 1
    while span < len(a):
        B = torch.cat([B[:span], A[span:].exp() * B[:-span] + B[span:]])
        A = torch.cat([A[:span], A[span:] + A[:-span]])
        span *= 2
    return B
""",
        "(b) the scan in float32 whatever the dtype of a": """
def linear_recurrence(a, b):
    A, B = a.float(), b.float()
    span = 1
    while span < len(a):
        B = torch.cat([B[:span], A[span:] * B[:-span] + B[span:]])
        A = torch.cat([A[:span], A[span:] * A[:-span]])
        span *= 2
    return B
""",
    }
)
