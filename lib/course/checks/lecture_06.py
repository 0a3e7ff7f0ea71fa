"""Checks of lecture 6's exercises (exercises/06_full_transformer.ipynb); see course.checks."""

import random

from course.checks.support import (
    BUILTINS,
    F,
    call,
    close,
    equal,
    math,
    number,
    plain,
    tensor,
    tools,
    torch,
    untampered,
    values,
)
from course.number_words import (
    ENGLISH_TOKENS,
    GERMAN_TOKENS,
    Vocabulary,
    english_tokens,
    german_tokens,
    number_translation_dataset,
    pad_right,
)
from scratch.l05_transformer_block import DecoderBlock, EncoderBlock
from scratch.l06_training import lr_factor
from scratch.l06_transformer import Transformer, greedy_decode

__builtins__ = BUILTINS  # the built-ins as they were when the set-up cell imported this module

forbid, block_passes = tools.forbid, tools.block_passes
_Random, _no_grad = random.Random, torch.no_grad
_english, _german = Vocabulary(ENGLISH_TOKENS), Vocabulary(GERMAN_TOKENS)


def make_decoder_batch(student_make_decoder_batch):
    """Exercise 1."""
    untampered()

    def check_rows(sequences, bos_id, eos_id, pad_id):
        what = f"make_decoder_batch({sequences}, bos_id={bos_id}, eos_id={eos_id}, pad_id={pad_id})"
        result = call(student_make_decoder_batch, [list(s) for s in sequences], bos_id, eos_id, pad_id, what=what)
        assert type(result) is tuple and len(result) == 2, f"hint: {what}: return (tgt_in, tgt_out)"
        width = max(len(s) for s in sequences) + 1
        tgt_in = tensor(result[0], f"{what}: tgt_in, (batch, longest + 1)", shape=(len(sequences), width))
        tgt_out = tensor(result[1], f"{what}: tgt_out, (batch, longest + 1)", shape=(len(sequences), width))
        assert tgt_in.dtype == torch.long and tgt_out.dtype == torch.long, (
            f"hint: {what}: return two torch.long tensors (token ids)"
        )
        for r, seq in enumerate(sequences):
            row_in, row_out = values(tgt_in[r]), values(tgt_out[r])
            pads = width - len(seq) - 1
            assert row_in == [bos_id, *seq, eos_id][:width] + [pad_id] * (pads - 1), (
                f"hint: {what}: row {r} of tgt_in is {row_in}: what does the decoder read at each position, with the "
                "ids you are given? (lecture 6, section 3: teacher forcing)"
            )
            assert row_out == [*seq, eos_id] + [pad_id] * pads, (
                f"hint: {what}: row {r} of tgt_out is {row_out}: label t is the token after input t"
            )
        return tgt_in, tgt_out

    check_rows([[5, 6, 7], [8]], bos_id=1, eos_id=2, pad_id=0)
    check_rows([[9, 9], [4, 5]], bos_id=1, eos_id=2, pad_id=0)  # equal lengths: no padding
    check_rows([[300, 301, 7], [], [42]], bos_id=256, eos_id=257, pad_id=5)  # ids past 255, an empty sequence
    check_rows([[3]], bos_id=7, eos_id=8, pad_id=9)  # one row
    check_rows([[], []], bos_id=1, eos_id=2, pad_id=0)  # every sequence empty: rows of <bos> and of <eos>
    check_rows([list(range(10, 30)), [1], [], [2, 2], [0], [4]], bos_id=31, eos_id=32, pad_id=33)  # heavy padding
    draw = _Random(1)
    for _ in range(30):
        bos, eos, pad = draw.sample(range(70_000), 3)
        rows = [[draw.randrange(70_000) for _ in range(draw.randrange(12))] for _ in range(draw.randint(1, 6))]
        check_rows(rows, bos, eos, pad)
    data = number_translation_dataset(seed=0, n_train=16, n_val=0)  # the lecture's data set, its first 16 pairs
    tgt_vocab = data.tgt_vocab
    sequences = [tgt_vocab.encode(german_tokens(n)) for n in data.train_numbers]
    tgt_in, tgt_out = check_rows(sequences, tgt_vocab.bos_id, tgt_vocab.eos_id, 0)
    width = tgt_in.shape[1] + 1
    assert equal(tgt_in, data.train_tgt[:, : width - 1]) and equal(tgt_out, data.train_tgt[:, 1:width]), (
        "hint: the lecture's data set: tgt_in and tgt_out must be its rows without the last and without the first "
        "column"
    )
    print("Exercise 1: OK")


def learning_rate(student_learning_rate):
    """Exercise 2."""
    untampered()
    runs = [(600, 30, 1e-3, 1e-4), (100, 10, 6e-3, 6e-4), (50, 0, 1e-3, 0.0), (7, 1, 0.5, 0.2), (3, 1, 1.0, 0.0)]
    draw = _Random(2)
    for _ in range(25):  # steps, warmup, peak, minimum: any of them
        steps = draw.randint(2, 400)
        peak = draw.choice([1e-4, 3e-4, 1e-3, 6e-3, 0.1])
        runs.append(
            (steps, draw.choice([0, 1, draw.randint(0, steps - 2)]), peak, peak * draw.choice([0, 0.01, 0.1, 0.37]))
        )
    expected = {
        run: [run[2] * lr_factor(s, run[0], run[1], "cosine", run[3] / run[2]) for s in range(run[0])] for run in runs
    }
    with forbid(
        "scratch.l06_training.lr_factor",
        "torch.optim.lr_scheduler.LRScheduler.__init__",  # every PyTorch scheduler (and transformers') starts here
        hint="write the schedule from its two formulas",
    ):
        for steps, warmup, peak, minimum in runs:
            where = f"steps={steps}, warmup={warmup}, peak={peak}, minimum={minimum:.3g}"
            rates = []
            for s in range(steps):
                what = f"learning_rate({s}, {steps}, {peak}, {warmup}, {minimum:.3g})"
                rate = call(student_learning_rate, s, steps, peak, warmup, minimum, what=what)
                assert type(rate) in (float, int), f"hint: {what}: return a number (a float), not {type(rate).__name__}"
                rates.append(float(rate))
            want = expected[steps, warmup, peak, minimum]
            wrong = [
                s for s, (a, b) in enumerate(zip(rates, want)) if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-15)
            ]
            if wrong:
                s = wrong[0]
                phase = "warm-up" if s < warmup else "decay"
                raise AssertionError(
                    f"hint: {where}: step {s} (in the {phase}) expected {want[s]:.6g}, got {rates[s]:.6g}: check where "
                    "each phase starts and ends (step 0 already moves, the warm-up's last step reaches peak, the last "
                    "step of the run reaches minimum) (lecture 6, section 4)"
                )
    print("Exercise 2: OK")


def accumulate_gradients(student_accumulate_gradients):
    """Exercise 3."""
    untampered()
    numbers = [7, 23456, 12, 99999, 300, 70001, 5]  # one word to nine: very different amounts of padding
    number_batch = (
        pad_right([_english.encode(english_tokens(n)) for n in numbers], 0),
        pad_right([[_german.bos_id, *_german.encode(german_tokens(n)), _german.eos_id] for n in numbers], 0),
    )
    generator = torch.Generator().manual_seed(3)
    lengths = [1, 14, 2, 9, 1, 3]  # target lengths; real ids avoid the padding id 3
    random_batch = (
        pad_right([values(4 + torch.randint(30, (n,), generator=generator)) for n in (5, 1, 8, 2, 6, 3)], 3),
        pad_right([[1, *values(4 + torch.randint(31, (n,), generator=generator)), 2] for n in lengths], 3),
    )
    cases = [(0, number_batch, size) for size in (1, 2, 3, 7, 10)] + [(3, random_batch, size) for size in (1, 4, 6)]
    for pad_id, (src, tgt), micro_batch in cases:
        what = f"accumulate_gradients on a batch of {src.shape[0]} rows (pad_id {pad_id}), micro_batch={micro_batch}"
        torch.manual_seed(micro_batch)
        model = Transformer(len(_english), len(_german), d_model=16, h=2, N=1, d_ff=32, dropout=0.0, pad_id=pad_id)
        model = model.double()
        model.zero_grad()
        logits = model(src, tgt[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten(), ignore_index=pad_id)  # the whole batch
        loss.backward()
        expected = {name: p.grad.clone() for name, p in model.named_parameters()}
        for p in model.parameters():  # what an earlier step left behind
            p.grad = torch.full_like(p, 0.5)
        with block_passes(EncoderBlock, DecoderBlock) as passes:  # every block of every model, copies included
            got = call(student_accumulate_gradients, model, src.clone(), tgt.clone(), micro_batch, what=what)
        seen = [rows for _, rows in passes]
        assert seen and max(seen) <= micro_batch, (
            f"hint: {what}: a block got {max(seen, default=0)} rows at once: run the model on at most micro_batch rows"
        )
        got = number(got, what + ": the whole batch's loss")
        assert abs(got - loss.item()) < 1e-10, (
            f"hint: {what}: expected the whole batch's loss {loss.item():.6f}, got {got!r}: which label positions "
            "count, and what is the mean taken over: each micro-batch, or the whole batch? (lecture 6, section 3)"
        )
        for name, p in model.named_parameters():
            assert p.grad is not None and type(p.grad) is torch.Tensor and close(p.grad, expected[name], atol=1e-10), (
                f"hint: {what}: {name}.grad is not the gradient of the whole batch's loss: what did .grad hold before, "
                "and by what must each micro-batch's loss be scaled so that the gradients add up to the batch's?"
            )
    print("Exercise 3: OK: the micro-batches' gradients add up to the whole batch's")


def order_blind_ceiling(student_ceiling):
    """Exercise 4."""
    untampered()
    # the claim behind the exercise: without positional encoding, 2300 and 3200 get the same decoder output
    torch.manual_seed(5)
    model = Transformer(len(_english), len(_german), d_model=32, h=4, N=2, d_ff=64, dropout=0.0, max_len=32).eval()
    src = torch.tensor([_english.encode(english_tokens(n)) for n in (2300, 3200)])
    tgt = torch.tensor([[_german.bos_id, 7, 9]] * 2)
    with _no_grad():
        told_apart = not close(model(src[:1], tgt[:1]), model(src[1:], tgt[1:]))
        model.pos.pe.zero_()  # no positions anywhere
        the_same = close(model(src[:1], tgt[:1]), model(src[1:], tgt[1:]), atol=1e-5)

    def attempt(numbers, what):
        what = f"order_blind_ceiling({what})"
        got = call(student_ceiling, list(numbers), what=what)
        assert type(got) in (float, int), f"hint: {what}: return a fraction (a float), not {type(got).__name__}"
        return float(got), what

    def groups(numbers):
        return len({tuple(sorted(english_tokens(n))) for n in numbers})

    cases = [[2300, 3200], [23001, 1023], [101, 100], [7, 70, 700], [102, 201, 21, 12], [5]]
    draw = _Random(4)
    for low, high, size in [
        (1000, 3000, 200),
        (0, 100_000, 500),
        (100, 1000, 300),
        (10_000, 40_000, 400),
        (1100, 1300, 150),
    ]:
        cases.append(draw.sample(range(low, high), size))
    for numbers in cases:
        got, what = attempt(numbers, numbers if len(numbers) < 8 else f"{len(numbers)} random numbers")
        want = groups(numbers) / len(numbers)
        assert math.isclose(got, want), (
            f"hint: {what}: expected {want}, got {got}: which numbers can a model that sees only the multiset of "
            "English tokens tell apart (count repeated words), and how many of each group can it translate right?"
        )
        assert math.isclose(attempt(numbers[::-1], "the same numbers, reversed")[0], got), (
            "hint: the order of the numbers is irrelevant"
        )
    got, _ = attempt(range(100_000), "0..99,999")
    assert math.isclose(got, 0.19738), f"hint: 0..99,999: expected 0.19738, got {got}"
    print(
        f"Exercise 4: OK (an untrained model tells 2,300 and 3,200 apart: {told_apart}; without positions: "
        f"{not the_same}; without source positions, at most {got:.1%} of 0..99,999 can be right)"
    )


def _untrained(seed, eos_id, scale, pad_id):
    # scaling up <eos>'s embedding row (also its output row: tied weights) makes rows finish at different steps
    torch.manual_seed(seed)
    model = Transformer(len(_english), len(_german), d_model=32, h=4, N=2, d_ff=64, dropout=0.0, pad_id=pad_id)
    with _no_grad():
        model.tgt_embed.weight[eos_id] *= scale
    return model.double().eval()


def translate_batch(student_translate_batch):
    """Exercise 5."""
    untampered()
    numbers = pad_right([_english.encode(english_tokens(n)) for n in [7, 23456, 12, 99999, 300, 40017, 5]], 0)
    generator = torch.Generator().manual_seed(5)
    random_src = pad_right([values(4 + torch.randint(30, (n,), generator=generator)) for n in (3, 9, 1, 6, 2)], 3)
    one_to_eight = _untrained(4, eos_id=7, scale=3.0, pad_id=0)
    cases = [  # (model, src, bos_id, eos_id, max_len): rows that finish after 1, 2, ... tokens, and rows that never do
        (one_to_eight, numbers, 4, 7, 8),
        (_untrained(7, eos_id=11, scale=3.2, pad_id=3), random_src, 9, 11, 8),
        (_untrained(1, eos_id=2, scale=3.5, pad_id=0), numbers, 1, 2, 10),
        (one_to_eight, numbers[5:6], 4, 7, 8),
        (one_to_eight, numbers, 4, 7, 1),
    ]
    for model, src, bos, eos, max_len in cases:
        what = (
            f"translate_batch(src {tuple(src.shape)} (pad_id {model.pad_id}), bos_id={bos}, eos_id={eos}, "
            f"max_len={max_len})"
        )
        with _no_grad():
            greedy = greedy_decode(model, src, bos, eos, max_len)
            want = []
            for r, row in enumerate(greedy):
                ends = (row == eos).nonzero()
                tokens = row[: int(ends[0]) + 1] if len(ends) else row
                tgt_in = torch.cat([torch.tensor([bos]), tokens[:-1]])[None]
                log_p = model(src[r : r + 1], tgt_in)[0].log_softmax(dim=-1).gather(-1, tokens[:, None]).sum().item()
                cross = model.attention_weights(src[r : r + 1], tgt_in)["cross"][-1][0].mean(dim=0)  # last layer
                want.append((tokens, log_p, cross))
        lengths = [len(tokens) for tokens, _, _ in want]
        rows_expected = [("EncoderBlock", len(src))] * len(model.encoder)
        for t in range(max(lengths)):
            rows_expected += [("DecoderBlock", sum(length > t for length in lengths))] * len(model.decoder)
        with block_passes(EncoderBlock, DecoderBlock) as seen:  # every block of every model, copies included
            with forbid(
                "scratch.l06_transformer.greedy_decode",
                "scratch.l10_decoding.generate",
                hint="write the loop from model.encode and decode_with_weights",
            ):
                got = call(student_translate_batch, model, src.clone(), bos, eos, max_len, what=what)
        assert type(got) in (list, tuple) and len(got) == len(src), (
            f"hint: {what}: return a list of {len(src)} tuples (tokens, log_prob, looked_at), one per row of src"
        )
        for r, (result, (tokens, log_p, cross)) in enumerate(zip(got, want)):
            assert type(result) is tuple and len(result) == 3, f"hint: {what}: row {r}: (tokens, log_prob, looked_at)"
            mine = tensor(result[0], f"{what}: row {r}: tokens, a 1-D torch.long tensor")
            assert mine.dtype == torch.long and mine.dim() == 1, (
                f"hint: {what}: row {r}: tokens is a 1-D torch.long tensor"
            )
            assert equal(mine, tokens), (
                f"hint: {what}: row {r}: expected the greedy tokens {values(tokens)}, got {values(mine)}: each row "
                "goes on from its own prefix, stops after eos_id, at most max_len tokens, rows in the order of src "
                "(lecture 6, section 5)"
            )
            my_log_p = number(result[1], f"{what}: row {r}: log_prob")
            assert abs(my_log_p - log_p) < 1e-8, (
                f"hint: {what}: row {r}: log_prob {my_log_p!r}, expected {log_p:.6f}: the log-probabilities of the "
                "chosen tokens, each at the step that chose it, <eos> included"
            )
            looked = tensor(result[2], f"{what}: row {r}: looked_at, one source position per token", shape=tokens.shape)
            assert looked.dtype == torch.long, f"hint: {what}: row {r}: looked_at is a torch.long tensor"
            chosen = cross[torch.arange(len(tokens)), looked.clamp(0, cross.shape[1] - 1)]
            assert bool((looked < cross.shape[1]).all()) and bool((chosen >= cross.max(dim=-1).values - 1e-9).all()), (
                f"hint: {what}: row {r}: looked_at {values(looked)}, expected {values(cross.argmax(dim=-1))}: which "
                "layer's cross-attention, which position of the prefix, averaged over what?"
            )
        assert plain([(name, rows) for name, rows in seen], "blocks") == rows_expected, (
            f"hint: {what}: the blocks got these batches of rows, in order: {[rows for _, rows in seen]}; expected "
            f"{[rows for _, rows in rows_expected]}: the encoder once on all {len(src)} rows, then one decoder pass "
            "per step on the rows that have not produced eos_id yet"
        )
    print("Exercise 5: OK")
