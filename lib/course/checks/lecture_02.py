"""Checks of lecture 2's exercises (exercises/02_embeddings.ipynb); see course.checks."""

import tracemalloc

from safetensors.torch import load_file

from course import assets
from course.checks.support import (
    BUILTINS,
    F,
    call,
    close,
    equal,
    math,
    number,
    tensor,
    tools,
    torch,
    untampered,
    values,
)
from scratch.l02_positions import RotaryEmbedding, sinusoidal_positional_encoding

__builtins__ = BUILTINS  # the built-ins as they were when the set-up cell imported this module

forbid, CountOps, LargestTensor = tools.forbid, tools.CountOps, tools.LargestTensor
_rotate, _sinusoids = RotaryEmbedding(16).rotate, sinusoidal_positional_encoding
_tracing, _start_tracing, _stop_tracing = tracemalloc.is_tracing, tracemalloc.start, tracemalloc.stop
_traced_memory, _reset_peak = tracemalloc.get_traced_memory, tracemalloc.reset_peak


class _MemoryOutsideTorch:
    """The peak of what Python objects and numpy arrays allocated inside the block (`.peak`, bytes): the memory that
    LargestTensor, which sees only PyTorch's operations, does not."""

    def __enter__(self):
        self._started = not _tracing()
        if self._started:
            _start_tracing()
        _reset_peak()
        self._base, self.peak = _traced_memory()[0], 0
        return self

    def __exit__(self, *error):
        self.peak = _traced_memory()[1] - self._base
        if self._started:
            _stop_tracing()


# The checks' own copy of MiniLM's embedding table and vocabulary, read when the set-up imports this module.
_E = load_file(assets.minilm_dir() / "model.safetensors")["embeddings.word_embeddings.weight"]
_VOCAB = (assets.minilm_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines()
_TOKEN_ID = {token: i for i, token in enumerate(_VOCAB)}
AUTOGRAD = (
    "torch.Tensor.backward",
    "torch.autograd.backward",
    "torch.autograd.grad",
    "torch.autograd.variable.Variable._execution_engine",
)


def _analogies(table, questions):
    unit = table / table.norm(dim=1, keepdim=True)
    target = unit[questions[:, 0]] - unit[questions[:, 1]] + unit[questions[:, 2]]
    similarity = target @ unit.T
    for q, own in enumerate(values(questions)):
        similarity[q, own] = -math.inf
    return similarity.argmax(dim=1)


def solve_analogies(student_solve_analogies):
    """Exercise 1."""
    untampered()

    def checked(table, questions):
        what = f"solve_analogies(E {tuple(table.shape)} {table.dtype}, questions {tuple(questions.shape)})"
        with CountOps() as ops:
            answers = call(student_solve_analogies, table.clone(), questions.clone(), what=what)
        tensor(answers, what + ": one answer id per question", shape=(len(questions),))
        assert not answers.is_floating_point() and not answers.is_complex() and answers.dtype != torch.bool, (
            f"hint: {what}: return integer ids, got {answers.dtype}"
        )
        return values(answers), ops.calls, what

    toy = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8], [10.0, 0.0], [0.8, 0.6]])
    axes = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, -1.0, 1.0], [1.0, 1.0, -1.0]])
    for table, questions, want, hint in [
        (axes, [[0, 1, 2]], [3], "the target is a - b + c (king - man + woman)"),
        (
            toy,
            [[0, 0, 2]],
            [4],
            "leave out the question's own words, and compare by cosine: a long row must not "
            "win by its length (lecture 2, section 2)",
        ),
        (
            toy,
            [[0, 0, 2], [4, 4, 1]],
            [4, 2],
            "exclude each question's own three words only, not every word that appears in some question",
        ),
    ]:
        got, _, what = checked(table, torch.tensor(questions))
        assert got == want, f"hint: {what}, questions {questions}: expected {want}, got {got}: {hint}"
    torch.manual_seed(1)
    table = torch.randn(300, 8, dtype=torch.float64) * torch.rand(300, 1, dtype=torch.float64) * 10  # norms 0 to 30
    calls = {}
    for Q, index in ((2, torch.int64), (64, torch.int64), (7, torch.int32)):
        questions = torch.randint(0, 300, (Q, 3), dtype=index)
        questions[0, 1] = questions[0, 0]  # a question may repeat a word
        got, calls[Q], what = checked(table, questions)
        want = values(_analogies(table, questions.long()))
        wrong = sum(g != w for g, w in zip(got, want))
        assert not wrong, (
            f"hint: {what} ({index} ids, rows of very different lengths): {wrong} of {Q} answered differently: "
            "cosine similarity with unit rows, each question's own ids excluded"
        )
    assert calls[64] <= calls[2] + 3, (
        f"hint: {calls[2]} PyTorch operations for 2 questions but {calls[64]} for 64: no loop over the questions; one "
        "(Q, V) matrix, the excluded entries set in one go, one argmax"
    )
    questions = [
        ("king", "man", "woman", "queen"),
        ("queen", "woman", "man", "king"),
        ("brother", "man", "woman", "sister"),
        ("uncle", "man", "woman", "aunt"),
        ("he", "man", "woman", "she"),
        ("paris", "france", "germany", "berlin"),
        ("tokyo", "japan", "china", "beijing"),
        ("paris", "france", "italy", "rome"),
        ("london", "england", "spain", "madrid"),
        ("cars", "car", "dog", "dogs"),
        ("mice", "mouse", "goose", "geese"),
        ("bigger", "big", "small", "smaller"),
        ("walked", "walk", "swim", "swam"),
        ("went", "go", "see", "saw"),
    ]
    ids = torch.tensor([[_TOKEN_ID[w] for w in q[:3]] for q in questions])
    answers = [_VOCAB[i] for i in checked(_E, ids)[0]]
    expected = [_VOCAB[i] for i in values(_analogies(_E, ids))]
    assert answers == expected, f"hint: MiniLM's table: expected {expected}, got {answers}"
    for (a, b, c, wanted), answer in zip(questions, answers):
        print(f"{a} - {b} + {c} = {answer}" + ("" if answer == wanted else f"   (wanted {wanted})"))
    print(f"Exercise 1: OK ({sum(q[3] == x for q, x in zip(questions, answers))} of {len(questions)} as wanted)")


def _encodings(positions, d_model, dtype):  # section 5's formula, in float64, then cast
    omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angles = positions.double()[..., None] * omega
    return torch.stack([angles.sin(), angles.cos()], dim=-1).flatten(-2).to(dtype)  # sin, cos, sin, cos, ...


def read_position(student_read_position):
    """Exercise 2."""
    untampered()
    torch.manual_seed(2)
    cases = []
    for d_model, shape, dtype in [
        (32, (200,), torch.float32),
        (32, (), torch.float64),
        (8, (3, 5), torch.float64),
        (2, (7,), torch.float32),
        (64, (2, 2, 10), torch.float32),
        (512, (50,), torch.float32),
        (6, (0,), torch.float64),
    ]:
        period = 2 * math.pi * 10000 ** ((d_model - 2) / d_model)  # positions 0 .. period - 1 are readable
        positions = torch.randint(0, math.ceil(period), shape)
        positions.view(-1)[:2] = torch.tensor([0, math.ceil(period) - 1])[: positions.numel()]  # the first, the last
        cases.append((_encodings(positions, d_model, dtype), positions, period))
    with forbid(
        "scratch.l02_positions.sinusoidal_positional_encoding",
        "scratch.l02_positions.SinusoidalPositionalEncoding.forward",
        hint="read the angle of the slowest (sin, cos) pair",
    ):
        for pe, positions, period in cases:
            d_model = pe.shape[-1]
            what = f"read_position on vectors of shape {tuple(pe.shape)} ({pe.dtype})"
            with LargestTensor() as memory, _MemoryOutsideTorch() as outside:
                got = call(student_read_position, pe.clone(), what=what)
            tensor(got, what + ": int64 positions", shape=positions.shape, dtype=torch.int64)
            if not equal(got, positions):
                wrong = (got != positions).nonzero()[0]
                raise AssertionError(
                    f"hint: {what}: position {positions[tuple(wrong)].item()} read as {got[tuple(wrong)].item()}: "
                    f"which pair turns slowly enough to tell all positions up to {math.ceil(period) - 1} apart, in "
                    "which range does atan2 give its angle, and how do you get from an angle back to a whole "
                    "position? (lecture 2, section 5)"
                )
            assert memory.largest <= 4 * pe.numel() + 64, (
                f"hint: {what}: you created a tensor of {memory.largest:,} numbers for {pe.numel():,} input numbers: "
                "read each vector's angle instead of comparing it with a table of encodings"
            )
            assert outside.peak <= 65536 + 16 * pe.numel(), (
                f"hint: {what}: you allocated {outside.peak:,} bytes outside PyTorch (Python lists, numpy arrays) for "
                f"{pe.numel():,} input numbers: read each vector's angle instead of comparing it with a table of "
                "encodings"
            )
    print("Exercise 2: OK: d_model = 32 counts to 35,332 with its slowest hand; d_model = 2 only to 6")


def _turned_by_hand(x, positions):  # each neighbour pair turned by a 2 x 2 rotation, in float64
    d_head = x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)
    cos, sin = (positions.double()[:, None] * theta).cos(), (positions.double()[:, None] * theta).sin()
    even, odd = x[:, 0::2].double(), x[:, 1::2].double()
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(1)


def rope_complex(student_rope_complex):
    """Exercise 3."""
    untampered()
    torch.manual_seed(3)
    x = torch.randn(6, 16, dtype=torch.float64)
    positions = torch.tensor([0, 1, 2, 7, 50, 100])
    halves = torch.cat([torch.arange(0, 16, 2), torch.arange(1, 16, 2)])  # pair p -> dimensions (p, p + d/2)
    expected = torch.empty_like(x)
    expected[:, halves] = _rotate(x[:, halves], positions)  # the same rotation, Llama's layout
    cases = [
        (x, positions),
        (torch.randn(5, 8), torch.tensor([9, 0, 3, 3, 1])),  # float32, positions in any order, repeated
        (torch.randn(1, 2, dtype=torch.float64), torch.tensor([5])),  # d_head = 2: one pair
        (torch.randn(4, 64, dtype=torch.float64), torch.tensor([100_000, 17, 2, 40_000])),
        (torch.randn(3, 4, dtype=torch.float64), torch.tensor([2, 0, 1], dtype=torch.int32)),
    ]
    references = [_turned_by_hand(x_, p) for x_, p in cases]
    q, k = torch.randn(2, 1, 64)

    def checked(x_, p):
        what = f"rope_complex(x {tuple(x_.shape)} {x_.dtype}, positions {values(p)})"
        got = call(student_rope_complex, x_.clone(), p.clone(), what=what)
        return tensor(got, what + ": the shape and dtype of x", shape=x_.shape, dtype=x_.dtype), what

    with forbid(
        "scratch.l02_positions.RotaryEmbedding.rotate",
        "scratch.l02_positions.apply_rotary",
        "scratch.l02_positions.rotate_half",
        hint="multiply complex pairs by e^(i pos theta_p)",
    ):
        ours = [checked(x_, p) for x_, p in cases]
        scores = {}
        for i, j in [(3, 0), (10, 7), (503, 500), (9000, 8997), (0, 3), (100, 103)]:
            turned_q, turned_k = checked(q, torch.tensor([i]))[0], checked(k, torch.tensor([j]))[0]
            scores[i, j] = number((turned_q @ turned_k.T).item(), "a score")
    out, what = ours[0]
    assert close(out[0], x[0]), f"hint: {what}: position 0 is not turned at all"
    assert close(out.norm(dim=-1), x.norm(dim=-1)), f"hint: {what}: turning a pair keeps its length"
    assert close(out, expected, atol=1e-9), (
        f"hint: {what}: which dimensions form a pair, which of them is the real part, how fast does pair p turn, "
        "and in which direction? (lecture 2, section 8)"
    )
    for (x_, _), (got, what), want in zip(cases, ours, references):
        assert close(got.double(), want, atol=1e-5 if x_.dtype == torch.float32 else 1e-9, rtol=1e-5), (
            f"hint: {what}: row r turns by its own position, pair p at the speed for the d_head you are given; "
            "large positions need the angles in float64"
        )
    assert abs(scores[3, 0] - scores[503, 500]) < 1e-4 and abs(scores[3, 0] - scores[9000, 8997]) < 1e-4, (
        "hint: the score must depend only on j - i (compute the angles in float64)"
    )
    assert abs(scores[3, 0] - scores[0, 3]) > 1e-3, (
        "hint: offsets j - i = -3 and +3 differ: the rotation has a direction"
    )
    print("Exercise 3: OK (the score of a query at i and a key at j depends only on j - i)")


def _alibi_by_loops(h, n):
    return torch.tensor(
        [
            [[-(2.0 ** (-8 * (k + 1) / h)) * (i - j) if j <= i else -math.inf for j in range(n)] for i in range(n)]
            for k in range(h)
        ]
    )


def alibi_bias(student_alibi_bias):
    """Exercise 4."""
    untampered()

    def checked(h, n):
        what = f"alibi_bias({h}, {n})"
        return tensor(call(student_alibi_bias, h, n, what=what), what, shape=(h, n, n), dtype=torch.float32), what

    for h, n in [(8, 6), (4, 2), (1, 5), (6, 7), (3, 1), (12, 9), (1, 1)]:
        got, what = checked(h, n)
        want = _alibi_by_loops(h, n)
        assert equal(torch.isinf(got), torch.isinf(want)) and bool((got[torch.isinf(got)] < 0).all()), (
            f"hint: {what}: keys after the query, and only those, get -inf"
        )
        finite_part = ~torch.isinf(want)
        assert close(got[finite_part], want[finite_part]), (
            f"hint: {what}: the biases of keys up to the query differ: a penalty that grows with the distance i - j, "
            f"at a slope for each head from the statement's sequence for THIS h (h need not be a power of 2)"
        )
    long, what = checked(8, 1000)
    assert equal(long[:, :10, :10], checked(8, 10)[0]), f"hint: {what}: the bias depends only on i - j and the head"
    weights = F.softmax(long[:, -1], dim=-1)  # the last query of 1,000, with all scores q·k equal
    print(
        f"Exercise 4: OK (the last of 1,000 queries, all scores q·k equal: weight on itself {weights[0, -1]:.0%} in "
        f"the steepest head, {weights[-1, -1]:.1%} in the gentlest)"
    )


def shift_matrix(student_shift_matrix):
    """Exercise 5."""
    untampered()

    def checked(k, d_model):
        what = f"shift_matrix({k}, {d_model})"
        M = call(student_shift_matrix, k, d_model, what=what)
        return tensor(M, what, shape=(d_model, d_model), dtype=torch.float64), what

    eye = torch.eye(32, dtype=torch.float64)
    pe = _sinusoids(2000, 32, dtype=torch.float64)
    M, what = checked(1, 32)
    assert close(pe[:-1] @ M.T, pe[1:], atol=1e-10), (
        f"hint: {what}: M_1 PE_pos must be PE_(pos + 1) at every position: use the statement's identities for each "
        "(sin, cos) pair, with the frequency of that pair (lecture 2, section 5)"
    )
    M7, what = checked(7, 32)
    assert close(pe[:-7] @ M7.T, pe[7:], atol=1e-9), f"hint: {what}: the angle each pair turns by depends on k"
    assert close(M7, torch.linalg.matrix_power(M, 7), atol=1e-10), "hint: shifting by 7 = shifting by 1 seven times"
    assert close(M7 @ M7.T, eye, atol=1e-10), f"hint: {what}: each 2 x 2 block is a rotation"
    assert close(checked(-7, 32)[0] @ M7, eye, atol=1e-10), "hint: shifting back by -k undoes a shift by k"
    assert close(checked(0, 32)[0], eye, atol=1e-12), "hint: a shift by 0 is the identity"
    for k, d_model in [(1, 2), (3, 8), (-5, 64), (1000, 16), (-250, 128)]:
        table = _sinusoids(1200, d_model, dtype=torch.float64)
        start = max(0, -k)  # positions pos with pos + k inside the table
        rows = table[start : start + 200]
        Mk, what = checked(k, d_model)
        assert close(rows @ Mk.T, table[start + k : start + k + 200], atol=1e-9), (
            f"hint: {what}: M_k PE_pos must equal PE_(pos + k) for THIS d_model: each pair turns at its own speed"
        )
    scores = pe @ checked(3, 32)[0] @ pe.T  # scores[i, j] = PE_i · M_3 PE_j
    assert equal(scores[3:].argmax(dim=1), torch.arange(2000 - 3)), "hint: PE_i · M_k PE_j = PE_i · PE_(j+k)"
    print("Exercise 5: OK (the score PE_i · M_3 PE_j is largest at j = i - 3 for every i from 3 to 1,999)")


def _sgns_reference(centre_table, context_table, centres, contexts, negatives):
    V, U = centre_table.clone().requires_grad_(), context_table.clone().requires_grad_()
    positive = (V[centres] * U[contexts]).sum(-1)
    negative = torch.einsum("bd,bkd->bk", V[centres], U[negatives])
    loss = -(F.logsigmoid(positive) + F.logsigmoid(-negative).sum(-1)).mean()
    loss.backward()
    return loss.item(), V.grad, U.grad


def _batch(vocabulary, d, B, K, scale, dtype, seed, index=torch.int64):
    generator = torch.Generator().manual_seed(seed)
    centre_table = torch.randn(vocabulary, d, dtype=dtype, generator=generator) * scale
    context_table = torch.randn(vocabulary, d, dtype=dtype, generator=generator) * scale
    centres = torch.randint(0, vocabulary, (B,), generator=generator)
    contexts = torch.randint(0, vocabulary, (B,), generator=generator)
    negatives = torch.randint(0, vocabulary, (B, K), generator=generator)
    return centre_table, context_table, centres.to(index), contexts.to(index), negatives.to(index)


def sgns_gradients(student_sgns_gradients):
    """Exercise 6."""
    untampered()

    def checked(args, name):
        what = (
            f"sgns_gradients on tables {tuple(args[0].shape)} ({args[0].dtype}), {len(args[2])} pairs with "
            f"{args[4].shape[1]} negatives ({name})"
        )
        with (
            forbid(*AUTOGRAD, hint="derive the gradients by hand: d/dx log sigmoid(x) = sigmoid(-x)"),
            torch.inference_mode(),
            CountOps() as ops,
        ):
            result = call(student_sgns_gradients, *(a.clone() for a in args), what=what)
        assert type(result) is tuple and len(result) == 3, f"hint: {what}: return (loss, grad_centre, grad_context)"
        return result, ops.calls, what

    cases = {
        "few words, many repeats": _batch(7, 3, 20, 5, 1.0, torch.float64, 1),
        "more words": _batch(50, 8, 64, 3, 0.5, torch.float64, 2),
        "large dot products, float32": _batch(6, 4, 8, 2, 8.0, torch.float32, 3),
        "int32 ids": _batch(9, 3, 10, 2, 1.0, torch.float64, 5, torch.int32),
    }
    cases["one pair, its negative twice and equal to the context"] = (
        *cases["few words, many repeats"][:2],
        torch.tensor([2]),
        torch.tensor([4]),
        torch.tensor([[4, 4, 1]]),
    )
    expected = {
        name: _sgns_reference(*(a.long() if not a.is_floating_point() else a for a in args))
        for name, args in cases.items()
    }
    for name, args in cases.items():
        (loss, grad_centre, grad_context), _, what = checked(args, name)
        want_loss, want_V, want_U = expected[name]
        tolerance = {"rtol": 1e-4, "atol": 1e-5} if args[0].dtype == torch.float32 else {"rtol": 1e-9, "atol": 1e-12}
        loss = number(loss, what + ": the loss")
        assert abs(loss - want_loss) <= 1e-4 * abs(want_loss) + 1e-9, (
            f"hint: {what}: loss {loss} instead of {want_loss:.6g}: the MEAN over the batch of the statement's L_b; "
            "with dot products this large, log(sigmoid(x)) is -inf once sigmoid(x) rounds to 0"
        )
        for which, got, want, table in [
            ("grad_centre", grad_centre, want_V, args[0]),
            ("grad_context", grad_context, want_U, args[1]),
        ]:
            tensor(got, f"{what}: {which}, in its table's shape and dtype", shape=table.shape, dtype=table.dtype)
            assert close(got, want, **tolerance), (
                f"hint: {what}: {which} is off by up to {(got.double() - want.double()).abs().max().item():.3g}: "
                "differentiate each term of L_b with respect to the dot product first, then with respect to each row "
                "it involves; a word that occurs several times gets the sum of all its shares (lecture 2, section 1)"
            )
    _, small, _ = checked(_batch(30, 6, 8, 4, 1.0, torch.float64, 4), "8 pairs")
    _, large, _ = checked(_batch(30, 6, 256, 4, 1.0, torch.float64, 4), "256 pairs")
    assert large <= small + 3, (
        f"hint: {small} PyTorch operations for a batch of 8 but {large} for 256: no Python loop over the batch"
    )
    loss = expected["large dot products, float32"][0]
    print(
        "Exercise 6: OK: the gradients of every batch equal autograd's (float32 batch with large dot products: "
        f"loss {loss:.1f})"
    )
