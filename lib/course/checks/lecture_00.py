"""Checks of lecture 0's exercises (exercises/00_introduction.ipynb); see course.checks."""

import copy

from transformers import LlamaConfig, LlamaForCausalLM

from course.checks.support import (
    BUILTINS,
    F,
    call,
    close,
    integer,
    math,
    number,
    plain,
    tensor,
    tools,
    torch,
    untampered,
    values,
)

__builtins__ = BUILTINS  # the built-ins as they were when the set-up cell imported this module

forbid, CountOps, LargestTensor = tools.forbid, tools.CountOps, tools.LargestTensor
deepcopy = copy.deepcopy
_no_grad = torch.no_grad


def _llama(vocab_size, hidden_size, layers, heads, scale, seed):
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=64,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
        initializer_range=scale,
    )
    return LlamaForCausalLM(config).eval()


# The checks' own models: the set-up's architecture, other weights (a solution that scores with the set-up's tiny_lm
# instead of the model it is given gets other numbers) and two vocabularies. Each check works on fresh copies.
_MODELS = {
    "a tiny Llama (V = 100)": _llama(100, 32, 2, 4, 0.2, 11),
    "a second Llama (V = 37)": _llama(37, 16, 1, 2, 0.3, 12),
}


def _models():
    return [(name, deepcopy(model)) for name, model in _MODELS.items()]


class _Passes:
    """Counts the passes through a model, at its first decoder layer and at its embedding (the larger count)."""

    def __init__(self, model):
        self.at_layer, self.at_embedding = [], []
        self.hooks = [
            model.model.layers[0].register_forward_pre_hook(lambda module, args: self.at_layer.append(1)),
            model.get_input_embeddings().register_forward_hook(lambda module, args, out: self.at_embedding.append(1)),
        ]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for hook in self.hooks:
            hook.remove()

    @property
    def count(self):
        return max(len(self.at_layer), len(self.at_embedding))


def perplexity(student_perplexity):
    """Exercise 1."""
    untampered()
    torch.manual_seed(1)
    cases = []
    for n, V, dtype, index in [
        (8, 100, torch.float32, torch.int64),
        (1, 2, torch.float32, torch.int64),
        (3, 7, torch.float64, torch.int64),
        (50, 1000, torch.float32, torch.int64),
        (6, 11, torch.float64, torch.int32),
    ]:
        logits, targets = torch.randn(n, V, dtype=dtype) * 3, torch.randint(0, V, (n,), dtype=index)
        targets[0] = V - 1  # the last token of the vocabulary too
        cases.append((logits, targets, f"logits ({n}, {V}) {dtype}, targets {index}"))
    steep = torch.zeros(4, 10)
    steep[:, 0] = 120.0  # token 0 gets almost everything: p(token 3) = e^-120, below 1e-45
    cases.append((steep, torch.tensor([0, 0, 0, 3]), "a correct token with probability e^-120"))
    masked = torch.randn(3, 6)
    masked[:, 4:] = -math.inf  # tokens the model rules out: probability 0, never the correct one
    cases.append((masked, torch.tensor([0, 3, 1]), "logits with -inf for two tokens never chosen"))
    cases.append((torch.zeros(4, 50), torch.tensor([3, 1, 4, 1]), "uniform logits over V = 50"))
    cases.append((cases[0][0] + 100.0, cases[0][1], "the first logits plus 100"))
    expected = [F.cross_entropy(logits.double(), targets.long()).exp().item() for logits, targets, _ in cases]
    with forbid(
        "torch.nn.functional.cross_entropy",
        "torch.nn.functional.nll_loss",
        "torch.nn.CrossEntropyLoss.forward",
        "torch.nn.NLLLoss.forward",
        hint="compute -log p(correct token) from log_softmax yourself",
    ):
        ours = [
            number(call(student_perplexity, logits.clone(), targets.clone(), what=f"perplexity({what})"), what)
            for logits, targets, what in cases
        ]
    for (_, _, what), got, want in zip(cases, ours, expected):
        if what.startswith("uniform"):
            assert abs(got - 50) < 1e-4, (
                f"hint: {what} must give perplexity 50, got {got:.4f}: perplexity is the exponential of the MEAN "
                "cross-entropy (lecture 0, section 3)"
            )
        assert math.isfinite(got), (
            f"hint: {what}: got {got}: a probability that rounds to 0 has log -inf; stay in log space "
            "(the exercise's statement says why)"
        )
        assert abs(got - want) < 1e-4 * want, (
            f"hint: {what}: expected {want:.4f}, got {got:.4f}: each position's row of logits is a distribution over "
            "the vocabulary; read the probability of that position's own target, and average -log p over the n "
            "positions"
        )
    print(
        f"Exercise 1: OK (uniform logits over 50 tokens: {ours[-2]:.1f}; confident random logits over 100 tokens: "
        f"{ours[0]:.0f}, far worse than uniform guessing: exercise 3 says why)"
    )


def bptt_gradient(student_bptt_gradient):
    """Exercise 2."""
    untampered()

    def autograd_reference(W, n):
        h0 = torch.randn(W.shape[0], dtype=W.dtype, requires_grad=True)
        h = h0
        for _ in range(n):
            h = W @ h
        h.sum().backward()
        return h0.grad

    torch.manual_seed(2)
    cases = []
    for d, n, dtype in [(6, 5, torch.float64), (6, 0, torch.float64), (1, 7, torch.float32), (10, 3, torch.float32)]:
        W = torch.randn(d, d, dtype=dtype) / d**0.5  # not symmetric: W and W.T differ
        cases.append((W, n, autograd_reference(W, n)))
    Q_orth = torch.linalg.qr(torch.randn(6, 6, dtype=torch.float64))[0]
    with (
        forbid(
            "torch.Tensor.backward",
            "torch.autograd.backward",
            "torch.autograd.grad",
            "torch.autograd.variable.Variable._execution_engine",
            hint="apply the chain rule yourself: one multiplication per step",
        ),
        torch.inference_mode(),
    ):
        ours = [
            call(student_bptt_gradient, W.clone(), n, what=f"bptt_gradient(W {tuple(W.shape)} {W.dtype}, {n})")
            for W, n, _ in cases
        ]
        norms = {}
        for radius in (0.9, 1.1):
            got = call(student_bptt_gradient, Q_orth * radius, 60, what="bptt_gradient(an orthogonal W times r, 60)")
            norms[radius] = tensor(got, "bptt_gradient", shape=(6,), dtype=torch.float64).norm().item()
    for (W, n, expected), got in zip(cases, ours):
        d = W.shape[0]
        tensor(got, f"bptt_gradient(W {tuple(W.shape)}, {n}): the gradient has the shape of h_0", shape=(d,))
        assert got.dtype == W.dtype, f"hint: return the gradient in W's dtype ({W.dtype}), got {got.dtype}"
        if n == 0:
            assert close(got, torch.ones(d, dtype=W.dtype), rtol=0, atol=0), (
                "hint: after 0 steps the gradient of sum(h_0) with respect to h_0 is all ones"
            )
        assert close(got, expected, rtol=1e-5, atol=1e-6), (
            f"hint: d = {d}, n = {n}: the gradient at h_0 differs from autograd's: going back one step, the chain "
            "rule multiplies by the Jacobian of h_t with respect to h_(t-1), transposed; is yours transposed, and "
            "applied n times? (lecture 0, section 1)"
        )
    for radius, norm in norms.items():
        assert abs(norm - radius**60 * 6**0.5) < 1e-6 * norm, (
            "hint: an orthogonal W times r scales the gradient by r per step"
        )
    print(f"Exercise 2: OK (60 steps: |grad| = {norms[0.9]:.4f} vs {norms[1.1]:.1f})")


def continuation_log_prob(student_continuation_log_prob):
    """Exercise 3."""
    untampered()

    def reference(model, prompt, continuation):  # transformers' own loss, which shifts the labels
        ids = torch.cat([prompt, continuation], dim=1)
        labels = ids.clone()
        labels[:, : prompt.shape[1]] = -100  # -100 = no loss at that position
        with _no_grad():
            return -model(ids, labels=labels).loss.item() * continuation.shape[1]

    def scored(name, model, prompt, continuation):
        what = f"continuation_log_prob({name}, prompt {tuple(prompt.shape)}, continuation {tuple(continuation.shape)})"
        with (
            _Passes(model) as passes,
            forbid(
                "torch.nn.functional.cross_entropy",
                "torch.nn.functional.nll_loss",
                hint="read log p(c_j) from log_softmax of the logits one position before c_j yourself",
            ),
        ):
            result = call(student_continuation_log_prob, model, prompt.clone(), continuation.clone(), what=what)
        return number(result, what), passes.count

    torch.manual_seed(3)
    (tiny_name, tiny), (other_name, other) = _models()
    prompt = torch.tensor([[1, 17, 42, 7, 99]])
    cases = [
        (tiny_name, tiny, prompt, torch.tensor([[5, 33, 80]])),
        (tiny_name, tiny, prompt, torch.tensor([[5]])),
        (tiny_name, tiny, torch.tensor([[1]]), torch.randint(0, 100, (1, 9))),
        (other_name, other, torch.tensor([[1, 30, 4]]), torch.tensor([[36, 0, 12, 7]])),
        (other_name, other, torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8]]), torch.tensor([[20]])),
    ]
    expected = [reference(model, before, after) for _, model, before, after in cases]
    with _no_grad():
        first = torch.log_softmax(tiny(prompt).logits[0, -1], dim=-1)
    results = []
    for (name, model, before, after), want in zip(cases, expected):
        got, passes = scored(name, model, before, after)
        results.append(got)
        assert passes, f"hint: {name} was never called: score with the model passed in, not a global one"
        assert passes == 1, (
            f"hint: {passes} passes through the model for a continuation of {after.shape[1]} tokens: one forward pass "
            "over the prompt and the continuation together scores every token (lecture 0, section 3: teacher forcing)"
        )
        assert abs(got - want) < 1e-4, (
            f"hint: {name}, prompt of {before.shape[1]} and continuation of {after.shape[1]} tokens: expected "
            f"{want:.4f}, got {got:.4f}: which position's logits predict token t? Use the model you are given, "
            "normalise over the vocabulary, and combine the tokens' log-probabilities as probabilities multiply"
        )
    one_token = [scored(tiny_name, tiny, prompt, torch.tensor([[v]]))[0] for v in range(100)]
    assert abs(one_token[5] - first[5].item()) < 1e-4, (
        "hint: for one token it is log p(token | prompt), read from the prompt's last position"
    )
    assert abs(sum(math.exp(lp) for lp in one_token) - 1) < 1e-4, (
        "hint: the V one-token continuations' probabilities sum to 1"
    )
    uniform = 3 * math.log(1 / 100)
    mean_one_token = sum(one_token) / len(one_token)
    print(
        f"Exercise 3: OK, log p = {results[0]:.2f} (uniform guessing: {uniform:.2f}); averaged over all 100 next "
        f"tokens: {mean_one_token:.2f} vs uniform {math.log(1 / 100):.2f}"
    )


def best_two_tokens(student_best_two_tokens):
    """Exercise 4."""
    untampered()

    def all_pairs(model, prompt):  # the (V, V) table of log p(a | prompt) + log p(b | prompt, a)
        with _no_grad():
            first = torch.log_softmax(model(prompt).logits[0, -1], dim=-1)
            V = first.shape[0]
            extended = torch.cat([prompt.repeat(V, 1), torch.arange(V)[:, None]], dim=1)
            return first[:, None] + torch.log_softmax(model(extended).logits[:, -1], dim=-1)

    def greedy_pair(model, prompt):
        with _no_grad():
            a = model(prompt).logits[0, -1].argmax().item()
            b = model(torch.cat([prompt, torch.tensor([[a]])], dim=1)).logits[0, -1].argmax().item()
        return a, b

    (tiny_name, tiny), (other_name, other) = _models()
    cases = [
        (tiny_name, tiny, torch.tensor([[1, 65]])),  # greedy loses by 1.4 nats here, and by 1.0 after [1, 22] below
        (tiny_name, tiny, torch.tensor([[1, 17, 42, 7, 99]])),
        (other_name, other, torch.tensor([[1]])),
        (other_name, other, torch.tensor([[1, 22]])),
        (other_name, other, torch.tensor([[1, 30, 4, 4]])),
    ]
    references = [(all_pairs(model, prompt), greedy_pair(model, prompt)) for _, model, prompt in cases]
    beaten = []
    for (name, model, prompt), (table, (greedy_a, greedy_b)) in zip(cases, references):
        V = table.shape[0]
        what = f"best_two_tokens({name}, prompt {values(prompt[0])})"
        with (
            _Passes(model) as passes,
            forbid("transformers.GenerationMixin.generate", hint="score all V * V pairs yourself"),
        ):
            result = call(student_best_two_tokens, model, prompt.clone(), what=what)
        result = plain(result, what)
        assert type(result) is tuple and len(result) == 2 and type(result[0]) is tuple and len(result[0]) == 2, (
            f"hint: {what}: return ((a, b), log_p)"
        )
        (a, b), log_p = result
        a, b, log_p = integer(a, what + ", token a"), integer(b, what + ", token b"), number(log_p, what + ", log_p")
        assert passes.count, f"hint: {name} was never called: score with the model passed in, not a global one"
        assert passes.count <= 2, (
            f"hint: {passes.count} passes through the model; put the V extended prompts into one batch of shape "
            "(V, n + 1)"
        )
        assert 0 <= a < V and 0 <= b < V, (
            f"hint: {what}: token ids below V = {V}, the vocabulary of the model you are given, got {(a, b)}"
        )
        assert abs(log_p - table[a, b].item()) < 1e-4, (
            f"hint: {what}: the log_p you return is not that of the pair {(a, b)} you return: it is the sum of the "
            "two tokens' log-probabilities, each read where the model predicts it"
        )
        greedy = table[greedy_a, greedy_b].item()
        assert log_p > table.max().item() - 1e-4, (
            f"hint: {what}: a pair with log p = {table.max().item():.3f} beats yours ({log_p:.3f}): the maximum is "
            "over all V * V pairs, not only those after the most likely first token (lecture 0, section 3)"
        )
        if log_p > greedy + 0.5:
            beaten.append(
                f"after {values(prompt[0])} the best pair {(a, b)} has log p = {log_p:.2f}, the greedy pair "
                f"{(greedy_a, greedy_b)} {greedy:.2f}"
            )
    print(f"Exercise 4: OK: {beaten[0]}")


def linear_recurrence(student_linear_recurrence):
    """Exercise 5."""
    untampered()

    def sequential_states(a, b):
        h, states = torch.zeros_like(b[0]), []
        for t in range(len(a)):
            h = a[t] * h + b[t]
            states.append(h)
        return torch.stack(states)

    torch.manual_seed(5)
    cases = []
    for n, d, dtype in [
        (1, 4, torch.float64),
        (2, 1, torch.float64),
        (3, 3, torch.float64),
        (7, 4, torch.float64),
        (8, 2, torch.float32),
        (300, 2, torch.float64),
        (4096, 4, torch.float64),
        (5, 3, torch.float64),
    ]:
        a = torch.rand(n, d, dtype=dtype) * 0.5 + 0.5  # weights in [0.5, 1): long products underflow
        b = torch.randn(n, d, dtype=dtype)
        if n == 5:
            a[2] = 0.0  # a weight of 0 forgets everything before: states after it do not depend on earlier ones
            a[3] = -1.5  # and weights may be negative or above 1
        with CountOps() as loop_ops:
            cases.append((a, b, sequential_states(a, b)))
    shortcuts = (
        "torch.cumsum",
        "torch.cumprod",
        "torch.Tensor.cumsum",
        "torch.Tensor.cumprod",
        "torch.logcumsumexp",
        "torch.Tensor.logcumsumexp",
        "torch.Tensor.tolist",
        "torch.Tensor.numpy",
        "torch.Tensor.item",
        "torch.Tensor.__array__",
    )
    for a, b, expected in cases:
        n, d = a.shape
        what = f"linear_recurrence on a and b of shape ({n}, {d}), {a.dtype}"
        with forbid(
            *shortcuts, hint="combine the (A, B) pairs of positions t and t - span with whole-tensor operations"
        ):
            with CountOps() as ops, LargestTensor() as memory:
                ours = call(student_linear_recurrence, a.clone(), b.clone(), what=what)
        tensor(ours, what + ": return all n states", shape=(n, d))
        assert ours.dtype == a.dtype, f"hint: return the states in the dtype of a ({a.dtype}), got {ours.dtype}"
        assert close(ours[:1], b[:1]), "hint: h_1 = b_1 (h_0 = 0)"
        assert close(ours, expected, rtol=1e-5, atol=1e-10 if a.dtype == torch.float64 else 1e-5), (
            f"hint: wrong states for n = {n}, d = {d}: write h_t in terms of h_(t - 2 span) by substituting the "
            "statement for h_(t - span) into the one for h_t, and make sure each round combines the pairs as they "
            "were before that round (not half-updated ones)"
        )
        assert memory.largest <= 4 * n * d + 64, (
            f"hint: n = {n}, d = {d}: your function created a tensor of {memory.largest:,} numbers; the scan needs "
            f"only (n, d) tensors ({n * d:,} numbers): no n x n matrix"
        )
        if n == 4096:
            assert ops.calls <= 40 * 12, (
                f"hint: {ops.calls} PyTorch operations for n = 4096: no loop over positions, about log2(n) = 12 rounds"
            )
            scan_ops = ops.calls
    print(f"Exercise 5: OK: n = 4096 in {scan_ops} PyTorch operations (the sequential loop: {loop_ops.calls:,})")
