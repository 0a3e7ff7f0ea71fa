"""Checks of lecture 9's exercises (exercises/09_t5.ipynb); see course.checks."""

import copy
import random
import sys
import types

from transformers import AutoTokenizer, T5Config, T5ForConditionalGeneration
from transformers.models.t5.modeling_t5 import T5Attention

from course import checkpoints, text_to_text
from course.checks.support import BUILTINS, call, close, equal, plain, tensor, tools, torch, untampered, values
from scratch.l09_span_corruption import random_spans_noise_mask, sentinel_tokens, span_corruption

__builtins__ = BUILTINS  # the built-ins as they were when the set-up cell imported this module

forbid = tools.forbid
_deepcopy, _Random, _no_grad, _fork_rng = copy.deepcopy, random.Random, torch.no_grad, torch.random.fork_rng
_modules, _Function = sys.modules, types.FunctionType
_SHIFTS = ("_shift_right", "shift_right", "shift_tokens_right")


def _copies_of_the_shift():
    """Every shift of labels into decoder inputs in the transformers model files loaded now (BART's
    shift_tokens_right and its copies, MT5's and UMT5's _shift_right, ...): a solution cell that imports one has run
    before its check."""
    names = []
    for name, module in list(_modules.items()):
        if module is None or not name.startswith("transformers.models.") or ".modeling_" not in name:
            continue
        for attribute, value in list(vars(module).items()):
            if getattr(value, "__module__", None) != name:
                continue  # imported from another file: its own file lists it
            if attribute in _SHIFTS and isinstance(value, _Function):
                names.append(f"{name}.{attribute}")
            elif isinstance(value, type):
                names += [f"{name}.{attribute}.{shift}" for shift in _SHIFTS if shift in vars(value)]
    return names


_generate_text = text_to_text.text_to_text_generate

# The checks' own tiny T5 and tokenizer, loaded when the set-up imports this module.
_T5 = T5ForConditionalGeneration.from_pretrained(checkpoints.checkpoint_dir("tiny-t5"), attn_implementation="eager")
_T5 = _T5.eval()
_TOKENIZER = AutoTokenizer.from_pretrained(checkpoints.checkpoint_dir("tiny-t5"))


def restore(student_restore):
    """Exercise 1."""
    untampered()

    def restored(inputs, targets, sentinels, original):
        what = f"restore({inputs[:8]}..., {targets[:8]}..., sentinels {sentinels[:3]}...)"
        got = plain(call(student_restore, list(inputs), list(targets), list(sentinels), what=what), what)
        assert type(got) is list, f"hint: {what}: return a list of items"
        assert got == original, (
            f"hint: input {inputs} and target {targets} should give back {original}, got {got}: a sentinel is an "
            "item of `sentinels`, whatever it looks like; which target items fill which gap? (lecture 9, span "
            "corruption)"
        )

    words = (
        "Call me Ishmael . Some years ago , never mind how long precisely , having little or no money in my purse"
    ).split()
    paper = "Thank you for inviting me to your party last week .".split()
    again = "the whale saw the ship , and the ship saw the whale".split()  # the first word comes back, often
    t5_sentinels = sentinel_tokens(100)
    other_sentinels = [f"[gap {k}]" for k in range(100)]  # sentinels that do not look like T5's
    cases = [
        (paper, [i in (2, 3, 8) for i in range(len(paper))], t5_sentinels),
        (words, [i in (0, 1, 23, 24) for i in range(len(words))], t5_sentinels),
        (words, [i % 2 == 0 for i in range(len(words))], t5_sentinels),
        (again, [i in (1, 4, 5, 9) for i in range(len(again))], t5_sentinels),
        (again, [i in (0, 3, 7) for i in range(len(again))], other_sentinels),
        (paper, [False] * len(paper), t5_sentinels),  # nothing dropped
    ]
    rng = _Random(0)
    for text in (words, again):
        for density in (0.15, 0.5):
            cases += [
                (text, random_spans_noise_mask(len(text), density, 3.0, rng), sentinels)
                for sentinels in (t5_sentinels, other_sentinels)
                for _ in range(25)
            ]
    for original, mask, sentinels in cases:
        inputs, targets = span_corruption(original, mask, sentinels)
        restored(inputs, targets, sentinels, original)
    ids = list(range(1000, 1040))  # token ids, with repeated ids
    ids[7] = ids[30] = ids[0]
    for sentinel_ids in (list(range(32099, 31999, -1)), list(range(3, 103))):  # T5's ids, and small ones
        for _ in range(30):
            inputs, targets = span_corruption(ids, random_spans_noise_mask(len(ids), 0.3, 2.0, rng), sentinel_ids)
            restored(inputs, targets, sentinel_ids, ids)
    print("Exercise 1: OK")


def _expected_counts(lengths, bidirectional, num_buckets, max_distance):  # T5's own bias, with one head per bucket
    config = T5Config(
        d_model=8,
        d_kv=2,
        num_heads=num_buckets,
        relative_attention_num_buckets=num_buckets,
        relative_attention_max_distance=max_distance,
        is_decoder=not bidirectional,
    )
    config._attn_implementation = "eager"
    attention = T5Attention(config, has_relative_attention_bias=True, layer_idx=0)
    attention.relative_attention_bias.weight.data = torch.eye(num_buckets)  # head b is 1 where the bucket is b
    counts = torch.zeros(num_buckets, dtype=torch.long)
    for S in lengths:
        with _no_grad():
            one_hot = attention.compute_bias(S, S)[0]  # (num_buckets, S, S)
        seen = torch.ones(S, S).tril() if not bidirectional else torch.ones(S, S)  # the causal mask's pairs j <= i
        counts += (one_hot * seen).sum((1, 2)).round().long()
    return counts


def bucket_pair_counts(student_counts):
    """Exercise 2."""
    untampered()
    settings = [(True, 32, 128), (False, 32, 128), (True, 8, 20), (False, 16, 40), (True, 10, 50), (False, 12, 300)]
    length_lists = [[1], [5, 24], [3, 130, 17], [300], [2, 2, 2], []]
    shortcuts = (
        "transformers.models.t5.modeling_t5.T5Attention.compute_bias",
        "scratch.l02_positions.RelativePositionBias.forward",
    )
    sources = [source for source, _ in text_to_text.text_to_text_dataset(200, split="train")]
    t5_lengths = [len(ids) for ids in _TOKENIZER(sources).input_ids]
    config = _T5.config
    cases = [(b, n, m, lengths) for b, n, m in settings for lengths in length_lists]
    cases.append((True, config.relative_attention_num_buckets, config.relative_attention_max_distance, t5_lengths))
    for bidirectional, num_buckets, max_distance, lengths in cases:
        expected = _expected_counts(lengths, bidirectional, num_buckets, max_distance)
        what = (
            f"bucket_pair_counts({lengths if len(lengths) < 10 else 'the tiny T5 inputs lengths'}, "
            f"bidirectional={bidirectional}, num_buckets={num_buckets}, max_distance={max_distance})"
        )
        with forbid(*shortcuts, hint="count the pairs from their offsets and relative_position_bucket"):
            got = call(student_counts, list(lengths), bidirectional, num_buckets, max_distance, what=what)
        tensor(got, f"{what}: one count per bucket", shape=(num_buckets,), dtype=torch.int64)
        assert equal(got, expected), (
            f"hint: {what}: expected {values(expected)}, got {values(got)}: which pairs does a decoder's mask leave, "
            "which offset (key minus query, or query minus key?) goes into the bucket, with which settings? "
            "(lecture 2, section 7)"
        )
    never = values((expected == 0).nonzero().flatten())
    print(
        f"{len(sources)} training inputs of at most {max(t5_lengths)} pieces never reach the encoder's buckets "
        f"{never}: training on such inputs gives their biases no gradient (and bucket "
        f"{config.relative_attention_num_buckets // 2} no offset reaches at all: why?)"
    )
    print("Exercise 2: OK")


def _reference_log_probs(model, source, answers):
    results = []
    for answer in answers:  # one answer at a time: no padding at all
        enc = _TOKENIZER(source, text_target=answer, return_tensors="pt")
        with _no_grad():
            mean = model(input_ids=enc.input_ids, labels=enc.labels).loss  # mean over its pieces
        results.append(-mean * enc.labels.shape[1])
    return torch.stack(results)


def answer_log_probs(student_answer_log_probs):
    """Exercise 3."""
    untampered()
    questions = [
        ("translate English to German: seven", ["sieben", "siebzehn", "siebzig", "sechs", "siebenhundert"]),
        ("translate German to English: dreihundertzwölf", ["three hundred twelve", "three hundred", "twelve", "312"]),
        ("sort: 30 2 11", ["2 11 30", "30 2 11", "11 2 30"]),
        ("reverse: q w e r t y", ["y t r e w q"]),  # one candidate
        ("translate English to German: one", ["eins", "einhunderttausendeinhundertelf zwei drei vier fünf sechs"]),
    ]
    model = _deepcopy(_T5)
    other_start = _deepcopy(_T5)  # the same weights, another decoder start id
    other_start.config.decoder_start_token_id = _TOKENIZER.convert_tokens_to_ids("▁")
    other_pad = _deepcopy(_TOKENIZER)  # pads with <unk> instead of <pad>
    other_pad.pad_token = other_pad.unk_token
    runs = [
        (model, _TOKENIZER, "the tiny T5"),
        (other_start, _TOKENIZER, f"decoder_start_token_id = {other_start.config.decoder_start_token_id}"),
        (model, other_pad, f"pad id {other_pad.pad_token_id}"),
    ]
    shortcuts = (
        "transformers.models.t5.modeling_t5.T5ForConditionalGeneration._shift_right",
        "scratch.l09_span_corruption.shift_right",
        "torch.nn.functional.cross_entropy",
        "torch.nn.functional.nll_loss",
    )
    for run_model, tokenizer, name in runs:
        expected = [_reference_log_probs(run_model, source, answers) for source, answers in questions]
        decoder = run_model.decoder
        calls = []

        def counting_forward(*args, _forward=decoder.forward, _calls=calls, **kwargs):  # each call's batch size
            given = kwargs.get("input_ids", args[0] if args else None)
            _calls.append(None if given is None else given.shape[0])
            return _forward(*args, **kwargs)

        decoder.forward = counting_forward
        got = []
        try:
            with forbid(
                *shortcuts,
                *(name for name in _copies_of_the_shift() if name not in shortcuts),
                hint="build the decoder input from the labels yourself and read the log-probabilities from the logits",
            ):
                for source, answers in questions:
                    calls.clear()
                    what = f"answer_log_probs({name}, {source!r}, {len(answers)} answers)"
                    got.append(
                        (call(student_answer_log_probs, run_model, tokenizer, source, list(answers), what=what), what)
                    )
                    assert calls == [len(answers)], (
                        f"hint: {what}: the decoder ran {len(calls)} times (batches {calls}): make ONE model call with "
                        f"all {len(answers)} candidates as one padded batch"
                    )
        finally:
            del decoder.forward
        for (source, answers), (mine, what), theirs in zip(questions, got, expected):
            tensor(mine, f"{what}: one number per candidate answer", shape=(len(answers),))
            assert close(mine, theirs, atol=1e-4), (
                f"hint: {what}: got {[f'{v:.2f}' for v in values(mine)]}, expected "
                f"{[f'{v:.2f}' for v in values(theirs)]}: what does the decoder read at each position (from which "
                "start id), which pieces are scored, and which positions are padding? (lecture 9)"
            )
            if run_model is model and len(answers) > 1:
                best = answers[int(mine.argmax())]
                assert best == _generate_text(_T5, _TOKENIZER, [source])[0], (
                    "hint: the best-scored answer should be the one greedy decoding writes"
                )
    print("Exercise 3: OK")


def t5_self_attention_weights(student_weights):
    """Exercise 4."""
    untampered()
    sources = ["reverse: q w e", "sort: " + " ".join(str(n) for n in range(200, 0, -9))]  # 6 and 83 pieces
    cases = []  # (name, x, module, expected weights)
    for source in sources:
        ids = _TOKENIZER(source, return_tensors="pt").input_ids  # (1, S)
        with _no_grad():
            encoder = _T5.encoder(input_ids=ids, output_attentions=True)
            block = _T5.encoder.block[0].layer[0]
            x = block.layer_norm(_T5.encoder.embed_tokens(ids))[0]  # (S, d_model)
            cases.append(
                (f"the tiny T5's encoder, {ids.shape[1]} pieces", x, block.SelfAttention, encoder.attentions[0][0])
            )
            decoder = _T5.decoder(
                input_ids=ids, encoder_hidden_states=encoder.last_hidden_state, output_attentions=True
            )
            block = _T5.decoder.block[0].layer[0]
            x = block.layer_norm(_T5.decoder.embed_tokens(ids))[0]
            cases.append(
                (f"the tiny T5's decoder, {ids.shape[1]} pieces", x, block.SelfAttention, decoder.attentions[0][0])
            )
    with _fork_rng():
        torch.manual_seed(4)
        for d_model, d_kv, h, num_buckets, max_distance in ((24, 5, 3, 10, 20), (16, 8, 4, 6, 12)):
            for is_decoder in (False, True):
                config = T5Config(
                    d_model=d_model,
                    d_kv=d_kv,
                    num_heads=h,
                    relative_attention_num_buckets=num_buckets,
                    relative_attention_max_distance=max_distance,
                    is_decoder=is_decoder,
                )
                config._attn_implementation = "eager"
                module = T5Attention(config, has_relative_attention_bias=True, layer_idx=0).eval()
                for S in (1, 7, 40):  # 40 > max_distance: the last buckets are reached
                    x = torch.randn(S, d_model)
                    mask = (
                        torch.full((S, S), torch.finfo(torch.float32).min).triu(1)[None, None] if is_decoder else None
                    )
                    with _no_grad():
                        expected = module(x[None], mask=mask, output_attentions=True)[2][0]
                    name = (
                        f"{'a decoder' if is_decoder else 'an encoder'} module with d_model = {d_model}, h = {h}, "
                        f"d_k = {d_kv}, num_buckets = {num_buckets}, max_distance = {max_distance}, S = {S}"
                    )
                    cases.append((name, x, module, expected))
    shortcuts = (
        "transformers.models.t5.modeling_t5.T5Attention.forward",
        "transformers.models.t5.modeling_t5.T5Attention.compute_bias",
        "transformers.models.t5.modeling_t5.eager_attention_forward",
        "scratch.l02_positions.RelativePositionBias.forward",
    )
    for name, x, module, expected in cases:
        what = f"t5_self_attention_weights({name})"
        with (
            forbid(
                *shortcuts,
                hint="compute Q, K, the scores and the bias yourself (relative_position_bucket gives the buckets)",
            ),
            _no_grad(),
        ):
            weights = call(student_weights, x.clone(), module, what=what)
        tensor(weights, f"{what}: (h, S, S); d_k is the module's key_value_proj_dim", shape=expected.shape)
        if module.is_decoder:
            assert bool((weights.triu(1) < 1e-6).all()), f"hint: {what}: a decoder position attends only to keys j <= i"
        assert close(weights, expected, atol=1e-5), (
            f"hint: {what}: the weights differ: how does T5 scale its scores, which offset's bucket (bidirectional or "
            "causal, with this module's settings) gives the bias, and over which dimension is the softmax? "
            "(lecture 9, relative position buckets)"
        )
    print("Exercise 4: OK")


def greedy_generate(student_generate):
    """Exercise 6."""
    untampered()
    sources = [
        "translate English to German: nine",
        "reverse: a b c d e f g h",
        "translate German to English: dreiundzwanzigtausendvierhunderteins",
        "sort: 30 2 11",
        "translate English to German: seventy-seven thousand seven hundred seventy-seven",
    ]
    batch = _TOKENIZER(sources, padding=True, return_tensors="pt")
    models = [("the tiny T5", _deepcopy(_T5))]
    for start, end, pad in ((0, _TOKENIZER.convert_tokens_to_ids("▁"), 5), (3, 1, 7)):
        other = _deepcopy(_T5)  # the same weights, other special ids
        for settings in (other.config, other.generation_config):
            settings.decoder_start_token_id, settings.eos_token_id, settings.pad_token_id = start, end, pad
        models.append(
            (f"a copy with decoder_start_token_id = {start}, eos_token_id = {end}, pad_token_id = {pad}", other)
        )
    lengths = (1, 3, 30)
    shortcuts = (
        "transformers.generation.utils.GenerationMixin.generate",
        "course.text_to_text.text_to_text_generate",
        "scratch.l10_decoding.generate",
    )
    for name, model in models:
        expected = {n: model.generate(**batch, do_sample=False, num_beams=1, max_new_tokens=n) for n in lengths}
        encoder = model.encoder
        encoder_calls = []

        def counting_forward(*args, _forward=encoder.forward, _calls=encoder_calls, **kwargs):
            _calls.append(1)
            return _forward(*args, **kwargs)

        encoder.forward = counting_forward
        got = {}
        try:
            with forbid(*shortcuts, hint="write the loop: encoder once, then one decoder step per new piece"):
                for n in lengths:
                    what = f"greedy_generate({name}, max_new_tokens={n})"
                    got[n] = call(
                        student_generate,
                        model,
                        batch.input_ids.clone(),
                        batch.attention_mask.clone(),
                        max_new_tokens=n,
                        what=what,
                    )
        finally:
            del encoder.forward
        for n in lengths:
            what = f"greedy_generate({name}, max_new_tokens={n})"
            tensor(got[n], f"{what}: a tensor of token ids")
            assert got[n].dtype == torch.long, f"hint: {what}: return a tensor of token ids (torch.long)"
            assert tuple(got[n].shape) == tuple(expected[n].shape), (
                f"hint: {what}: shape {tuple(got[n].shape)}, generate returns {tuple(expected[n].shape)}: when does "
                "the loop stop? (the ids come from model.config)"
            )
            for row, (mine, theirs) in enumerate(zip(got[n], expected[n])):
                assert equal(mine, theirs), (
                    f"hint: {what}, {sources[row]!r}: got {values(mine)}, generate gives {values(theirs)}: where does "
                    "a row start, what does the mask tell the encoder and the decoder, and what does a row get "
                    "after it has ended? (lecture 9)"
                )
        assert len(encoder_calls) == len(lengths), (
            f"hint: {name}: the encoder ran {len(encoder_calls)} times for {len(lengths)} calls: run it once per call"
        )
    print("Exercise 6: OK")


_TEACH_STEPS, _TEACH_THRESHOLD = 40, 0.6  # the exercise's budget and the held-out share it must reach


def teach(student_teach):
    """Exercise 5."""
    untampered()
    train_pairs = text_to_text.text_to_text_dataset(200, "train", seed=0, tasks=["largest"])
    test_pairs = text_to_text.text_to_text_dataset(100, "val", seed=1, tasks=["largest"])
    model = _deepcopy(_T5)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    pad = _TOKENIZER.pad_token_id
    scored = []  # the batch size of each forward pass in train mode
    seen = []  # the input ids of each training batch

    def watching_forward(*args, _forward=model.forward, **kwargs):
        if model.training:
            labels = kwargs.get("labels")
            assert labels is not None, (
                "hint: pass the targets to the model as labels=...: transformers then builds the decoder input and "
                "computes the loss (section 7)"
            )
            assert not bool((labels == pad).any()), (
                f"hint: the labels hold the padding id {pad}: padded label positions must be -100, or the model "
                "is trained to write padding (section 7)"
            )
            scored.append(int(labels.shape[0]))
            batch_ids = kwargs.get("input_ids")
            if batch_ids is not None:
                seen.append(values(batch_ids))
                assert len(seen) < 3 or seen[-1] != seen[0] or seen[-2] != seen[0], (
                    "hint: the same batch again and again: draw a new batch of 16 pairs at every step"
                )
        return _forward(*args, **kwargs)

    model.forward = watching_forward
    shortcuts = (
        "course.text_to_text.fine_tune",
        "course.text_to_text.text_to_text_batch",
        "scratch.l06_training.train",
        "transformers.trainer.Trainer.train",
    )
    held_out = ("course.text_to_text.text_to_text_dataset", "course.text_to_text.text_to_text_example")
    # one step on targets of different lengths first (their labels are padded), then the task itself
    uneven = text_to_text.text_to_text_dataset(16, "train", seed=1, tasks=["sort descending"])
    what = "teach(a copy of the tiny T5, tokenizer, 16 'sort descending:' pairs, steps=1, seed=0)"
    try:
        with forbid(*shortcuts, hint="write the loop: batches, the loss from labels, an optimiser step"):
            with forbid(*held_out, hint="train on the pairs you are given: drawing others can draw held-out lists"):
                call(student_teach, model, _TOKENIZER, list(uneven), 1, seed=0, what=what)
                assert scored, f"hint: {what}: the model was never called in train mode with labels"
                assert not model.training, f"hint: {what}: leave the model in eval mode (dropout off) when done"
                with _no_grad():
                    for name, parameter in model.named_parameters():
                        parameter.copy_(before[name])  # the tiny T5's weights again
                scored.clear()
                seen.clear()
                what = f"teach(a copy of the tiny T5, tokenizer, 200 'largest:' pairs, steps={_TEACH_STEPS}, seed=0)"
                call(student_teach, model, _TOKENIZER, list(train_pairs), _TEACH_STEPS, seed=0, what=what, seconds=300)
    finally:
        del model.forward
    assert len(scored) >= _TEACH_STEPS and all(size == 16 for size in scored), (
        f"hint: {what}: the model was trained on {len(scored)} batches of sizes {sorted(set(scored))}; train it "
        f"(model.train()) for {_TEACH_STEPS} steps of 16 pairs"
    )
    changed = [name for name, p in model.named_parameters() if not equal(p.detach(), before[name])]
    assert changed, f"hint: {what}: the given model's weights did not change: train that model, in place"
    assert not model.training, f"hint: {what}: leave the model in eval mode (dropout off) when training is done"
    answers = _generate_text(model, _TOKENIZER, [s for s, _ in test_pairs])
    right = sum(a == t for a, (_, t) in zip(answers, test_pairs)) / len(test_pairs)
    assert right >= _TEACH_THRESHOLD, (
        f"hint: {what}: {right:.0%} of 100 held-out lists answered exactly, {_TEACH_THRESHOLD:.0%} needed (e.g. "
        f"{test_pairs[0][0]!r} -> {answers[0]!r}, wanted {test_pairs[0][1]!r}): does the loss fall? the learning "
        "rate, zero_grad before backward"
    )
    print(f"Exercise 5: OK ({right:.0%} of 100 held-out lists exactly right)")
