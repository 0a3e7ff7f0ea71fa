"""Tokenizers from scratch: characters, words, and byte-level BPE the way GPT-2 does it.

    CharTokenizer   one id per character; tiny vocabulary, long sequences
    WordTokenizer   one id per word; huge vocabulary, and new words become <unk>
    BPETokenizer    starts from the 256 bytes and learns merges of frequent pairs (GPT-2);
                    `BPETokenizer.from_gpt2_files` loads GPT-2's real merges and matches its ids exactly

All three share `Tokenizer`: special tokens, `decode`, `save`/`load` (JSON) and input checks. Special tokens
(e.g. "<|endoftext|>" between documents) are cut out of the text before anything else, in `train` as in
`encode`: no merge is learned across them or from their characters, and each one encodes as a single id.

The BPE part follows Karpathy's minbpe (github.com/karpathy/minbpe): `get_pair_counts` and `merge` are its
`get_stats` and `merge`, and the tokenizer is its RegexTokenizer: the regex split, then merges inside each chunk.
"""

from __future__ import annotations

import heapq
import json
import operator
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import regex

# GPT-2's pre-tokenizer: contractions, words, numbers, punctuation and whitespace never share a chunk,
# so merges never cross these boundaries ("dog." and "dog!" share the token " dog").
GPT2_SPLIT_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
WORD_PATTERN = r"\w+|[^\w\s]"
UNK = "<unk>"


# ---------------------------------------------------------------- BPE building blocks


def get_pair_counts(ids: list[int], counts: dict | None = None) -> dict[tuple[int, int], int]:
    """How often each adjacent pair occurs: [1, 2, 3, 1, 2] -> {(1, 2): 2, (2, 3): 1, (3, 1): 1}.

    Karpathy's minbpe calls it `get_stats`.
    """
    counts = {} if counts is None else counts
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace every occurrence of `pair` by `new_id`, left to right: merge([1, 1, 1], (1, 1), 9) -> [9, 1].

    As in Karpathy's minbpe.
    """
    out = []
    i = 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from each byte to a printable character (a space shows as 'Ġ', a newline as 'Ċ').

    GPT-2's files store tokens as text, so every byte needs a visible, non-whitespace stand-in:
    printable Latin-1 bytes stand for themselves, the other 68 get the characters from U+0100 on.
    """
    visible = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    mapping = {b: chr(b) for b in visible}
    hidden = [b for b in range(256) if b not in mapping]  # control characters, space, NBSP, soft hyphen
    mapping.update({b: chr(256 + n) for n, b in enumerate(hidden)})
    return dict(sorted(mapping.items()))


# ---------------------------------------------------------------- what every tokenizer shares


def check_text(text, what: str = "text") -> str:
    """Tokenizers read str, not bytes or lists: fail early with a message that says so."""
    if not isinstance(text, str):
        hint = " (decode the bytes first, e.g. data.decode('utf-8'))" if isinstance(text, (bytes, bytearray)) else ""
        raise TypeError(f"{what} must be a str, got {type(text).__name__}{hint}")
    return text


def check_training_text(text) -> str:
    if not check_text(text, "training text"):
        raise ValueError("training text is empty: there is nothing to learn a vocabulary from")
    return text


class Tokenizer:
    """What all tokenizers share. `vocab` maps id -> token, special tokens included.

    Subclasses build the vocabulary in `train` and provide `_encode_ordinary` (text without special
    tokens -> ids), `_join` (tokens -> text) and `_state`/`_load_state` (what `save` writes).
    """

    def __init__(self, special_tokens: list[str] | None = None):
        self.vocab: dict = {}  # id -> token (str, or bytes for BPE)
        self.special_tokens: dict[str, int] = {}  # e.g. {"<|endoftext|>": 50256}
        self.token_to_id: dict[str, int] = {}  # ordinary tokens (characters, words) -> id
        self.add_special_tokens(special_tokens or [])

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def __len__(self) -> int:
        return self.vocab_size

    def add_special_tokens(self, tokens: list[str]) -> None:
        """Give each new special token the next free id, after every ordinary token.

        Register them before `train` (BPE): training cuts the text at the special tokens it knows.
        """
        if isinstance(tokens, str):  # a bare string would silently register each of its characters
            raise TypeError(f"special tokens must be a list of str, got the str {tokens!r} (write [{tokens!r}])")
        for token in tokens:
            if not check_text(token, "a special token"):
                raise ValueError("a special token cannot be the empty string")
            if token not in self.special_tokens:
                new_id = max(self.vocab, default=-1) + 1
                self.special_tokens[token] = new_id
                self.vocab[new_id] = self._token_from_str(token)

    def _set_vocab(self, vocab: dict, special_tokens: dict[str, int] | None = None) -> None:
        """Install a vocabulary of ordinary tokens (id -> token) plus the special tokens:
        with the ids given, or by default behind the new vocabulary, in the order they were added."""
        names = list(self.special_tokens)
        self.vocab, self.special_tokens = vocab, {}
        if special_tokens is None:
            self.add_special_tokens(names)
        else:
            for token, i in special_tokens.items():
                self.special_tokens[token] = int(i)
                self.vocab[int(i)] = self._token_from_str(token)

    def split_special_tokens(self, text: str) -> list[str]:
        """[ordinary text, special token, ordinary text, ..., ordinary text]: the special tokens at odd positions.

        "a<|endoftext|>b" -> ["a", "<|endoftext|>", "b"]. Scanned left to right; where two special tokens
        start at the same place the longer one wins ("<|end" vs "<|endoftext|>").
        """
        if not self.special_tokens:
            return [text]
        names = sorted(self.special_tokens, key=len, reverse=True)
        return regex.split("(" + "|".join(regex.escape(name) for name in names) + ")", text)

    def encode(self, text: str) -> list[int]:
        """Text -> ids. Special tokens written in the text are recognised (as Hugging Face does)."""
        check_text(text)
        if not self.special_tokens:
            return self._encode_ordinary(text)
        ids = []
        for i, part in enumerate(self.split_special_tokens(text)):
            if i % 2 == 1:  # split() puts the captured separators at odd positions
                ids.append(self.special_tokens[part])
            elif part:
                ids.extend(self._encode_ordinary(part))
        return ids

    def decode(self, ids: list[int]) -> str:
        """Ids -> text. An id outside the vocabulary is a bug upstream, so it raises ValueError."""
        tokens = []
        for i in ids:
            try:
                tokens.append(self.vocab[operator.index(i)])  # accepts numpy/torch ints, refuses 1.5 and "3"
            except (TypeError, KeyError):
                raise ValueError(f"id {i!r} is not in the vocabulary (valid ids: 0..{self.vocab_size - 1})") from None
        return self._join(tokens)

    def save(self, path) -> None:
        """Write the tokenizer to a human-readable JSON file; `Tokenizer.load` reads it back."""
        state = {"type": type(self).__name__, "special_tokens": self.special_tokens, **self._state()}
        Path(path).write_text(_to_json(state), encoding="utf-8")

    @classmethod
    def load(cls, path) -> Tokenizer:
        """Read a file written by `save`; returns an instance of the class that saved it."""
        state = json.loads(Path(path).read_text(encoding="utf-8"))
        kinds = {kind.__name__: kind for kind in Tokenizer.__subclasses__()}
        found = state.get("type") if isinstance(state, dict) else None
        if found not in kinds:
            raise ValueError(f"{path}: unknown tokenizer type {found!r}, expected one of {sorted(kinds)}")
        if not issubclass(kinds[found], cls):
            raise ValueError(f"{path} holds a {found}, not a {cls.__name__}")
        tokenizer = kinds[found]()
        tokenizer._load_state(state)
        return tokenizer

    # Defaults for tokenizers whose tokens are strings (characters, words); BPE overrides them.

    def _token_from_str(self, text: str):
        return text

    def _join(self, tokens: list) -> str:
        return "".join(tokens)

    def _encode_ordinary(self, text: str) -> list[int]:
        raise NotImplementedError

    def _set_tokens(self, tokens: list[str], special_tokens: dict[str, int] | None = None) -> None:
        self.token_to_id = {token: i for i, token in enumerate(tokens)}
        self._set_vocab(dict(enumerate(tokens)), special_tokens)

    def _state(self) -> dict:
        return {"tokens": list(self.token_to_id)}  # ordinary tokens, in id order

    def _load_state(self, state: dict) -> None:
        self._set_tokens(state["tokens"], state["special_tokens"])


def _to_json(state: dict) -> str:
    """JSON with one list item per line: readable and diff-friendly."""
    lines = []
    for key, value in state.items():
        if isinstance(value, list) and value and not isinstance(value[0], int):
            items = ",\n    ".join(json.dumps(item, ensure_ascii=False) for item in value)
            lines.append(f"  {json.dumps(key)}: [\n    {items}\n  ]")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


# ---------------------------------------------------------------- characters and words


class CharTokenizer(Tokenizer):
    """One token per character. With special_tokens=["<unk>"], unseen characters become <unk>."""

    def train(self, text: str) -> CharTokenizer:
        """Vocabulary = the sorted set of characters in `text`, then the special tokens."""
        self._set_tokens(sorted(set(check_training_text(text))))
        return self

    def _encode_ordinary(self, text: str) -> list[int]:
        unk = self.special_tokens.get(UNK)
        ids = []
        for char in text:
            i = self.token_to_id.get(char, unk)
            if i is None:
                raise ValueError(f"character {char!r} is not in the vocabulary (train on it, or add a {UNK} token)")
            ids.append(i)
        return ids


class WordTokenizer(Tokenizer):
    """One token per word or punctuation mark (regex `\\w+|[^\\w\\s]`); unknown words become <unk>.

    Decoding is lossy: tokens are joined by single spaces, so "Hi, you." comes back as "Hi , you .",
    and every unknown word as "<unk>".
    """

    def __init__(self, special_tokens: list[str] | None = None):
        super().__init__([UNK, *(special_tokens or [])])

    def train(self, text: str, vocab_size: int) -> WordTokenizer:
        """Keep the vocab_size - len(special_tokens) most frequent words (ties: first seen first).

        The vocabulary is smaller than vocab_size if the text has fewer distinct words.
        """
        words = regex.findall(WORD_PATTERN, check_training_text(text))
        if not isinstance(vocab_size, int) or vocab_size <= len(self.special_tokens):
            raise ValueError(
                f"vocab_size must be an int > {len(self.special_tokens)} (the number of special "
                f"tokens), got {vocab_size!r}"
            )
        kept = Counter(words).most_common(vocab_size - len(self.special_tokens))  # ties keep first-seen order
        self._set_tokens([word for word, _ in kept])
        return self

    def _encode_ordinary(self, text: str) -> list[int]:
        unk = self.special_tokens[UNK]
        return [self.token_to_id.get(word, unk) for word in regex.findall(WORD_PATTERN, text)]

    def _join(self, tokens: list[str]) -> str:
        return " ".join(tokens)


# ---------------------------------------------------------------- byte-level BPE


class BPETokenizer(Tokenizer):
    """Byte-level BPE, as in GPT-2: text -> UTF-8 bytes -> learned merges of adjacent pairs.

    Untrained, it is a plain byte tokenizer (256 tokens). `train` learns merges from text;
    `from_gpt2_files` loads GPT-2's. Special tokens get the ids after all byte and merge tokens.
    """

    cache_size = 2**15  # chunks whose ids are remembered; when full the cache starts over, so memory stays bounded

    def __init__(self, pattern: str = GPT2_SPLIT_PATTERN, special_tokens: list[str] | None = None):
        self.pattern = pattern
        self.byte_ids = list(range(256))  # byte value -> id: the identity, except in GPT-2's files
        self.merges: dict[tuple[int, int], int] = {}  # (left id, right id) -> new id, in merge order
        super().__init__()
        self._set_vocab(self._vocab_from_merges())
        self.add_special_tokens(special_tokens or [])

    def _vocab_from_merges(self) -> dict[int, bytes]:
        vocab = {i: bytes([b]) for b, i in enumerate(self.byte_ids)}
        for (left, right), new_id in self.merges.items():
            vocab[new_id] = vocab[left] + vocab[right]
        return vocab

    def _set_vocab(self, vocab: dict, special_tokens: dict[str, int] | None = None) -> None:
        super()._set_vocab(vocab, special_tokens)
        self._regex = regex.compile(self.pattern)
        self._ranks = {pair: rank for rank, pair in enumerate(self.merges)}  # earlier merges apply first
        self._cache: dict[str, list[int]] = {}  # chunk -> ids, as GPT-2's encoder does

    def train(self, text: str, vocab_size: int, verbose: bool = False) -> BPETokenizer:
        """Learn vocab_size - 256 merges from `text`; vocab_size counts bytes and merges, not special tokens.

        Each round merges the most frequent adjacent pair into a new token (ids 256, 257, ... in order).
        Pairs that occur once are still merged; only if no pair is left at all does training stop early,
        with a warning, and the vocabulary is smaller than vocab_size.

        Special tokens: the text is first cut at the tokenizer's special tokens (those given to the
        constructor or `add_special_tokens` before training), exactly as `encode` cuts it, and only the
        ordinary text between them is learned from. So documents joined by "<|endoftext|>" give no merge
        across a document boundary and no token made of the marker's bytes ("<|", "|>"), and encode keeps
        the marker as one id. A special token added after training is still encoded as one id, but the
        merges may already contain pieces of it.

        Ties: among pairs with the same count, the pair with the smallest ids (left id, then right id) wins.

        Merges never cross pre-tokenizer chunks, so each distinct chunk ("word") is stored once with its
        frequency, and after a merge only the words that contained the pair are updated.
        """
        check_training_text(text)
        if not isinstance(vocab_size, int) or vocab_size < 256:
            raise ValueError(
                f"vocab_size must be an int >= 256 (one token per byte; special tokens are not "
                f"counted), got {vocab_size!r}"
            )
        chunk_counts = Counter()
        for part in self.split_special_tokens(text)[::2]:  # the ordinary text between special tokens
            chunk_counts.update(self._regex.findall(part))
        words = [list(chunk.encode("utf-8")) for chunk in chunk_counts]
        freqs = list(chunk_counts.values())

        pair_counts = defaultdict(int)  # pair -> occurrences in the whole text
        where = defaultdict(set)  # pair -> indices of the words that contain it
        for i, word in enumerate(words):
            for pair in zip(word, word[1:]):
                pair_counts[pair] += freqs[i]
                where[pair].add(i)
        # A max-heap through negated counts; among equal counts heapq pops the smallest pair: our tie-break.
        heap = [(-count, pair) for pair, count in pair_counts.items()]
        heapq.heapify(heap)

        self.byte_ids = list(range(256))
        self.merges = {}
        token_bytes = {i: bytes([i]) for i in range(256)}  # only for the verbose printout
        while 256 + len(self.merges) < vocab_size and heap:
            neg_count, pair = heapq.heappop(heap)
            count = pair_counts.get(pair, 0)
            if count != -neg_count:
                # Stale entry (lazy deletion). Apart from new pairs, which we push, counts only go down,
                # so an entry is an upper bound: re-queue the pair with its true count and look again.
                if count > 0:
                    heapq.heappush(heap, (-count, pair))
                continue
            new_id = 256 + len(self.merges)
            self.merges[pair] = new_id
            new_pairs = set()  # pairs that contain new_id: the only counts that went up
            for i in where.pop(pair):
                word, freq = words[i], freqs[i]
                words[i] = new_word = merge(word, pair, new_id)
                # Recount this (short) word rather than patch the neighbours of each occurrence.
                old_pairs = list(zip(word, word[1:]))
                for p in old_pairs:
                    pair_counts[p] -= freq
                for p in zip(new_word, new_word[1:]):
                    pair_counts[p] += freq
                    if new_id in p:
                        where[p].add(i)
                        new_pairs.add(p)
                for p in set(old_pairs).difference(zip(new_word, new_word[1:])):
                    if p != pair:
                        where[p].discard(i)
            del pair_counts[pair]
            for p in new_pairs:
                heapq.heappush(heap, (-pair_counts[p], p))
            if verbose:
                token_bytes[new_id] = token_bytes[pair[0]] + token_bytes[pair[1]]
                print(
                    f"merge {len(self.merges)}/{vocab_size - 256}: {pair} -> {new_id} "
                    f"{token_bytes[new_id]!r} had {count} occurrences"
                )
        if 256 + len(self.merges) < vocab_size:
            warnings.warn(
                f"BPE training stopped at vocab size {256 + len(self.merges)} < vocab_size={vocab_size}: "
                "no adjacent pairs left to merge (the training text is too small)",
                stacklevel=2,
            )
        self._set_vocab(self._vocab_from_merges())
        return self

    @classmethod
    def from_gpt2_files(cls, encoder_json, vocab_bpe) -> BPETokenizer:
        """GPT-2's tokenizer from its original files; gives exactly GPT-2's ids.

        encoder.json maps tokens, spelled with `bytes_to_unicode` characters ("Ġthe"), to ids;
        vocab.bpe lists the merges ("Ġ t") in rank order after a "#version" line. GPT-2's byte tokens
        are not numbered in byte order (b"!" is 0), which is why `byte_ids` exists.
        """
        encoder = json.loads(Path(encoder_json).read_text(encoding="utf-8"))
        printable = bytes_to_unicode()
        tokenizer = cls()
        tokenizer.byte_ids = [encoder[printable[b]] for b in range(256)]
        for line in Path(vocab_bpe).read_text(encoding="utf-8").splitlines():
            if line and not line.startswith("#version"):
                left, right = line.split(" ")
                tokenizer.merges[encoder[left], encoder[right]] = encoder[left + right]
        tokenizer._set_vocab(tokenizer._vocab_from_merges(), {"<|endoftext|>": encoder["<|endoftext|>"]})
        return tokenizer

    def _encode_ordinary(self, text: str) -> list[int]:
        ids = []
        for chunk in self._regex.findall(text):
            chunk_ids = self._cache.get(chunk)
            if chunk_ids is None:
                if len(self._cache) >= self.cache_size:
                    self._cache.clear()
                chunk_ids = self._cache[chunk] = self._encode_chunk(chunk)
            ids.extend(chunk_ids)
        return ids

    def _encode_chunk(self, chunk: str) -> list[int]:
        """Apply the merges to one chunk: always the earliest-learned pair present, all its occurrences at once."""
        ids = [self.byte_ids[b] for b in chunk.encode("utf-8")]
        while len(ids) >= 2:
            pair = min(get_pair_counts(ids), key=lambda p: self._ranks.get(p, float("inf")))
            if pair not in self._ranks:
                break  # no learned pair left in this chunk
            ids = merge(ids, pair, self.merges[pair])
        return ids

    def _token_from_str(self, text: str) -> bytes:
        return text.encode("utf-8")

    def _join(self, tokens: list[bytes]) -> str:
        # A token can hold part of a UTF-8 character; an incomplete character decodes as U+FFFD.
        return b"".join(tokens).decode("utf-8", errors="replace")

    def _state(self) -> dict:
        printable = bytes_to_unicode()
        return {
            "pattern": self.pattern,
            "byte_ids": self.byte_ids,
            # [left id, right id, new id, the new token spelled GPT-2 style], in merge order
            "merges": [
                [left, right, new_id, "".join(printable[b] for b in self.vocab[new_id])]
                for (left, right), new_id in self.merges.items()
            ],
        }

    def _load_state(self, state: dict) -> None:
        self.pattern = state["pattern"]
        self.byte_ids = [int(i) for i in state["byte_ids"]]
        self.merges = {(int(left), int(right)): int(new_id) for left, right, new_id, _ in state["merges"]}
        self._set_vocab(self._vocab_from_merges(), state["special_tokens"])
