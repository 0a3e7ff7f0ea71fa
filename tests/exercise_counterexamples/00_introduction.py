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
    },
}
