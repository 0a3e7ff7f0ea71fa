"""Checks of lecture 7's exercises (exercises/07_bert.ipynb); see course.checks."""

import copy
from collections import Counter

from torch import nn
from transformers import AutoModelForSequenceClassification, AutoTokenizer, BertConfig, BertForMaskedLM
from transformers.utils import logging as _hf_logging

from course import assets, corpora
from course.checkpoints import load_lora_mlm
from course.checks.support import (
    BUILTINS,
    call,
    close,
    deadline,
    equal,
    plain,
    tensor,
    tools,
    torch,
    untampered,
    values,
)
from scratch.l07_masking import IGNORE_INDEX

__builtins__ = BUILTINS  # the built-ins as they were when the set-up cell imported this module

forbid = tools.forbid
_no_grad, _fork_rng = torch.no_grad, torch.random.fork_rng
_deepcopy = copy.deepcopy
_AdamW, _Parameter, _Module, _Linear = torch.optim.AdamW, nn.Parameter, nn.Module, nn.Linear

# The checks' own tokenizer and fill-mask model, loaded when the set-up imports this module, and a second masked LM.
_TOKENIZER = AutoTokenizer.from_pretrained(assets.minilm_dir())
_MLM, _ = load_lora_mlm()
_CLS, _SEP, _MASK, _PAD = (_TOKENIZER.convert_tokens_to_ids(t) for t in ("[CLS]", "[SEP]", "[MASK]", "[PAD]"))
_V = len(_TOKENIZER)
with _fork_rng():
    torch.manual_seed(6)
    _SMALL_MLM = BertForMaskedLM(
        BertConfig(
            vocab_size=_V,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            initializer_range=0.5,
        )
    ).eval()
TOKENIZER_SHORTCUTS = (
    "transformers.PreTrainedTokenizerBase.__call__",
    "transformers.PreTrainedTokenizerBase.decode",
    "transformers.PreTrainedTokenizerBase.batch_decode",
)


def segment_ids(student_segment_ids):
    """Exercise 1."""
    untampered()

    def segments(input_ids, sep_id, pad_id, where):
        what = f"segment_ids({where})"
        with forbid(
            *TOKENIZER_SHORTCUTS, hint="compute the segment ids from the ids themselves, without the tokenizer"
        ):
            got = call(student_segment_ids, input_ids.clone(), sep_id, pad_id, what=what)
        tensor(got, f"{what}: one segment id per position", shape=input_ids.shape, dtype=torch.int64)
        return got

    pairs = _TOKENIZER(
        ["Call me Ishmael.", "The whale surfaced near the ship.", "Ahoy!"],
        ["Some years ago, never mind how long precisely.", "Ahab saw it.", "Thar she blows, a hump like a snow hill!"],
        padding=True,
        return_tensors="pt",
    )
    singles = _TOKENIZER(
        ["Call me Ishmael.", "It was the Pequod, a ship of the old school, rather small if anything."],
        padding=True,
        return_tensors="pt",
    )
    for batch, where in ((pairs, "pairs of sentences"), (singles, "single sentences")):
        got = segments(batch.input_ids, _SEP, _PAD, where)
        assert equal(got, batch.token_type_ids), (
            f"hint: segment_ids({where}): differs from the tokenizer's: which segment does each [SEP] belong to, "
            "and what do padding positions get? (lecture 7, BERT's input format)"
        )
    generator = torch.Generator().manual_seed(7)
    for cls_id, sep_id, pad_id in ((2, 3, 0), (101, 102, 1), (5, 4, 3), (260, 300, 299)):  # other tokenizers' ids
        rows, expected = [], []
        T = 24
        for i in range(12):  # pairs and single sentences, with much or no padding
            a = int(torch.randint(1, 10, (1,), generator=generator))
            b = (
                0
                if i % 4 == 0
                else T - 3 - a
                if i == 1
                else int(torch.randint(1, T - 3 - a + 1, (1,), generator=generator))
            )
            if b == 0:  # one sentence
                row, segment = [cls_id] + [1000] * a + [sep_id], [0] * (a + 2)
            else:
                row, segment = [cls_id] + [1000] * a + [sep_id] + [1000] * b + [sep_id], [0] * (a + 2) + [1] * (b + 1)
            rows.append(row + [pad_id] * (T - len(row)))
            expected.append(segment + [0] * (T - len(segment)))
        input_ids = torch.tensor(rows)
        filler = torch.randint(400, 30000, (int((input_ids == 1000).sum()),), generator=generator)
        input_ids[input_ids == 1000] = filler
        where = f"[CLS] = {cls_id}, [SEP] = {sep_id}, [PAD] = {pad_id}"
        got = segments(input_ids, sep_id, pad_id, where)
        wrong = (got != torch.tensor(expected)).any(1)
        assert not bool(wrong.any()), (
            f"hint: segment_ids({where}): the segment ids differ (the ids you are given, not MiniLM's): first wrong "
            f"row {values(input_ids[wrong][0])}"
        )
    print("Exercise 1: OK")


def corrupt_fixed(student_corrupt_fixed):
    """Exercise 2."""
    untampered()

    def corrupted(ids, special, prob, max_predictions, mask_id, vocab_size, seed, global_seed=1):
        """The student's function on a fresh generator, with torch's global generator somewhere else."""
        torch.manual_seed(global_seed)
        generator = torch.Generator().manual_seed(seed)
        what = (
            f"corrupt_fixed(ids {tuple(ids.shape)}, prob {prob}, max_predictions {max_predictions}, mask_id "
            f"{mask_id}, vocab_size {vocab_size})"
        )
        with forbid("scratch.l07_masking.mask_tokens", hint="write the corruption yourself"):
            args = (ids.clone(), special.clone(), prob, max_predictions, mask_id, vocab_size, generator)
            out = call(student_corrupt_fixed, *args, what=what)
        assert type(out) is tuple and len(out) == 3, f"hint: {what}: return (inputs, positions, targets)"
        batch, T = ids.shape
        inputs = tensor(out[0], f"{what}: inputs, (batch, T)", shape=(batch, T), dtype=torch.int64)
        positions = tensor(out[1], f"{what}: positions", shape=(batch, max_predictions), dtype=torch.int64)
        targets = tensor(out[2], f"{what}: targets", shape=(batch, max_predictions), dtype=torch.int64)
        n = values((~special).sum(1))
        k = torch.tensor([min(max_predictions, max(1, round(prob * m))) if m else 0 for m in n])
        listed = targets != IGNORE_INDEX
        assert equal(listed.sum(1), k), (
            f"hint: {what}: a row with n ordinary tokens gets exactly k picks (the statement's k); for n = {n[:6]} "
            f"that is {values(k[:6])}, you listed {values(listed.sum(1)[:6])}"
        )
        assert bool((listed == (torch.arange(max_predictions) < k[:, None])).all()), (
            f"hint: {what}: each row lists its picks first, then pads (positions 0, targets -100)"
        )
        assert not bool(positions[~listed].any()), f"hint: {what}: pad the positions with 0"
        assert bool((positions[:, 1:] > positions[:, :-1])[listed[:, 1:]].all()), (
            f"hint: {what}: list each row's picked positions in increasing order, each once"
        )
        assert not bool(special.gather(1, positions)[listed].any()), (
            f"hint: {what}: [CLS], [SEP] and [PAD] are never picked"
        )
        assert equal(targets[listed], ids.gather(1, positions)[listed]), (
            f"hint: {what}: targets hold the ORIGINAL ids at the picked positions"
        )
        picked = torch.zeros_like(special).scatter(1, positions, listed)
        assert equal(inputs[~picked], ids[~picked]), f"hint: {what}: positions that were not picked stay unchanged"
        return inputs, positions, targets, picked

    # many rows of 38 ordinary tokens between [CLS] and [SEP]: k = round(0.15 * 38) = 6 picks each
    ids = torch.randint(1000, _V, (4000, 40), generator=torch.Generator().manual_seed(1))
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True
    inputs, positions, targets, picked = corrupted(ids, special, 0.15, 20, _MASK, _V, seed=0)
    again = corrupted(ids, special, 0.15, 20, _MASK, _V, seed=0, global_seed=2)
    other_seed = corrupted(ids, special, 0.15, 20, _MASK, _V, seed=5)
    assert equal(again[0], inputs) and equal(again[1], positions), (
        "hint: draw every random number from the generator you are given, not from torch's global generator"
    )
    assert not equal(other_seed[1], positions), "hint: a different generator seed must pick different positions"
    rate = picked[:, 1:-1].float().mean(0)  # how often each ordinary position is picked
    assert (rate - 6 / 38).abs().max().item() < 0.035, (
        f"hint: every ordinary position is equally likely to be picked (6 / 38 = 0.16 each); got rates from "
        f"{rate.min().item():.2f} to {rate.max().item():.2f}"
    )
    neighbour = ((picked[:, 1:-2] & picked[:, 2:-1]).sum() / picked[:, 1:-2].sum()).item()
    assert abs(neighbour - 5 / 37) < 0.03, (
        f"hint: every SET of k positions is equally likely, not a run of neighbours: after a picked position the "
        f"next one is picked {neighbour:.2f} of the time, expected 5 / 37 = 0.14"
    )
    seen, original = inputs[picked], ids[picked]
    masked = (seen == _MASK).float().mean().item()
    kept = (seen == original).float().mean().item()
    replaced = seen[(seen != _MASK) & (seen != original)]
    assert abs(masked - 0.8) < 0.015, f"hint: 80 % of the picked tokens become mask_id, got {masked:.3f}"
    assert abs(kept - 0.1) < 0.015, f"hint: 10 % of the picked tokens stay unchanged, got {kept:.3f}"
    assert abs(len(replaced) / len(seen) - 0.1) < 0.015, "hint: 10 % of the picked tokens become a random token"
    share_per_tenth = torch.bincount(replaced * 10 // _V, minlength=10).float() / len(replaced)
    assert (share_per_tenth - 0.1).abs().max().item() < 0.03 and replaced.unique().numel() > 1000, (
        "hint: the random token is drawn uniformly from the whole vocabulary [0, vocab_size), a fresh draw for each "
        f"position (share of the replacements in each tenth of it: {[round(s, 2) for s in values(share_per_tenth)]})"
    )
    # another tokenizer: 50 ids, [MASK] = 7, rows with 0 to 22 ordinary tokens and much padding, at most 4 picks
    generator = torch.Generator().manual_seed(3)
    lengths = torch.tensor([0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 18, 19, 20, 21, 22] * 150)
    small_ids = torch.randint(10, 50, (len(lengths), 24), generator=generator)
    small_special = torch.arange(24) > lengths[:, None]  # [CLS] at 0, then n tokens, then [SEP] and [PAD]
    small_special[:, 0] = True
    inputs, positions, targets, picked = corrupted(small_ids, small_special, 0.3, 4, 7, 50, seed=1)
    seen, original = inputs[picked], small_ids[picked]
    assert abs((seen == 7).float().mean().item() - 0.8) < 0.03, "hint: picked tokens become the mask_id you are given"
    replaced = seen[(seen != 7) & (seen != original)]
    assert bool((replaced < 50).all()) and bool((replaced >= 0).all()), (
        "hint: the random token comes from [0, vocab_size) of the call (here 50), not from MiniLM's vocabulary"
    )
    share_per_tenth = torch.bincount(replaced * 10 // 50, minlength=10).float() / len(replaced)
    assert (share_per_tenth - 0.1).abs().max().item() < 0.04, (
        f"hint: draw the random token uniformly from [0, vocab_size) (shares per tenth: "
        f"{[round(s, 2) for s in values(share_per_tenth)]})"
    )
    corrupted(ids[:3, :5], special[:3, :5], 0.6, 8, _MASK, _V, seed=2)  # T = 5 < max_predictions: pad the lists
    print(f"{int(picked.sum())} picks in {len(lengths)} rows of another vocabulary; every row got exactly its k")
    print("Exercise 2: OK")


def nsp_pairs(student_nsp_pairs):
    """Exercise 3."""
    untampered()

    def paired(documents, seed, global_seed=1):
        torch.manual_seed(global_seed)
        generator = torch.Generator().manual_seed(seed)
        state = generator.get_state()
        what = f"nsp_pairs({len(documents)} documents, generator seeded {seed})"
        with forbid("course.bert_tasks.sentence_pairs", hint="build the pairs yourself"):
            pairs = call(student_nsp_pairs, [list(sentences) for sentences in documents], generator, what=what)
        pairs = plain(pairs, what)
        assert type(pairs) is list and all(type(p) is tuple and len(p) == 3 for p in pairs), (
            f"hint: {what}: return a list of (A, B, label) tuples"
        )
        assert not equal(generator.get_state(), state), f"hint: {what}: draw the random numbers from the generator"
        return pairs

    documents = [[f"Document {d}, sentence {i}." for i in range(10 + d % 7)] for d in range(150)]
    where = {s: (d, i) for d, sentences in enumerate(documents) for i, s in enumerate(sentences)}
    pairs = paired(documents, seed=0)
    again = paired(documents, seed=0, global_seed=2)
    assert len(pairs) == sum(len(s) - 1 for s in documents), "hint: one example for every sentence that has a successor"
    assert [where.get(a) for a, _, _ in pairs] == [
        (d, i) for d, s in enumerate(documents) for i in range(len(s) - 1)
    ], "hint: A runs through the documents and their sentences in order"
    assert pairs == again, "hint: draw every random number from the generator, not from torch's global generator"
    assert pairs != paired(documents, seed=1), "hint: another generator seed must give other pairs"
    assert all(label in (0, 1) for _, _, label in pairs), "hint: labels are 0 (IsNext) and 1 (NotNext)"
    for a, b, label in pairs:
        assert b in where, f"hint: B {b!r} is not a sentence of the documents"
        (d, i), (d_b, i_b) = where[a], where[b]
        if label == 0:
            assert (d_b, i_b) == (d, i + 1), "hint: an IsNext B is the sentence right after A, in the same document"
        else:
            assert d_b != d, "hint: a NotNext B comes from a DIFFERENT document (never A's own)"
    not_next = [where[b] for _, b, label in pairs if label == 1]
    offsets = Counter((where[b][0] - where[a][0]) % len(documents) for a, b, label in pairs if label == 1)
    share = len(not_next) / len(pairs)
    assert abs(share - 0.5) < 0.05, f"hint: half of the examples are NotNext, got {share:.2f}"
    documents_used = {d for d, _ in not_next}
    first_sentences = sum(i == 0 for _, i in not_next) / len(not_next)
    assert len(documents_used) > 120 and first_sentences < 0.2 and max(offsets.values()) < 0.05 * len(not_next), (
        "hint: a NotNext B is a random sentence of a random other document: spread over documents and positions"
    )
    # documents of very different lengths: 40 of one sentence, 40 of two, 40 of 60
    uneven = [[f"Short {d}."] for d in range(40)] + [[f"Pair {d}, {i}." for i in range(2)] for d in range(40)]
    uneven += [[f"Long {d}, {i}." for i in range(60)] for d in range(40)]
    where = {s: (d, i) for d, sentences in enumerate(uneven) for i, s in enumerate(sentences)}
    pairs = paired(uneven, seed=3)
    assert len(pairs) == 40 + 40 * 59, "hint: a document of one sentence gives no example (it has no successor)"
    not_next = [where[b][0] for _, b, label in pairs if label == 1 and b in where]
    from_short = sum(d < 40 for d in not_next) / len(not_next)
    from_long = sum(d >= 80 for d in not_next) / len(not_next)
    assert abs(from_short - 40 / 119) < 0.06 and abs(from_long - 39.5 / 119) < 0.06, (
        f"hint: the other document is drawn uniformly from the other documents, then a sentence in it; got "
        f"{from_short:.0%} of the NotNext sentences from one-sentence documents and {from_long:.0%} from the long ones"
    )
    two = paired([["Alpha one.", "Alpha two."], ["Beta one.", "Beta two.", "Beta three."]], seed=4)
    assert all(label == 0 or a.split()[0] != b.split()[0] for a, b, label in two), (
        "hint: with two documents, a NotNext B always comes from the other one"
    )
    print(
        f"{len(pairs)} pairs of uneven documents: {from_short:.0%} of the NotNext sentences from one-sentence documents"
    )
    print("Exercise 3: OK")


_TEXT = (
    "Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in my purse, "
    "and nothing particular to interest me on shore, I thought I would sail about a little and see the watery "
    "part of the world. It is a way I have of driving off the spleen, and regulating the circulation. "
    "Whenever I find myself growing grim about the mouth; whenever it is a damp, drizzly November in my soul, "
    "I account it high time to get to sea as soon as I can. Unbelievably, the harpooneers' tattooings puzzled "
    "Queequeg's shipmates."
)


def whole_word_picks(student_whole_word_picks):
    """Exercise 4."""
    untampered()
    tokens = _TOKENIZER.convert_ids_to_tokens(_TOKENIZER(_TEXT).input_ids) + ["[PAD]"] * 5
    special = ("[CLS]", "[SEP]", "[PAD]")
    word_of, words = [], -1  # word index of each piece (-1: [CLS], [SEP], [PAD])
    for token in tokens:
        words += token not in special and not token.startswith("##")
        word_of.append(-1 if token in special else words)
    word_of = torch.tensor(word_of)
    n_words = words + 1
    pieces_per_word = torch.bincount(word_of[word_of >= 0], minlength=n_words)
    first_pieces = [(w, token) for w, token in zip(values(word_of), tokens) if w >= 0 and not token.startswith("##")]
    repeated = [(v, w) for v, a in first_pieces for w, b in first_pieces if v < w and a == b]  # the same word twice

    def picks(prob, seed, global_seed=1):
        torch.manual_seed(global_seed)
        what = f"whole_word_picks({len(tokens)} tokens, prob={prob})"
        with forbid("scratch.l07_masking.mask_tokens", hint="pick words, not pieces"):
            got = call(student_whole_word_picks, list(tokens), prob, torch.Generator().manual_seed(seed), what=what)
        return tensor(got, f"{what}: one bool per token", shape=(len(tokens),), dtype=torch.bool)

    for prob in (0.15, 0.5):
        runs = torch.stack([picks(prob, seed) for seed in range(400)])
        assert equal(picks(prob, 0, global_seed=2), runs[0]), "hint: draw every random number from the generator"
        assert not bool(runs[:, word_of < 0].any()), "hint: [CLS], [SEP] and [PAD] are never picked"
        picked_pieces = torch.zeros(400, n_words).index_add_(1, word_of[word_of >= 0], runs[:, word_of >= 0].float())
        all_or_none = (picked_pieces == 0) | (picked_pieces == pieces_per_word.float())
        assert bool(all_or_none.all()), (
            "hint: the pieces of a word are picked together: all of them or none ('##' continues a word)"
        )
        word_picked = picked_pieces > 0  # (runs, words)
        rate = word_picked.float().mean().item()
        assert abs(rate - prob) < 0.02, f"hint: each WORD is picked with probability prob = {prob}, got {rate:.3f}"
        long_words = pieces_per_word >= 2
        rate_long = word_picked[:, long_words].float().mean().item()
        assert abs(rate_long - prob) < 0.04, (
            f"hint: a word of several pieces is picked as often as a one-piece word ({rate_long:.2f} here, prob = "
            f"{prob}): how many draws does a word get?"
        )
        both = torch.stack([word_picked[:, v] & word_picked[:, w] for v, w in repeated]).float().mean().item()
        assert abs(both - prob**2) < 0.04, (
            f"hint: a word that occurs again is drawn again: both occurrences are picked together {both:.2f} of the "
            f"time, expected prob ** 2 = {prob**2:.2f}"
        )
    print(
        f"{n_words} words ({int(long_words.sum())} of several pieces, {len(repeated)} pairs of the same word); "
        f"picked {rate:.2f} of the words at prob = 0.5"
    )
    print("Exercise 4: OK")


def _pll_reference(model, ids):  # one masked copy at a time
    T = len(ids)
    with _no_grad():
        return torch.stack(
            [
                model(input_ids=ids.clone().index_fill_(0, torch.tensor([t]), _MASK)[None])
                .logits[0, t]
                .log_softmax(-1)[ids[t]]
                for t in range(1, T - 1)
            ]
        )


def token_log_probs(student_token_log_probs):
    """Exercise 5."""
    untampered()

    def scored(model, ids, where):
        calls = []
        what = f"token_log_probs({where}, {len(ids)} ids)"

        def recording_forward(*args, _forward=model.forward, **kwargs):
            calls.append(kwargs.get("input_ids", args[0] if args else None))
            return _forward(*args, **kwargs)

        model.forward = recording_forward
        try:
            got = call(student_token_log_probs, model, ids.clone(), what=what)
        finally:
            del model.forward
        T = len(ids)
        assert len(calls) == 1, (
            f"hint: {what}: call the model you are given once, with all T - 2 copies in one batch ({len(calls)} calls)"
        )
        batch = calls[0]
        assert type(batch) is torch.Tensor and tuple(batch.shape) == (T - 2, T), (
            f"hint: {what}: the batch holds T - 2 = {T - 2} copies of the sentence, one per scored position, as "
            f"input_ids; got {tuple(getattr(batch, 'shape', ()))}"
        )
        masks = batch == _MASK
        assert equal(masks, torch.eye(T, dtype=torch.bool)[1 : T - 1]), (
            f"hint: {what}: copy t masks position t and only it ([CLS] and [SEP] are never masked; a word that occurs "
            "twice is masked in one place at a time)"
        )
        assert equal(batch[~masks], ids.repeat(T - 2, 1)[~masks]), "hint: every other position keeps its original id"
        tensor(got, f"{what}: one log-probability per scored position, t = 1 .. T - 2", shape=(T - 2,))
        assert close(got, _pll_reference(model, ids), atol=1e-4), (
            f"hint: {what}: differs: which copy's logits, at which position, normalised over what, and which entry? "
            "(lecture 7, masked LM)"
        )
        return got

    sentence = "The dog ate the food because it was hungry."  # 'the' twice
    ids = _TOKENIZER(sentence, return_tensors="pt").input_ids[0]
    scored(_MLM, ids, "the fill-mask model")
    scored(_SMALL_MLM, ids, "another masked LM")
    scored(_SMALL_MLM, _TOKENIZER("Ahoy!", return_tensors="pt").input_ids[0], "a three-piece sentence")
    scored(_MLM, _TOKENIZER("Whale", return_tensors="pt").input_ids[0], "one word between [CLS] and [SEP]")
    scrambled = "Hungry food the because dog was it ate the."
    pll = {
        s: scored(_MLM, _TOKENIZER(s, return_tensors="pt").input_ids[0], s).sum().item() for s in (sentence, scrambled)
    }
    for s, value in pll.items():
        print(f"PLL {value:7.1f}  {s}")
    print("Exercise 5: OK")


def _spam_data():
    """Lecture 7's draw 0: 100 training and the 200 test e-mails as 32 WordPiece ids, with their labels."""
    train, _, test = corpora.spam_draw(0)

    def encode(items):
        texts = [corpora.email_text(e) for e in items]
        enc = _TOKENIZER(texts, truncation=True, max_length=32, padding="max_length", return_tensors="pt")
        return dict(enc), torch.tensor([e["label"] for e in items])

    return encode(train), encode(test)


def _quiet_classifier():
    """MiniLM with a new 2-label head (its weights drawn with seed 0), loaded without transformers' load report."""
    verbosity = _hf_logging.get_verbosity()
    _hf_logging.set_verbosity_error()
    try:
        with _fork_rng():
            torch.manual_seed(0)
            return AutoModelForSequenceClassification.from_pretrained(assets.minilm_dir(), num_labels=2)
    finally:
        _hf_logging.set_verbosity(verbosity)


_CLASSIFIER = _quiet_classifier()  # exercise 6 adapts a copy
_LORA_THRESHOLD = 0.85  # test accuracy the adapted classifier must reach (the reference: about 0.9)


def lora(student_lora_linear, student_add_lora):
    """Exercise 6."""
    untampered()
    shortcuts = (
        "peft.get_peft_model",
        "peft.inject_adapter_in_model",
        "peft.tuners.lora.layer.Linear.__init__",
    )
    hint = "write LoRA yourself: a frozen base layer, A and B, and the scaled low-rank change"
    with forbid(*shortcuts, hint=hint), _fork_rng():
        torch.manual_seed(0)
        for d_in, d_out, r, alpha, shape in ((5, 3, 2, 8.0, (4, 5)), (7, 6, 4, 4.0, (2, 3, 7))):
            base = _Linear(d_in, d_out)
            weight, bias = base.weight.detach().clone(), base.bias.detach().clone()
            what = f"LoRALinear(nn.Linear({d_in}, {d_out}), r={r}, alpha={alpha})"
            layer = call(student_lora_linear, base, r, alpha, what=what)
            assert isinstance(layer, _Module), f"hint: {what}: a torch.nn.Module"
            A, B = getattr(layer, "A", None), getattr(layer, "B", None)
            assert isinstance(A, _Parameter) and isinstance(B, _Parameter), (
                f"hint: {what}: A and B are nn.Parameter attributes, so the optimiser finds them"
            )
            assert tuple(A.shape) == (r, d_in) and tuple(B.shape) == (d_out, r), (
                f"hint: {what}: A is (r, d_in) = {(r, d_in)}, B (d_out, r) = {(d_out, r)}; got {tuple(A.shape)} and "
                f"{tuple(B.shape)}"
            )
            assert equal(B.detach(), torch.zeros(d_out, r)) and bool((A.detach() != 0).any()), (
                f"hint: {what}: B starts at zero (so the layer starts as the pretrained one) and A random (else "
                "B's gradient is zero and nothing trains)"
            )
            assert (
                A.requires_grad and B.requires_grad and not base.weight.requires_grad and not base.bias.requires_grad
            ), f"hint: {what}: the base layer's weight and bias are frozen (requires_grad False), A and B trained"
            x = torch.randn(*shape)
            with _no_grad():
                got = tensor(
                    call(layer, x, what=f"{what}(x of shape {shape})"), f"{what}(x)", shape=(*shape[:-1], d_out)
                )
                assert close(got, x @ weight.T + bias, atol=1e-6), (
                    f"hint: {what}: with B = 0 the output is the base layer's, unchanged"
                )
                A.copy_(torch.randn(r, d_in))
                B.copy_(torch.randn(d_out, r))
                want = x @ weight.T + bias + alpha / r * (x @ A.T) @ B.T
                got = tensor(layer(x), f"{what}(x)", shape=(*shape[:-1], d_out))
                assert close(got, want, atol=1e-5), (
                    f"hint: {what}: output base(x) + (alpha / r) x A^T B^T, for any leading dimensions of x"
                )
        model = _deepcopy(_CLASSIFIER)
        (train_x, train_y), (test_x, test_y) = _spam_data()
        model.eval()
        with _no_grad():
            before = model(**{k: v[:8] for k, v in test_x.items()}).logits
        linears = {name: module for name, module in model.named_modules() if isinstance(module, _Linear)}
        what = "add_lora(MiniLM with a 2-label head, r=8, alpha=16)"
        returned = call(student_add_lora, model, 8, 16.0, what=what)
        assert returned is None, f"hint: {what}: change the model in place and return nothing"
    wrapped = {name for name, module in model.named_modules() if module.__class__ is student_lora_linear}
    want = {f"bert.encoder.layer.{i}.attention.self.{p}" for i in range(6) for p in ("query", "value")}
    assert wrapped == want, (
        f"hint: {what}: LoRALinear should replace exactly the query and value layers of the 6 self-attentions; "
        f"replaced {sorted(wrapped)[:4]}{'...' if len(wrapped) > 4 else ''}"
    )
    for name in want:
        assert model.get_submodule(name).base is linears[name], (
            f"hint: {what}: {name}'s LoRALinear wraps the layer that was there (its .base), not a new one"
        )
    trainable = sorted(name for name, p in model.named_parameters() if p.requires_grad)
    want_trainable = sorted([f"{n}.{m}" for n in want for m in ("A", "B")] + ["classifier.weight", "classifier.bias"])
    extra = [t for t in trainable if t not in want_trainable][:3]
    missing = [t for t in want_trainable if t not in trainable][:3]
    assert trainable == want_trainable, (
        f"hint: {what}: train A and B of each LoRALinear and the new head (classifier), freeze the rest; trained "
        f"but should not be: {extra}; frozen but should be trained: {missing}"
    )
    with _no_grad():
        after = model(**{k: v[:8] for k, v in test_x.items()}).logits
    assert close(after, before, atol=1e-5), f"hint: {what}: before any training the model's outputs must not change"
    # adapt it to spam: 5 epochs of the 100 e-mails, batches of 8, AdamW on what is trainable
    optimizer = _AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    order = torch.Generator().manual_seed(0)
    model.train()
    with deadline(300, "training the adapted model", "look for work that does not need to run at every step"):
        for _ in range(5):
            for batch in torch.randperm(len(train_y), generator=order).split(8):
                loss = model(**{k: v[batch] for k, v in train_x.items()}, labels=train_y[batch]).loss
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    model.eval()
    with _no_grad():
        right = float((model(**test_x).logits.argmax(-1) == test_y).float().mean())
    assert right >= _LORA_THRESHOLD, (
        f"hint: {what}, then 5 epochs on 100 e-mails: {right:.1%} of 200 test e-mails right, {_LORA_THRESHOLD:.0%} "
        "needed: does the change reach the output, and do the gradients reach A and B?"
    )
    print(f"Exercise 6: OK ({right:.1%} of 200 test e-mails right after training)")
