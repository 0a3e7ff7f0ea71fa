"""Checks of lecture 1's exercises (exercises/01_tokenization.ipynb); see course.checks."""

import itertools
import random

import regex
from transformers import AutoTokenizer

from course import assets, corpora
from course.checks.support import BUILTINS, call, plain, tools
from scratch.l01_tokenization import GPT2_SPLIT_PATTERN, BPETokenizer

__builtins__ = BUILTINS  # the built-ins as they were when the set-up cell imported this module

forbid, LookupOnly = tools.forbid, tools.LookupOnly
_product, _random = itertools.product, random.Random
_findall = regex.findall

# The checks' own data, loaded when the set-up imports this module: the same files as the set-up's.
_GPT2 = BPETokenizer.from_gpt2_files(*assets.gpt2_bpe_files())
_CHAPTER_1 = corpora.moby_dick_chapters()[0]["text"]
_BERT_VOCAB = frozenset((assets.minilm_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines())
_BERT = AutoTokenizer.from_pretrained(assets.minilm_dir())
# The set-up's two texts (articles 3 to 5 of the Universal Declaration of Human Rights).
_ENGLISH = (
    "Everyone has the right to life, liberty and security of person. No one shall be held in slavery or "
    "servitude; slavery and the slave trade shall be prohibited in all their forms. No one shall be subjected "
    "to torture or to cruel, inhuman or degrading treatment or punishment."
)
_GERMAN = (
    "Jeder hat das Recht auf Leben, Freiheit und Sicherheit der Person. Niemand darf in Sklaverei oder "
    "Leibeigenschaft gehalten werden; Sklaverei und Sklavenhandel sind in allen ihren Formen verboten. Niemand "
    "darf der Folter oder grausamer, unmenschlicher oder erniedrigender Behandlung oder Strafe unterworfen werden."
)


def _merged_length(ids, pair):
    length, i = 0, 0
    while i < len(ids):
        i += 2 if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair else 1
        length += 1
    return length


def _best_merge(ids):
    saved = {pair: len(ids) - _merged_length(ids, pair) for pair in set(zip(ids, ids[1:]))}
    pair = min(saved, key=lambda p: (-saved[p], p))
    return pair, saved[pair]


def best_merge(student_best_merge):
    """Exercise 1."""
    rng = _random(1)
    samples = [
        [1, 2, 3, 1, 2],
        [5, 5, 5],
        [5, 5, 5, 5, 5, 1, 2, 1, 2, 1, 2],
        [10, 9, 20, 10],
        [256, 3, 27, 300],
        [7, 7],
    ]
    samples += [
        [rng.choice(alphabet) for _ in range(rng.randint(2, 40))]
        for alphabet in ([0, 1, 2], [5, 5, 5, 7], [9, 10, 27, 256, 300, 1000], list(range(300)))
        for _ in range(40)
    ]
    expected = [_best_merge(ids) for ids in samples]
    wrong = []
    with forbid(
        "scratch.l01_tokenization.get_pair_counts",
        "scratch.l01_tokenization.merge",
        "scratch.l01_tokenization.BPETokenizer.train",
        hint="count what each merge saves yourself",
    ):
        for ids, want in zip(samples, expected):
            what = f"best_merge({ids})"
            got = plain(call(student_best_merge, list(ids), what=what), what)
            if type(got) is not tuple or got != want:
                wrong.append((ids, got, want))
    assert not wrong, (
        f"hint: {len(wrong)} of {len(samples)} lists differ, e.g. best_merge({wrong[0][0]}) should be {wrong[0][2]} "
        f"(a tuple: the pair as a tuple of ints, and the tokens saved), got {wrong[0][1]}: merging replaces "
        "occurrences left to right, and overlapping ones cannot all be replaced; ties go to the smallest pair, "
        "compared as ints (lecture 1, section 2)"
    )
    print(
        "Exercise 1: OK: in [5, 5, 5, 5, 5, 1, 2, 1, 2, 1, 2] the learner counts (5, 5) 4 times, but merging it "
        "saves 2 tokens"
    )


def _grouped_by_word(text):
    """GPT-2's counts: encode the whole text, start a new word at every token that begins with a space."""
    counts = []
    for token_id in _GPT2.encode(text):
        if not counts or _GPT2.decode([token_id]).startswith(" "):
            counts.append(0)
        counts[-1] += 1
    return counts


def _utf8_bytes(text):  # one token per byte: the space in front of a word is a token of its own
    return list(text.encode("utf-8"))


def _spaces_apart(text):  # one token per space and one per run of other characters
    return [len(piece) for piece in _findall(r" |[^ ]+", text)]


def tokens_per_word(student_tokens_per_word):
    """Exercise 2."""
    per_word = {}
    for name, text in [
        ("English", _ENGLISH),
        ("German", _GERMAN),
        ("mixed", "Harpunier Queequeg schläft; der Wal taucht."),
        ("a first word repeated", "Leben und Leben, das Leben"),
        ("one word", "Menschenrechte"),
    ]:
        expected = _grouped_by_word(text)
        what = f"tokens_per_word(GPT-2's encode, the {name} text)"
        counts = plain(call(student_tokens_per_word, _GPT2.encode, text, what=what), what)
        assert type(counts) is list and len(counts) == len(text.split(" ")), (
            f"hint: {what}: return a list with one count per word of text.split(' ')"
        )
        assert counts == expected, (
            f"hint: {what}: expected {expected}, got {counts}: count each word's tokens as the whole text is cut; "
            "what does a word look like to the tokenizer inside a text, and is the first word different? "
            "(lecture 1, section 6)"
        )
        per_word[name] = counts
    for text in ["Leben und Leben, das Leben", _GERMAN]:
        words = text.split(" ")
        for encode, want, which in [
            (_utf8_bytes, [len(word.encode("utf-8")) + (k > 0) for k, word in enumerate(words)], "a byte-level"),
            (_spaces_apart, [1 + (k > 0) for k in range(len(words))], "a space-as-its-own-token"),
        ]:
            what = f"tokens_per_word({which} encode, {text[:20]!r}...)"
            got = plain(call(student_tokens_per_word, encode, text, what=what), what)
            assert got == want, (
                f"hint: {what}: expected {want[:6]}..., got {got[:6] if type(got) is list else got}...: count with the "
                "encode you are given, not GPT-2's"
            )
    mean = {name: sum(per_word[name]) / len(per_word[name]) for name in ("English", "German")}
    costly = sorted(zip(per_word["German"], _GERMAN.split(" ")), key=lambda pair: (-pair[0], pair[1]))[:3]
    print(
        f"Exercise 2: OK: GPT-2 tokens per word, English {mean['English']:.2f}, German {mean['German']:.2f}; "
        f"the costliest German words: {costly}"
    )


def wordpiece(student_wordpiece):
    """Exercise 3."""
    words = sorted(set(_findall(r"[a-z]+", _CHAPTER_1.lower())))
    expected = {word: _BERT.tokenize(word) for word in words}
    small = [
        ("unbelievable", {"un", "unbe", "##believ", "##lievable", "##able"}, {}, ["unbe", "##lievable"]),
        ("able", {"able", "##able"}, {}, ["able"]),
        ("bc", {"##bc", "b", "##c"}, {}, ["b", "##c"]),
        ("abc", {"ab", "a", "##bc"}, {}, ["[UNK]"]),
        ("abc", {"ab", "c"}, {}, ["[UNK]"]),
        ("ab", {"a"}, {}, ["[UNK]"]),
        ("a" * 101, {"a", "##a"}, {}, ["[UNK]"]),
        ("a" * 100, {"a", "##a"}, {}, ["a"] + ["##a"] * 99),
        ("xy", {"x", "##y"}, {"unk": "<unk>"}, ["x", "##y"]),
        ("xz", {"x"}, {"unk": "<unk>"}, ["<unk>"]),
        ("abcdef", {"abc", "##def"}, {"unk": "<?>", "max_chars": 5}, ["<?>"]),
        ("abcde", {"abc", "##de"}, {"unk": "<?>", "max_chars": 5}, ["abc", "##de"]),
        ("naïve", {"na", "##ïve"}, {"max_chars": 5}, ["na", "##ïve"]),
        ("a", {"a"}, {"max_chars": 1}, ["a"]),
    ]
    shortcuts = (
        "tokenizers.Tokenizer.encode",
        "tokenizers.Tokenizer.encode_batch",
        "tokenizers.models.WordPiece",
        *(  # BERT's WordPiece and the copies of it other models' tokenizers carry
            f"transformers.models.{module}.WordpieceTokenizer.tokenize"
            for module in (
                "bert.tokenization_bert_legacy",
                "bert_japanese.tokenization_bert_japanese",
                "cpmant.tokenization_cpmant",
                "prophetnet.tokenization_prophetnet",
                "tapas.tokenization_tapas",
            )
        ),
    )
    with forbid(*shortcuts, hint="cut the word yourself: the longest piece of vocab that matches, then '##' pieces"):
        for word, vocab, options, want in small:
            what = f"wordpiece({word!r}, {sorted(vocab)}, {options})"
            got = plain(call(student_wordpiece, word, set(vocab), **options, what=what), what)
            assert got == want, (
                f"hint: {what}: expected {want}, got {got}: the longest match at each position, '##' only after the "
                "first piece, no backtracking (a dead end makes the whole word unknown), the unk and max_chars you "
                "are given, counted in characters (lecture 1, section 6)"
            )
        ours = {}
        for word in words:
            what = f"wordpiece({word!r}, BERT's vocabulary)"
            ours[word] = plain(call(student_wordpiece, word, _BERT_VOCAB, what=what), what)
    wrong = [word for word in words if ours[word] != expected[word]]
    assert not wrong, (
        f"hint: {len(wrong)} words differ from MiniLM's tokenizer, e.g. {wrong[0]!r}: {ours[wrong[0]]} vs "
        f"{expected[wrong[0]]}"
    )
    split = sorted((word for word in words if len(expected[word]) > 1), key=lambda w: (-len(expected[w]), w))
    print(f"Exercise 3: OK on all {len(words):,} words of chapter 1; {len(split)} are cut, e.g. {ours[split[0]]}")


def encode_chunk(student_encode_chunk):
    """Exercise 4."""
    chunks = sorted(set(_findall(GPT2_SPLIT_PATTERN, _CHAPTER_1 + " Queequeg's café, naïve Zürich 🐋 1851")))
    expected = {chunk: _GPT2.encode(chunk) for chunk in chunks}
    shortcuts = (
        "scratch.l01_tokenization.BPETokenizer.encode",
        "scratch.l01_tokenization.BPETokenizer._encode_chunk",
        "scratch.l01_tokenization.BPETokenizer._encode_ordinary",
        "scratch.l01_tokenization.Tokenizer.encode",
    )

    def checked(chunk, table, byte_ids, what):
        n = len(chunk.encode("utf-8"))
        merges = LookupOnly(table, budget=2 * (n + 1) ** 2 + 10, what=what)
        call_what = f"encode_chunk({chunk!r}, {what}, byte_ids)"
        return plain(call(student_encode_chunk, chunk, merges, list(byte_ids), what=call_what), call_what)

    reverse = list(range(255, -1, -1))  # a toy byte numbering: byte b has id 255 - b
    a, b, c = (reverse[ord(letter)] for letter in "abc")
    toy = [  # (chunk, merges, expected ids) with reversed byte ids
        ("aaa", {(a, a): 256}, [256, a]),
        ("aaaaa", {(a, a): 256, (256, 256): 257}, [257, a]),
        ("abc", {(a, b): 256, (256, c): 257}, [257]),
        ("abc", {(a, b): 1000, (b, c): 999}, [a, 999]),
        ("abab", {(b, a): 256, (a, b): 300}, [a, 256, b]),
        ("cab", {(a, a): 256}, [c, a, b]),
        ("a", {(a, a): 256}, [a]),
    ]
    wrong = []
    with forbid(*shortcuts, hint="merge the earliest-learned pair of the chunk yourself"):
        got = checked("!", _GPT2.merges, _GPT2.byte_ids, "GPT-2's merges")
        assert got == [0], (
            f"hint: encode_chunk('!', GPT-2's merges, byte_ids) gave {got}: the ids start from byte_ids, not from "
            "the bytes themselves"
        )
        for chunk, table, want in toy:
            got = checked(chunk, table, reverse, "the merges")
            assert got == want, (
                f"hint: {chunk!r} with merges {table} and byte ids 255 - b: expected {want}, got {got}: use the "
                "byte_ids and merges you are given; which pair is merged first, and does every occurrence of it "
                "merge, left to right? (lecture 1, sections 2 and 3)"
            )
        for chunk in chunks:
            if checked(chunk, _GPT2.merges, _GPT2.byte_ids, "GPT-2's merges") != expected[chunk]:
                wrong.append(chunk)
    assert not wrong, (
        f"hint: {len(wrong)} of {len(chunks)} chunks differ, e.g. {wrong[0]!r}: {expected[wrong[0]]}; the order in "
        "which merges were learned decides which pair merges first"
    )
    print(f"Exercise 4: OK: GPT-2's ids on all {len(chunks):,} distinct chunks of chapter 1 (and a few more)")


def _segmentations(word):
    for cuts in _product([False, True], repeat=len(word) - 1):
        pieces, start = [], 0
        for position, cut in enumerate(cuts, start=1):
            if cut:
                pieces.append(word[start:position])
                start = position
        yield pieces + [word[start:]]


def _enumerated_counts(word, probs):
    """All 2 ** (L - 1) segmentations of a short word, weighted."""
    weights = {}
    for pieces in _segmentations(word):
        if all(piece in probs for piece in pieces):
            weight = 1.0
            for piece in pieces:
                weight *= probs[piece]
            weights[tuple(pieces)] = weight
    total, counts = sum(weights.values()), {}
    for pieces, weight in weights.items():
        for piece in pieces:
            counts[piece] = counts.get(piece, 0.0) + weight / total
    return counts


class _Lookups(LookupOnly):
    def _why_budget(self):
        return "a few lookups per character: no enumeration of all segmentations"


def expected_piece_counts(student_expected_piece_counts):
    """Exercise 5."""

    def close(ours, theirs):
        return set(ours) == set(theirs) and all(
            type(ours[piece]) in (float, int) and abs(ours[piece] - theirs[piece]) < 1e-9 for piece in theirs
        )

    def checked(word, probs, longest):
        lookups = _Lookups(probs, budget=4 * len(word) * longest + 10, what="probs")
        what = f"expected_piece_counts({word!r}, probs, longest={longest})"
        result = plain(call(student_expected_piece_counts, word, lookups, longest, what=what), what)
        assert type(result) is dict, f"hint: {what}: return a dict {{piece: expected count}}"
        return result, what

    result, what = checked("ab", {"a": 0.5, "b": 0.3, "ab": 0.2}, 2)  # a|b (0.15) or ab (0.2): P = 3/7 and 4/7
    assert close(result, {"a": 3 / 7, "b": 3 / 7, "ab": 4 / 7}), (
        f"hint: {what} with p(a) = 0.5, p(b) = 0.3, p(ab) = 0.2: expected a, b: 3/7 and ab: 4/7, got {result}: "
        "P(s) is normalised over all segmentations of the word"
    )
    rng = _random(5)
    for longest, keep in [(3, 1.0), (3, 0.5), (1, 1.0), (2, 0.6), (4, 0.4)]:
        pieces = ["".join(letters) for n in range(1, longest + 1) for letters in _product("abc", repeat=n)]
        probs = {piece: rng.uniform(0.01, 1.0) for piece in pieces if len(piece) == 1 or rng.random() < keep}
        for _ in range(12):
            word = "".join(rng.choice("abc") for _ in range(rng.randint(1, 11)))
            result, what = checked(word, probs, longest)
            assert close(result, _enumerated_counts(word, probs)), (
                f"hint: {what} ({len(probs)} of the {len(pieces)} possible pieces in probs): differs from the "
                "average over all segmentations: an occurrence of a piece counts the probability of every "
                "segmentation that uses it there; substrings that are not in probs count nothing; leave out pieces "
                "with count 0"
            )
    long_word = "".join(rng.choice("abc") for _ in range(60))
    result, what = checked(long_word, probs, longest)
    assert abs(sum(count * len(piece) for piece, count in result.items()) - 60) < 1e-9, (
        f"hint: {what}: on average the pieces must cover every character exactly once"
    )
    print(f"Exercise 5: OK; a 60-character word, 2^59 segmentations, expects {sum(result.values()):.2f} pieces")
