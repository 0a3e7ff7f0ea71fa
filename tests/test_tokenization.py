"""scratch.l01_tokenization: GPT-2 parity, round trips, BPE training against a naive reference, special tokens in
the training text, bad input."""

import json
import random
import string
import warnings

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from course import assets, corpora
from scratch.l01_tokenization import (
    GPT2_SPLIT_PATTERN,
    UNK,
    BPETokenizer,
    CharTokenizer,
    Tokenizer,
    WordTokenizer,
    bytes_to_unicode,
    get_pair_counts,
    merge,
)

# English with a little of everything else, for the small trained tokenizers.
SMALL_TEXT = (
    "The quick brown fox jumps over the lazy dog. The dog didn't care; the fox's tail was quicker!\n"
    "Café, naïve, Zürich and São Paulo: accents everywhere. 東京は日本の首都です。 Привет, мир! 🤗🤗 👍🏽\n"
    "Numbers like 1234567 and 3.14159 appear too, and    runs   of spaces,\ttabs\t\tand\n\nnewlines.\n"
) * 3
UNICODE_TEXT = (
    "naïve café crème brûlée — Zürich Österreich Ålesund ĳssel; "
    "東京 東京都 京都 日本語の文章です。 한국어 문장입니다. Ελληνικά γράμματα. "
    "🤗🤗🤗 👨‍👩‍👧‍👦 👨‍👩‍👧‍👦 🇫🇷🇫🇷🇯🇵 ∑∫∂ √2 ≈ 1.414"
) * 4

# Modest, so the whole file runs in seconds; database=None: no example files written into the repo.
property_test = settings(max_examples=200, deadline=None, database=None)

rng = random.Random(0)
PARITY_CASES = {
    "spaces": "hello   world  and   more     spaces",
    "leading-trailing-spaces": "   leading and trailing   ",
    "only-spaces": "          ",
    "tabs": "a\tb\t\tc \t d\t",
    "newlines": "line one\nline two\n\n\nline three\r\n\r\nend\n",
    "mixed-whitespace": " \t \n  x  \n\t\u00a0\u3000y",
    "contractions": "it's don't they're we've I'm you'll he'd",
    "upper-case-contractions": "IT'S DON'T THEY'RE WE'VE I'M YOU'LL HE'D Bob'S",
    "quote-runs": "''s 's's ''' 'll'",
    "digits": "0 7 42 123 4567 89012 3.14159 1,000,000 2024-01-01 12:30pm",
    "long-number": "31415926535897932384626433832795028841971693993751",
    "punctuation": "!!! ??? ... --- ;;; (([[{{}}]])) @#$%^&* <html><body/></html> a+=b",
    "punctuation-and-words": "Hello!!!...World???--yes;no:maybe",
    "accents": "café naïve Zürich résumé Ångström São Paulo",
    "combining-accent": "cafe\u0301 nai\u0308ve",
    "cjk": "東京は日本の首都です。你好，世界！한국어 텍스트입니다",
    "emoji": "I ❤️ Python 🤗 👍🏽 🚀🚀🚀",
    "emoji-zwj-and-flags": "👨‍👩‍👧‍👦 🏳️‍🌈 👩🏽‍💻 🇫🇷🇯🇵🇺🇸",
    "very-long-word": "a" * 1000,
    "random-long-word": "".join(rng.choices(string.ascii_lowercase, k=300)),
    "mixed-script": "Hello Мир κόσμε עולם مرحبا नमस्ते 123abc東京xyz",
    "control-characters": "\x00\x01\x1b[31mred\x1b[0m\x7f \u200b\ufeff",
    "special-token": "Hello<|endoftext|>World <|endoftext|>\n<|endoftext|>",
    "empty": "",
    "moby-dick": None,  # a few KB of the novel, filled in by the `parity_text` fixture
}


@pytest.fixture(scope="module")
def gpt2_files():
    return assets.gpt2_bpe_files()


@pytest.fixture(scope="module")
def moby_dick():
    return corpora.moby_dick_text()


@pytest.fixture(scope="module")
def gpt2(gpt2_files):
    return BPETokenizer.from_gpt2_files(*gpt2_files)


@pytest.fixture(scope="module")
def references(gpt2_files):
    """GPT-2's ids from the same files, as computed by transformers and by tiktoken."""
    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    from transformers import GPT2Tokenizer, GPT2TokenizerFast

    encoder_json, vocab_bpe = (str(path) for path in gpt2_files)
    # transformers 5: vocab= and merges= (vocab_file= would silently build an empty tokenizer).
    slow = GPT2Tokenizer(vocab=encoder_json, merges=vocab_bpe)
    fast = GPT2TokenizerFast(vocab=encoder_json, merges=vocab_bpe)
    ranks = data_gym_to_mergeable_bpe_ranks(vocab_bpe_file=vocab_bpe, encoder_json_file=encoder_json)
    enc = tiktoken.Encoding(
        name="gpt2",
        explicit_n_vocab=50257,
        pat_str=GPT2_SPLIT_PATTERN,
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 50256},
    )
    assert len(slow) == len(fast) == 50257
    return {
        "transformers-GPT2Tokenizer": lambda text: slow.encode(text, add_special_tokens=False),
        "transformers-GPT2TokenizerFast": lambda text: fast.encode(text, add_special_tokens=False),
        "tiktoken": lambda text: enc.encode(text, allowed_special="all"),
    }


@pytest.fixture(scope="module")
def small_bpe():
    return BPETokenizer(special_tokens=["<|endoftext|>"]).train(SMALL_TEXT, 256 + 100)


@pytest.fixture
def parity_text(request, moby_dick):
    text = PARITY_CASES[request.param]
    return moby_dick[20_000:25_000] if text is None else text


# ---------------------------------------------------------------- GPT-2 parity


@pytest.mark.parametrize("parity_text", PARITY_CASES, indirect=True)
@pytest.mark.parametrize("reference", ["transformers-GPT2Tokenizer", "transformers-GPT2TokenizerFast", "tiktoken"])
def test_gpt2_ids_match_reference(gpt2, references, reference, parity_text):
    assert gpt2.encode(parity_text) == references[reference](parity_text)


@pytest.mark.parametrize("parity_text", PARITY_CASES, indirect=True)
def test_gpt2_round_trip(gpt2, parity_text):
    assert gpt2.decode(gpt2.encode(parity_text)) == parity_text


def test_gpt2_vocabulary(gpt2, gpt2_files):
    assert len(gpt2) == gpt2.vocab_size == 50257
    assert gpt2.special_tokens == {"<|endoftext|>": 50256}
    assert len(gpt2.merges) == 50000
    assert gpt2.byte_ids[ord("!")] == 0 and gpt2.byte_ids[ord(" ")] == 220  # not byte order
    # Every token's bytes agree with encoder.json, read through GPT-2's printable byte spelling.
    from_char = {char: b for b, char in bytes_to_unicode().items()}
    encoder = json.loads(gpt2_files[0].read_text(encoding="utf-8"))
    for token, i in encoder.items():
        if token != "<|endoftext|>":
            assert gpt2.vocab[i] == bytes(from_char[char] for char in token)
    assert gpt2.encode(" the") == [262] and gpt2.decode([262]) == " the"


def test_bytes_to_unicode():
    mapping = bytes_to_unicode()
    assert sorted(mapping) == list(range(256)) and len(set(mapping.values())) == 256
    assert mapping[ord(" ")] == "Ġ" and mapping[ord("\n")] == "Ċ" and mapping[ord("a")] == "a"
    assert not any(char.isspace() for char in mapping.values())


# ---------------------------------------------------------------- round trips (hypothesis)


@property_test
@given(text=st.text())
def test_small_bpe_round_trip(small_bpe, text):
    assert small_bpe.decode(small_bpe.encode(text)) == text


@property_test
@given(text=st.text())
def test_gpt2_round_trip_any_text(gpt2, text):
    assert gpt2.decode(gpt2.encode(text)) == text


@pytest.fixture(scope="module")
def saved_and_loaded(tmp_path_factory, small_bpe):
    """(original, reloaded) per kind of tokenizer, saved to and loaded from JSON files."""
    tokenizers = {
        "bpe": small_bpe,
        "char": CharTokenizer(special_tokens=[UNK]).train(SMALL_TEXT),
        "word": WordTokenizer(special_tokens=["<pad>"]).train(SMALL_TEXT, 40),
    }
    folder = tmp_path_factory.mktemp("tokenizers")
    pairs = {}
    for kind, tokenizer in tokenizers.items():
        tokenizer.save(folder / f"{kind}.json")
        pairs[kind] = (tokenizer, Tokenizer.load(folder / f"{kind}.json"))
    return pairs


@pytest.mark.parametrize("kind", ["bpe", "char", "word"])
def test_save_load_keeps_everything(saved_and_loaded, kind):
    original, loaded = saved_and_loaded[kind]
    assert type(loaded) is type(original)
    assert loaded.vocab == original.vocab and loaded.special_tokens == original.special_tokens
    assert loaded.encode(SMALL_TEXT + "<unk><pad><|endoftext|>") == original.encode(
        SMALL_TEXT + "<unk><pad><|endoftext|>"
    )


@pytest.mark.parametrize("kind", ["bpe", "char", "word"])
@property_test
@given(text=st.text())
def test_save_load_same_ids(saved_and_loaded, kind, text):
    original, loaded = saved_and_loaded[kind]
    assert loaded.encode(text) == original.encode(text)


def test_gpt2_save_load(gpt2, tmp_path):
    gpt2.save(tmp_path / "gpt2.json")
    loaded = BPETokenizer.load(tmp_path / "gpt2.json")
    assert loaded.byte_ids == gpt2.byte_ids and loaded.merges == gpt2.merges and loaded.vocab == gpt2.vocab
    text = PARITY_CASES["mixed-script"] + PARITY_CASES["special-token"]
    assert loaded.encode(text) == gpt2.encode(text)
    assert '"Ġthe"' in (tmp_path / "gpt2.json").read_text(encoding="utf-8")  # readable merges


# ---------------------------------------------------------------- BPE training


def naive_bpe_merges(text, vocab_size, special_tokens=()):
    """The textbook algorithm: every round, recount all pairs of all chunks and merge the best one.

    With special tokens, the text between them is what gets chunked (longest special token first)."""
    names = sorted(special_tokens, key=len, reverse=True)
    parts = regex.split("|".join(map(regex.escape, names)), text) if names else [text]
    words = [list(chunk.encode("utf-8")) for part in parts for chunk in regex.findall(GPT2_SPLIT_PATTERN, part)]
    merges = {}
    for new_id in range(256, vocab_size):
        counts = {}
        for word in words:
            get_pair_counts(word, counts)
        if not counts:
            break
        best = min(counts, key=lambda pair: (-counts[pair], pair))  # highest count, then smallest pair
        merges[best] = new_id
        words = [merge(word, best, new_id) for word in words]
    return merges


def test_building_blocks():
    assert get_pair_counts([1, 2, 3, 1, 2]) == {(1, 2): 2, (2, 3): 1, (3, 1): 1}
    assert get_pair_counts([5]) == {}
    assert merge([1, 2, 3, 1, 2], (1, 2), 9) == [9, 3, 9]
    assert merge([1, 1, 1], (1, 1), 9) == [9, 1]  # left to right, no overlaps
    assert merge([1, 1, 1, 1], (1, 1), 9) == [9, 9]


@pytest.fixture(scope="module")
def training_texts(moby_dick):
    return {"moby-dick": moby_dick[:3000], "unicode": UNICODE_TEXT}


@pytest.mark.parametrize("name", ["moby-dick", "unicode"])
def test_train_matches_naive_reference(training_texts, name):
    text = training_texts[name]
    tokenizer = BPETokenizer().train(text, 256 + 40)
    assert list(tokenizer.merges.items()) == list(naive_bpe_merges(text, 256 + 40).items())
    assert len(tokenizer.merges) == 40 and tokenizer.vocab_size == 296
    assert list(tokenizer.merges.values()) == list(range(256, 296))
    ids = tokenizer.encode(text)
    assert len(ids) < len(text.encode("utf-8"))
    assert tokenizer.decode(ids) == text


@property_test
@given(text=st.text(alphabet="aab c\né🤗", min_size=1, max_size=80), n_merges=st.integers(0, 30))
def test_train_matches_naive_reference_on_random_text(text, n_merges):
    # A tiny alphabet makes ties, repeats ("aaaa") and early stops common: the hard cases for incremental counts.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny texts run out of pairs
        tokenizer = BPETokenizer().train(text, 256 + n_merges)
    assert list(tokenizer.merges.items()) == list(naive_bpe_merges(text, 256 + n_merges).items())
    assert tokenizer.decode(tokenizer.encode(text)) == text


def test_train_tie_break_smallest_pair():
    # Chunks "ab" and " cd": three pairs, each once; (32, 99) = (" ", "c") is the smallest.
    tokenizer = BPETokenizer().train("ab cd", 257)
    assert tokenizer.merges == {(32, 99): 256}


def test_train_stops_when_no_pairs_are_left():
    with pytest.warns(UserWarning, match="no adjacent pairs left"):
        tokenizer = BPETokenizer().train("ab ab", 1000)
    assert tokenizer.merges == naive_bpe_merges("ab ab", 1000)
    assert tokenizer.vocab_size == 256 + len(tokenizer.merges) < 1000
    assert tokenizer.merges == {(97, 98): 256, (32, 256): 257}  # "ab", then " " + "ab"
    assert tokenizer.encode("ab ab") == [256, 257]


def test_train_special_tokens_come_after_merges():
    tokenizer = BPETokenizer(special_tokens=["<|endoftext|>"]).train(SMALL_TEXT, 300)
    tokenizer.add_special_tokens(["<|pad|>"])
    assert tokenizer.special_tokens == {"<|endoftext|>": 300, "<|pad|>": 301}
    assert len(tokenizer) == 302
    ids = tokenizer.encode("the fox<|endoftext|>the dog<|pad|>")
    assert ids.count(300) == 1 and ids[-1] == 301
    assert tokenizer.decode(ids) == "the fox<|endoftext|>the dog<|pad|>"


# ---------------------------------------------------------------- special tokens in the training text

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def documents(moby_dick):
    """The first 400 paragraphs of Moby-Dick as short documents; none holds a character of the marker's "<|>"."""
    paragraphs = [p for p in moby_dick.split("\n\n") if p.strip()][:400]
    assert not any(char in p for p in paragraphs for char in "<|>")
    return paragraphs


def test_train_learns_nothing_from_special_tokens(documents):
    text = EOT.join(documents)
    # Without the special token, the marker is ordinary text: 399 copies teach "<|", "|>", "endoftext"...
    plain = BPETokenizer().train(text, 256 + 200)
    assert {b"<|", b"|>"} <= set(plain.vocab.values())
    tokenizer = BPETokenizer(special_tokens=[EOT]).train(text, 256 + 200)
    learned = [tokenizer.vocab[i] for i in tokenizer.merges.values()]
    assert len(learned) == 200
    for token in learned:  # no learned token holds any part of the marker (the documents have no "<", "|", ">")
        assert not any(char in token for char in (b"<", b"|", b">")) and b"endoftext" not in token, token
    # Encoding keeps the marker as one id and never merges across it.
    eot = tokenizer.special_tokens[EOT]
    assert eot == 456 and tokenizer.encode(EOT) == [eot]
    expected = []
    for i, document in enumerate(documents):
        expected += ([eot] if i else []) + tokenizer.encode(document)
    assert tokenizer.encode(text) == expected
    assert tokenizer.decode(expected) == text


def test_train_with_special_tokens_matches_naive_reference(documents):
    text = EOT.join(documents[:20])
    tokenizer = BPETokenizer(special_tokens=[EOT]).train(text, 256 + 30)
    assert list(tokenizer.merges.items()) == list(naive_bpe_merges(text, 256 + 30, [EOT]).items())


@property_test
@given(
    fragments=st.lists(
        st.sampled_from(["a", "b", "ab", " ", "\n", "<|", "|>", EOT, "<|end", "oftext", "é"]), min_size=1, max_size=40
    ),
    n_merges=st.integers(0, 20),
)
def test_train_with_special_tokens_on_random_text(fragments, n_merges):
    text = "".join(fragments)
    specials = [EOT, "<|end"]  # one special token contains the start of the other: the longer wins
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny texts run out of pairs
        tokenizer = BPETokenizer(special_tokens=specials).train(text, 256 + n_merges)
    assert list(tokenizer.merges.items()) == list(naive_bpe_merges(text, 256 + n_merges, specials).items())
    assert tokenizer.decode(tokenizer.encode(text)) == text


def test_train_on_special_tokens_only():
    with pytest.warns(UserWarning, match="no adjacent pairs left"):
        tokenizer = BPETokenizer(special_tokens=[EOT]).train(EOT * 3, 300)
    assert tokenizer.merges == {} and tokenizer.encode(EOT * 3) == [256] * 3


def test_chunk_cache_is_bounded(monkeypatch):
    tokenizer = BPETokenizer().train(SMALL_TEXT, 256 + 50)
    monkeypatch.setattr(tokenizer, "cache_size", 100)
    text = " ".join(str(n) for n in range(1000))  # 1,000 distinct chunks
    ids = tokenizer.encode(text)
    assert len(tokenizer._cache) <= 100
    assert ids == tokenizer.encode(text) and tokenizer.decode(ids) == text


def test_untrained_bpe_is_a_byte_tokenizer():
    tokenizer = BPETokenizer()
    assert len(tokenizer) == 256 and tokenizer.encode("hé") == list("hé".encode())


# ---------------------------------------------------------------- characters and words


def test_char_tokenizer():
    tokenizer = CharTokenizer().train("hello world")
    assert list(tokenizer.vocab.values()) == sorted(set("hello world"))
    assert tokenizer.decode(tokenizer.encode("world hello")) == "world hello"
    with pytest.raises(ValueError, match="'z' is not in the vocabulary"):
        tokenizer.encode("zebra")


def test_char_tokenizer_unknown_characters_become_unk():
    tokenizer = CharTokenizer(special_tokens=[UNK]).train("hello")
    assert tokenizer.special_tokens == {UNK: 4}  # after e, h, l, o
    assert tokenizer.encode("hex") == [1, 0, 4]
    assert tokenizer.decode(tokenizer.encode("hex")) == "he<unk>"


def test_word_tokenizer():
    tokenizer = WordTokenizer().train("the cat sat. the dog sat, a cat ran.", vocab_size=6)
    # Most frequent first; ties (the/cat/sat/. twice, dog/,/a/ran once) keep first-seen order.
    assert [tokenizer.vocab[i] for i in range(5)] == ["the", "cat", "sat", ".", "dog"]
    assert tokenizer.special_tokens == {UNK: 5}
    ids = tokenizer.encode("the bird sat.")
    assert ids == [0, 5, 2, 3]
    assert ids.count(tokenizer.special_tokens[UNK]) == 1  # how the notebook counts unknown words
    assert tokenizer.decode(ids) == "the <unk> sat ."  # lossy: spaces around punctuation


# ---------------------------------------------------------------- bad input


def test_special_tokens_bad_input():
    with pytest.raises(TypeError, match="special tokens must be a list of str, got the str '<|endoftext|>'"):
        BPETokenizer(special_tokens=EOT)  # would register "<", "|", "e", ... one by one
    with pytest.raises(ValueError, match="a special token cannot be the empty string"):
        BPETokenizer(special_tokens=[EOT, ""])
    with pytest.raises(TypeError, match="a special token must be a str, got int"):
        BPETokenizer().add_special_tokens([50256])


@pytest.mark.parametrize("vocab_size", [0, 255, -1, 300.0])
def test_train_rejects_small_vocab_size(vocab_size):
    with pytest.raises(ValueError, match="vocab_size must be an int >= 256"):
        BPETokenizer().train("some text", vocab_size)


@pytest.mark.parametrize("bad", [b"bytes", None, 42, ["a", "list"]], ids=["bytes", "None", "int", "list"])
def test_train_and_encode_reject_non_str(bad, small_bpe):
    expected = f"must be a str, got {type(bad).__name__}"
    with pytest.raises(TypeError, match=expected):
        BPETokenizer().train(bad, 300)
    with pytest.raises(TypeError, match=expected):
        small_bpe.encode(bad)
    with pytest.raises(TypeError, match=expected):
        CharTokenizer().train(bad)
    with pytest.raises(TypeError, match=expected):
        WordTokenizer().train("a b c", 10).encode(bad)


def test_bytes_error_says_how_to_fix():
    with pytest.raises(TypeError, match="decode the bytes first"):
        BPETokenizer().train(b"hello", 300)


@pytest.mark.parametrize(
    "train",
    [lambda: BPETokenizer().train("", 300), lambda: CharTokenizer().train(""), lambda: WordTokenizer().train("", 10)],
    ids=["bpe", "char", "word"],
)
def test_train_rejects_empty_text(train):
    with pytest.raises(ValueError, match="training text is empty"):
        train()


@pytest.mark.parametrize("bad_id", [-1, 50257, 10**9, 1.5, "3", None], ids=repr)
def test_decode_rejects_ids_outside_the_vocabulary(gpt2, bad_id):
    with pytest.raises(ValueError, match=regex.escape(f"id {bad_id!r} is not in the vocabulary")):
        gpt2.decode([262, bad_id])


def test_decode_rejects_id_equal_to_vocab_size(small_bpe):
    with pytest.raises(ValueError, match=f"id {small_bpe.vocab_size} is not in the vocabulary"):
        small_bpe.decode([small_bpe.vocab_size])


@pytest.mark.parametrize(
    "content", ['{"type": "Nope"}', '{"tokens": []}', "[1, 2]"], ids=["unknown", "missing", "list"]
)
def test_load_rejects_unknown_type(tmp_path, content):
    path = tmp_path / "tokenizer.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="unknown tokenizer type"):
        Tokenizer.load(path)


def test_load_rejects_the_wrong_class(tmp_path):
    CharTokenizer().train("abc").save(tmp_path / "char.json")
    with pytest.raises(ValueError, match="holds a CharTokenizer, not a BPETokenizer"):
        BPETokenizer.load(tmp_path / "char.json")
    assert isinstance(Tokenizer.load(tmp_path / "char.json"), CharTokenizer)
