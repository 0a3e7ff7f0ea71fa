"""Checks of lecture 3's exercises (exercises/03_attention.ipynb); see course.checks."""

import itertools
import random
import weakref

from course.checks.support import (
    BUILTINS,
    call,
    close,
    equal,
    finite,
    math,
    raises,
    tensor,
    tools,
    torch,
    untampered,
    values,
)

__builtins__ = BUILTINS  # the built-ins as they were when the set-up cell imported this module

forbid, LargestTensor, LiveTensors, stream = tools.forbid, tools.LargestTensor, tools.LiveTensors, tools.stream
_weak = weakref.ref
_product, _seed, _randint, _choices = itertools.product, random.seed, random.randint, random.choices
_no_grad = torch.no_grad
SOFTMAX_SHORTCUTS = (
    "torch.softmax",
    "torch.Tensor.softmax",
    "torch.nn.functional.softmax",
    "torch.special.softmax",
    "torch._softmax",
    "torch.log_softmax",
    "torch.Tensor.log_softmax",
    "torch.nn.functional.log_softmax",
    "torch.logsumexp",
    "torch.Tensor.logsumexp",
    "torch.special.logsumexp",
    "torch.logcumsumexp",  # its last entry along a row is the row's logsumexp
    "torch.Tensor.logcumsumexp",
)


def softmax(student_softmax):
    """Exercise 1."""
    untampered()
    torch.manual_seed(1)
    inf = math.inf
    cases = {
        "random (3, 4, 5)": torch.randn(3, 4, 5),
        "one row (5,)": torch.randn(5),
        "float64 (2, 1, 3, 6)": torch.randn(2, 1, 3, 6, dtype=torch.float64),
        "bfloat16 (3, 7)": torch.randn(3, 7).to(torch.bfloat16),
        "one key per row (4, 1)": torch.randn(4, 1),
        "large and equal": torch.tensor([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -1000.0]]),
        "far apart": torch.tensor([[0.0, 2000.0, -3000.0], [-5.0, 300.0, 0.0]]),
        "all very negative": torch.tensor([[-1e4, -1e4 - 1, -1e4 - 5], [-800.0, -900.0, -1000.0]]),
        "float64 beyond float32's range": torch.tensor([[1e300, 1e300 - 1e285, -1e300]], dtype=torch.float64),
        "masked with -inf": torch.tensor([[0.5, -inf, 1.5, -inf], [-inf, -inf, 3.0, -inf]]),
    }
    expected = {name: torch.softmax(scores.double(), dim=-1) for name, scores in cases.items()}
    with forbid(*SOFTMAX_SHORTCUTS, hint="write the softmax from exp, max and sum"):
        got = {
            name: call(student_softmax, scores.clone(), what=f"softmax of {name} scores, shape {tuple(scores.shape)}")
            for name, scores in cases.items()
        }
    for name, scores in cases.items():
        ours, want = got[name], expected[name]
        tensor(ours, f"{name}: keep the shape of the scores and their dtype", shape=scores.shape, dtype=scores.dtype)
        assert finite(ours), (
            f"hint: {name}: got inf or nan: exp overflows for large scores and gives 0 / 0 for very negative ones; "
            "the statement's identity lets you shift each row's scores first (lecture 3, section 3)"
        )
        tolerance = 1e-2 if scores.dtype == torch.bfloat16 else 1e-6
        assert close(ours.double().sum(dim=-1), torch.ones(scores.shape[:-1], dtype=torch.float64), atol=tolerance), (
            f"hint: {name}: each row of weights must sum to 1: normalise over the last dimension, row by row"
        )
        assert close(ours, want, rtol=tolerance, atol=tolerance), (
            f"hint: {name}: the weights differ from the softmax's: is each row shifted by its own maximum, and "
            "normalised over the last dimension?"
        )
    print("Exercise 1: OK")


def _window_by_loops(n, window):
    return torch.tensor([[i - window < j <= i for j in range(n)] for i in range(n)], dtype=torch.bool).reshape(n, n)


def sliding_window_mask(student_sliding_window_mask):
    """Exercise 2."""
    untampered()
    _seed(2)
    cases = [(6, 3), (5, 1), (7, 7), (4, 10), (9, 4), (1, 1), (1, 5), (3, 1000)]
    cases += [(n, _randint(1, n + 3)) for n in _choices(range(2, 40), k=20)]
    for n, window in cases:
        what = f"sliding_window_mask({n}, {window})"
        got = tensor(call(student_sliding_window_mask, n, window, what=what), what, shape=(n, n))
        assert got.dtype == torch.bool, f"hint: {what}: return a boolean tensor (True = may attend), got {got.dtype}"
        want = _window_by_loops(n, window)
        if not equal(got, want):
            rows = values(got.sum(dim=-1))
            raise AssertionError(
                f"hint: {what}: row i allows {values(want.sum(dim=-1))} keys, yours {rows}: a query sees itself and "
                "the positions just before it, never the future, and never more than the window "
                "(lecture 3, section 5: masks)"
            )
    for bad in (0, -2):
        raises(
            ValueError,
            student_sliding_window_mask,
            5,
            bad,
            what=f"sliding_window_mask(5, {bad})",
            hint="a window below 1 leaves a query nothing to attend to: raise ValueError",
        )
    print("Exercise 2: OK")


def _alone(q, k, v):
    n = q.shape[0]
    scores = q.double() @ k.double().T / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v.double(), weights


def left_padded_causal_attention(student_attention):
    """Exercise 3."""
    untampered()
    torch.manual_seed(3)
    cases = [
        (7, 8, 5, [7, 3, 1, 5], torch.float64, torch.int64),
        (1, 4, 4, [1, 1], torch.float64, torch.int64),
        (12, 16, 3, [2, 12, 9], torch.float64, torch.int64),
        (5, 2, 6, [5], torch.float64, torch.int64),
        (6, 4, 3, [4, 6, 1], torch.float32, torch.int32),
    ]
    for n, d_k, d_v, lengths, dtype, index in cases:
        B, lengths = len(lengths), torch.tensor(lengths, dtype=index)
        Q, K = torch.randn(B, n, d_k, dtype=dtype) * 2, torch.randn(B, n, d_k, dtype=dtype)
        V = torch.randn(B, n, d_v, dtype=dtype)
        pads = [n - real for real in values(lengths)]
        references = [_alone(Q[b, pad:], K[b, pad:], V[b, pad:]) for b, pad in enumerate(pads)]
        what = (
            f"left_padded_causal_attention with Q {tuple(Q.shape)} {dtype}, V {tuple(V.shape)}, lengths "
            f"{values(lengths)}"
        )
        with forbid(
            "scratch.l03_attention.padding_mask",
            "scratch.l03_attention.causal_mask",
            "scratch.l03_attention.scaled_dot_product_attention",
            "torch.nn.functional.scaled_dot_product_attention",
            hint="build the mask from lengths yourself",
        ):
            result = call(student_attention, Q.clone(), K.clone(), V.clone(), lengths.clone(), what=what)
        assert type(result) is tuple and len(result) == 2, f"hint: {what}: return (output, weights)"
        output = tensor(result[0], what + ": the output", shape=(B, n, d_v), dtype=dtype)
        weights = tensor(result[1], what + ": the weights", shape=(B, n, n), dtype=dtype)
        assert finite(weights) and finite(output), (
            f"hint: {what}: inf or nan: a pad query has no key it may attend to, and a softmax over nothing is 0 / 0; "
            "decide its row yourself (the statement says what it must be)"
        )
        tolerance = 1e-10 if dtype == torch.float64 else 1e-5
        for b, pad in enumerate(pads):
            real = n - pad
            assert equal(weights[b, :pad], torch.zeros(pad, n, dtype=dtype)) and equal(
                output[b, :pad], torch.zeros(pad, d_v, dtype=dtype)
            ), f"hint: {what}: sequence {b} has {pad} pads on the LEFT; their rows must be exactly 0"
            assert equal(weights[b, pad:, :pad], torch.zeros(real, pad, dtype=dtype)), (
                f"hint: {what}: in sequence {b} a real query attends to a pad in front of it: which keys does "
                "lengths[b] make real?"
            )
            want_output, want_weights = references[b]
            assert close(weights[b, pad:, pad:], want_weights, atol=tolerance, rtol=tolerance), (
                f"hint: {what}: sequence {b}'s real tokens do not attend as if it ran alone: look at the scaling of "
                "the scores, the causal rule and which keys the softmax runs over (lecture 3, sections 3 and 5)"
            )
            assert close(output[b, pad:], want_output, atol=tolerance, rtol=tolerance), (
                f"hint: {what}: the weights are right but the output is not: it mixes the values with them"
            )
    print("Exercise 3: OK (each real token attends as in its sequence alone; pad rows are 0)")


def _exact_variance(weights, V, p):
    """Every keep/drop mask of the m keys, with its probability (m up to 8 here)."""
    m = weights.shape[-1]
    mean = second = torch.zeros_like(weights @ V)
    for keep in _product([0.0, 1.0], repeat=m):
        mask = torch.tensor(keep, dtype=weights.dtype)
        probability = (1 - p) ** mask.sum().item() * p ** (m - mask.sum().item())
        out = (weights * mask / (1 - p)) @ V
        mean, second = mean + probability * out, second + probability * out**2
    return second - mean**2


RANDOM_DRAWS = (
    "torch.rand",
    "torch.rand_like",
    "torch.randn",
    "torch.randint",
    "torch.bernoulli",
    "torch.Tensor.bernoulli_",
    "torch.Tensor.uniform_",
    "torch.normal",
    "torch.multinomial",
    "torch.nn.functional.dropout",
)


def dropout_output_variance(student_variance):
    """Exercise 4."""
    untampered()
    torch.manual_seed(4)

    def weights_of(*shape):
        return torch.softmax(torch.randn(*shape, dtype=torch.float64), dim=-1)

    def randn(*shape):
        return torch.randn(*shape, dtype=torch.float64)

    cases = [
        (weights_of(3, 5), randn(5, 2), 0.1),
        (weights_of(2, 3, 4), randn(2, 4, 3), 0.5),
        (weights_of(2, 4, 6), randn(6, 1), 0.9),
        (weights_of(1, 4), randn(3, 1, 4, 2), 0.3),
        (weights_of(2, 3), randn(3, 4), 0.0),
        (weights_of(2, 8), randn(8, 3), 0.99),
    ]
    expected = [_exact_variance(*case) for case in cases]
    # A row of 40 keys: 2^40 masks are out of reach by enumeration, not for the variance worked out from independent
    # terms (Var(m_j) = p (1 - p) for a Bernoulli keep, each term scaled by w_ij v_jc / (1 - p)).
    m = 40
    wide = (weights_of(3, m), randn(m, 2), 0.2)
    wide_expected = wide[2] / (1 - wide[2]) * (wide[0] ** 2 @ wide[1] ** 2)

    def checked(weights, V, p, seconds=5.0):
        what = f"dropout_output_variance(weights {tuple(weights.shape)}, V {tuple(V.shape)}, p={p})"
        with forbid(*RANDOM_DRAWS, hint="derive the variance: no random draws"):
            result = call(
                student_variance,
                weights.clone(),
                V.clone(),
                p,
                what=what,
                seconds=seconds,
                slow=f"the rows have {weights.shape[-1]} keys, {2 ** weights.shape[-1]:,} masks: work the variance out "
                "from the independent terms of the sum instead of visiting masks",
            )
        return result, what

    for (weights, V, p), want in zip(cases, expected):
        got, what = checked(weights, V, p)
        tensor(got, f"{what}: a variance for every entry of weights @ V", shape=want.shape)
        assert close(got, want, atol=1e-12, rtol=1e-9), (
            f"hint: {what}: differs from the exact variance over all masks: an output entry is a sum of independent "
            "terms, one per key; what is the variance of one term, given how often its key survives and how "
            "survivors are scaled? (lecture 3, section 5: dropout)"
        )
    got, what = checked(*wide)
    assert close(tensor(got, what, shape=(3, 2)), wide_expected, atol=1e-12, rtol=1e-9), (
        f"hint: {what}: right for few keys but not for {m}: does your answer depend on m in a way the terms do not?"
    )
    one_key = torch.zeros(1, m, dtype=torch.float64)
    one_key[0, 7] = 1.0
    single, _ = checked(one_key, wide[1], wide[2])
    # With all weight on one key, the output is v_7 / (1 - p) with probability 1 - p and 0 otherwise.
    v = wide[1][7]
    assert close(tensor(single, what, shape=(1, 2))[0], v**2 * wide[2] / (1 - wide[2]), atol=1e-12), (
        f"hint: {what}: a row with all its weight on one key: the output is that key's value scaled up when it "
        "survives and 0 when it is dropped; its variance follows from that"
    )
    for bad in (1.0, -0.1, 1.5):
        raises(
            ValueError,
            student_variance,
            cases[0][0],
            cases[0][1],
            bad,
            what=f"dropout_output_variance(..., p={bad})",
            hint="raise ValueError unless 0 <= p < 1 (p = 1 drops every weight)",
        )
    peaked, spread = torch.zeros(1, 32, dtype=torch.float64), torch.full((1, 32), 1 / 32, dtype=torch.float64)
    peaked[0, 0] = 1.0
    ones = torch.ones(32, 1, dtype=torch.float64)
    deviations = [tensor(checked(w, ones, 0.1)[0], "dropout_output_variance").sqrt().item() for w in (peaked, spread)]
    print(
        f"Exercise 4: OK (p = 0.1, all values 1: the output's standard deviation is {deviations[0]:.2f} for a row on "
        f"one key, {deviations[1]:.3f} for a row spread over 32 keys)"
    )


def _watched(blocks, live, held_numbers):
    """Pass the blocks on; each time the next one is asked for, note how many numbers the function still holds."""
    iterator = iter(blocks)
    while True:
        held_numbers.append(live.alive())
        live.paused = True
        try:
            K_block, V_block = next(iterator)
        except StopIteration:
            return
        finally:
            live.paused = False
        live.refs += [_weak(K_block), _weak(V_block)]
        yield K_block, V_block
        del K_block, V_block


def _attention(Q, K, V):
    return torch.softmax(Q @ K.T / math.sqrt(Q.shape[-1]), dim=-1) @ V


def streaming_attention(student_streaming_attention):
    """Exercise 5."""
    untampered()

    def checked(Q, blocks, what):
        with forbid(
            "torch.Tensor.numpy",
            "torch.Tensor.__array__",
            "torch.Tensor.tolist",
            hint="keep everything in torch: fold each block into the running maximum, sum and output",
        ):
            return call(student_streaming_attention, Q, blocks, what=f"streaming_attention: {what}")

    torch.manual_seed(5)
    cases = []
    for n, m, block, scale in [
        (6, 23, 23, 1),
        (6, 23, 1, 1),
        (6, 23, 5, 1),
        (6, 23, 10, 1),
        (6, 23, 5, 1000),
        (1, 9, 4, 1),
    ]:
        Q = scale * torch.randn(n, 16, dtype=torch.float64)  # scale 1000: scores in the thousands, of both signs
        K, V = torch.randn(m, 16, dtype=torch.float64), torch.randn(m, 8, dtype=torch.float64)
        cases.append(
            (Q, K, V, block, f"blocks of {block} (m = {m}, n = {n}{', scores in the thousands' * (scale > 1)})")
        )
    K = torch.randn(23, 16, dtype=torch.float64).abs() + 0.1  # every key with positive entries
    Q = torch.stack([-1000 * torch.ones(16, dtype=torch.float64), torch.randn(16, dtype=torch.float64)])
    cases.append((Q, K, torch.randn(23, 8, dtype=torch.float64), 5, "query 0's scores all below -1,000"))
    Q, K = torch.randn(3, 4), torch.randn(11, 4)
    cases.append((Q, K, torch.randn(11, 3), 4, "float32, d_v = 3, a last block of 3"))
    references = [_attention(Q_, K_, V_) for Q_, K_, V_, _, _ in cases]
    for (Q_, K_, V_, block, what), want in zip(cases, references):
        got = tensor(checked(Q_.clone(), stream(K_, V_, block, []), what), what, shape=want.shape, dtype=want.dtype)
        assert finite(got), (
            f"hint: {what}: inf or nan in the output: where does your running maximum start, and is it subtracted "
            "before every exp? (the statement's running quantities)"
        )
        tolerance = 1e-10 if want.dtype == torch.float64 else 1e-5
        assert close(got, want, atol=tolerance, rtol=tolerance), f"hint: wrong values with {what}: " + (
            "with one block this is plain attention: compare with lecture 3's formula"
            if block == len(K_)
            else "when a block raises the maximum, everything accumulated so far was computed against the old one"
        )
    n, m, b, d = 4, 1024, 8, 16  # the memory test: 128 blocks of 8 keys
    Q, K, V = (torch.randn(size, d, dtype=torch.float64) for size in (n, m, m))
    expected = _attention(Q, K, V)
    held, held_numbers, live, watch = [], [], LiveTensors(), LargestTensor()
    with watch, live:
        got = checked(Q, _watched(stream(K, V, b, held), live, held_numbers), "128 blocks of 8 keys")
    assert close(tensor(got, "128 blocks of 8 keys", shape=(n, d)), expected, atol=1e-10), (
        "hint: wrong values with 128 blocks of 8"
    )
    assert max(held) <= 2, (
        f"hint: your function still held {max(held) // 2} earlier blocks when a new one came: "
        "fold each block into the running sums and let it go (do not collect the blocks)"
    )
    budget = 4 * (n * b + n * d + n + b * (d + d))  # one block, its scores and the running max, sum and output, 4 times
    assert max(held_numbers) <= budget, (
        f"hint: when a new block came your function still held {max(held_numbers):,} numbers in tensors (one block "
        f"with its scores and the running max, sum and output need about {budget // 4:,}): keep no copies of earlier "
        "blocks and no list of their scores"
    )
    assert watch.largest < n * m, (
        f"hint: your function created a tensor of {watch.largest} numbers; one block of scores is n x b = {n * b} "
        f"and all scores would be n x m = {n * m}: never build the whole score matrix or concatenate the blocks"
    )
    print(f"Exercise 5: OK (largest tensor {watch.largest} numbers; all the scores would be {n * m})")
