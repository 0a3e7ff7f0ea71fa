"""Toy data the lectures train on, the same every time for the same seed (lecture 6).

    english_number, german_number   n in 0..999999 written out: "twenty-three", "dreiundzwanzig"
    english_tokens, german_tokens   the same as tokens: English words (and "-"), German morphemes
    Vocabulary                      token <-> id, with <pad> = 0, <bos> = 1, <eos> = 2
    number_translation_dataset      English -> German number words as padded id tensors, train/val disjoint,
                                    every length (1..5 digits) equally common
    accuracy_by_length              exact-match counts split by the number of digits
    CharDataset, moby_dick_dataset  a text as characters, a train/val split, random (x, y) windows
    text_to_text_example/_dataset   prefixed string -> string tasks for T5 (lecture 9): translate, reverse, sort,
                                    and classify (e-mails as spam / ham: classification as text)
    text_to_text_generate           greedy answers of an encoder-decoder such as T5 (scratch.sampling's loop)

Every data set has two splits, "train" and "val" (held out: never trained on, measured on).

Why numbers: translating them needs real reordering (German says the units before the tens,
"three-and-twenty"), a few irregular words (elf, zwölf, sechzehn, siebzehn, dreißig, "eins" vs "ein"),
and the right answer is known for every input, so accuracy on held-out numbers measures generalisation.
German is tokenised into morphemes, so the German word is exactly the concatenation of its tokens:
    twenty - three thousand one hundred one  ->  drei und zwanzig tausend ein hundert eins
                                                 "dreiundzwanzigtausendeinhunderteins"
"""

from __future__ import annotations

import functools
import random
import re
import zlib
from dataclasses import dataclass

import torch

from scratch import assets, validate
from scratch.sampling import generate
from scratch.tokenization import CharTokenizer
from scratch.training import eval_mode

MAX_NUMBER = 999_999

ENGLISH_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
ENGLISH_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
GERMAN_UNITS = [
    "null",
    "eins",
    "zwei",
    "drei",
    "vier",
    "fünf",
    "sechs",
    "sieben",
    "acht",
    "neun",
    "zehn",
    "elf",
    "zwölf",
    "dreizehn",
    "vierzehn",
    "fünfzehn",
    "sechzehn",
    "siebzehn",
    "achtzehn",
    "neunzehn",
]
GERMAN_TENS = ["", "", "zwanzig", "dreißig", "vierzig", "fünfzig", "sechzig", "siebzig", "achtzig", "neunzig"]

# The closed vocabularies of the task, in a readable order (every token that can ever occur).
ENGLISH_TOKENS = [*ENGLISH_UNITS, *ENGLISH_TENS[2:], "-", "hundred", "thousand"]
GERMAN_TOKENS = [*GERMAN_UNITS, "ein", *GERMAN_TENS[2:], "und", "hundert", "tausend"]


SPLITS = ("train", "val")


def _check_number(n) -> int:
    if (n := validate.integer(n, "n", minimum=0)) > MAX_NUMBER:
        raise ValueError(f"n must be in 0..{MAX_NUMBER}, got {n}")
    return n


# ---------------------------------------------------------------- English


def _english_below_thousand(n: int, last: bool) -> list[str]:
    """1..999 -> ["three", "hundred", "forty", "-", "two"] (American style: no "and"; `last` matters in German only)."""
    hundreds, rest = divmod(n, 100)
    tokens = [ENGLISH_UNITS[hundreds], "hundred"] if hundreds else []
    if rest >= 20:
        tens, unit = divmod(rest, 10)
        tokens += [ENGLISH_TENS[tens], "-", ENGLISH_UNITS[unit]] if unit else [ENGLISH_TENS[tens]]
    elif rest:
        tokens.append(ENGLISH_UNITS[rest])
    return tokens


def _number_tokens(n: int, below_thousand, zero: str, thousand: str) -> list[str]:
    """n = thousands · 1000 + rest, in either language: below_thousand(thousands), thousand, below_thousand(rest)."""
    if (n := _check_number(n)) == 0:
        return [zero]
    thousands, rest = divmod(n, 1000)
    tokens = below_thousand(thousands, last=False) + [thousand] if thousands else []
    return tokens + (below_thousand(rest, last=True) if rest else [])


def english_tokens(n: int) -> list[str]:
    """21121 -> ["twenty", "-", "one", "thousand", "one", "hundred", "twenty", "-", "one"]."""
    return _number_tokens(n, _english_below_thousand, "zero", "thousand")


def english_from_tokens(tokens: list[str]) -> str:
    """Words separated by spaces, except around "-": twenty-one thousand."""
    return " ".join(tokens).replace(" - ", "-")


def english_number(n: int) -> str:
    """21121 -> "twenty-one thousand one hundred twenty-one"."""
    return english_from_tokens(english_tokens(n))


# ---------------------------------------------------------------- German


def _german_below_thousand(n: int, last: bool) -> list[str]:
    """1..999 as morphemes. A final 1 is "eins", but "ein" before und/hundert/tausend (last=False:
    tausend follows): 1 eins, 21 ein-und-zwanzig, 100 ein-hundert, 1000 ein-tausend, 101 ein-hundert-eins."""

    def unit(d):  # a digit that something follows
        return "ein" if d == 1 else GERMAN_UNITS[d]

    hundreds, rest = divmod(n, 100)
    tokens = [unit(hundreds), "hundert"] if hundreds else []
    if rest >= 20:
        tens, ones = divmod(rest, 10)
        tokens += [unit(ones), "und", GERMAN_TENS[tens]] if ones else [GERMAN_TENS[tens]]  # units first
    elif rest == 1:
        tokens.append("eins" if last else "ein")
    elif rest:
        tokens.append(GERMAN_UNITS[rest])  # 2..19, teens included (elf, zwölf, sechzehn, siebzehn)
    return tokens


def german_tokens(n: int) -> list[str]:
    """21121 -> ["ein", "und", "zwanzig", "tausend", "ein", "hundert", "ein", "und", "zwanzig"]."""
    return _number_tokens(n, _german_below_thousand, "null", "tausend")


def german_from_tokens(tokens: list[str]) -> str:
    """German writes a number below a million as one word: the tokens concatenated."""
    return "".join(tokens)


def german_number(n: int) -> str:
    """21121 -> "einundzwanzigtausendeinhunderteinundzwanzig"."""
    return german_from_tokens(german_tokens(n))


# ---------------------------------------------------------------- vocabulary and data set

PAD, BOS, EOS = "<pad>", "<bos>", "<eos>"


class Vocabulary:
    """A fixed list of tokens and their ids, the special tokens first: <pad> = 0, <bos> = 1, <eos> = 2.

    (The task's vocabulary is closed and known in advance, so nothing is learned from data as the
    tokenizers of lecture 1 do; pad_id = 0 is what the models expect by default.)
    """

    def __init__(self, tokens: list[str]):
        self.itos = [PAD, BOS, EOS, *tokens]  # id -> token
        self.stoi = {token: i for i, token in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("the tokens of a vocabulary must be distinct (and not <pad>, <bos>, <eos>)")
        self.pad_id, self.bos_id, self.eos_id = 0, 1, 2

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: list[str]) -> list[int]:
        try:
            return [self.stoi[token] for token in tokens]
        except KeyError as error:
            raise ValueError(f"token {error.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids) -> list[str]:
        """Ids -> tokens, skipping <pad> and <bos> and stopping at the first <eos>."""
        tokens = []
        for i in ids.tolist() if isinstance(ids, torch.Tensor) else ids:
            if not 0 <= i < len(self.itos):
                raise ValueError(f"id {i} is outside the vocabulary 0..{len(self.itos) - 1}")
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                tokens.append(self.itos[i])
        return tokens

    def __repr__(self) -> str:
        return f"Vocabulary({len(self)} tokens: {', '.join(self.itos[:8])}, ...)"


def _pad(rows: list[list[int]], pad_id: int) -> torch.Tensor:
    width = max(len(row) for row in rows)
    return torch.tensor([row + [pad_id] * (width - len(row)) for row in rows], dtype=torch.long)


@dataclass
class NumberTranslation:
    """English -> German number words. src: (n, S) English ids; tgt: (n, T) [<bos>, German ids, <eos>];
    both padded on the right with 0. Rows of train_* and val_* are train_numbers and val_numbers."""

    src_vocab: Vocabulary
    tgt_vocab: Vocabulary
    train_numbers: list[int]
    val_numbers: list[int]
    train_src: torch.Tensor
    train_tgt: torch.Tensor
    val_src: torch.Tensor
    val_tgt: torch.Tensor

    def tensors(self, split: str) -> tuple[torch.Tensor, torch.Tensor]:
        validate.choice(split, "split", SPLITS)
        return (self.train_src, self.train_tgt) if split == "train" else (self.val_src, self.val_tgt)

    def get_batch(self, split: str = "train", batch_size: int = 64, generator: torch.Generator | None = None):
        """batch_size random rows of a split, for teacher forcing: (src, tgt_in, tgt_out), with
        tgt_in = tgt[:, :-1] (starts with <bos>) and tgt_out = tgt[:, 1:] (ends with <eos>)."""
        src, tgt = self.tensors(split)
        rows = torch.randint(len(src), (batch_size,), generator=generator)
        return src[rows], tgt[rows, :-1], tgt[rows, 1:]

    def english(self, src_ids) -> str:
        return english_from_tokens(self.src_vocab.decode(src_ids))

    def german(self, tgt_ids) -> str:
        return german_from_tokens(self.tgt_vocab.decode(tgt_ids))


NUMBER_DRAWS = ("by-length", "uniform")
# Numbers whose English name is a single word: zero..twenty and the tens thirty..ninety (28 numbers).
ONE_WORD_NUMBERS = [n for n in range(100) if len(english_tokens(n)) == 1]


def number_length(n: int) -> int:
    """The number of decimal digits: 7 -> 1, 23456 -> 5 (0 has one digit)."""
    return len(str(_check_number(n)))


def _numbers_of_length(digits: int, max_number: int) -> range:
    return range(0 if digits == 1 else 10 ** (digits - 1), min(10**digits - 1, max_number) + 1)


def number_translation_dataset(
    seed: int = 0, n_train: int = 20000, n_val: int = 2000, max_number: int = 99999, draw: str = "by-length"
) -> NumberTranslation:
    """English -> German number words for training (n_train pairs) and held-out validation (n_val pairs).

    draw="by-length" (the default): every length is equally common. A training number is drawn by picking its
    number of digits uniformly from 1..len(str(max_number)), then a number of that length uniformly, so the ten
    one-digit numbers are as frequent as all 90,000 five-digit ones together and repeat many times, while a long
    number is rarely drawn twice. The held-out numbers are fixed by their text, as in lecture 9: n is held out
    if crc32(str(n)) is 0 mod 10 (`is_held_out`), and never drawn for training. The val split is n_val
    *distinct* held-out numbers drawn the same way, length by length; a length that runs out of held-out
    numbers drops out (below 100,000 only one one-digit number, 6, and eight two-digit numbers are held out).

    draw="uniform": every number equally likely, n_train + n_val distinct numbers from a permutation (the first
    n_train train, the rest val). Numbers below 1,000 are then 1 % of the data and one-word numbers
    ("nine", "twenty") about 0.03 %, so a model trained on it may never see one.

    Learnable on a CPU (lecture 6; measured by tools/number_lengths.py): Transformer(d_model=64, h=4, N=2,
    d_ff=256) trained 600 steps of 64 pairs (lr 1e-3, warm-up 30, seed 0) on the default data translates 1,999
    of its 2,000 held-out numbers and all 28 one-word numbers exactly; trained on draw="uniform" it gets 1,998
    of that data's 2,000 held-out numbers (nearly all five-digit) but none of the one-word numbers.
    """
    max_number = _check_number(max_number)
    n_train, n_val = validate.integer(n_train, "n_train"), validate.integer(n_val, "n_val", minimum=0)
    if draw not in NUMBER_DRAWS:
        raise ValueError(f"draw must be one of {', '.join(map(repr, NUMBER_DRAWS))}, got {draw!r}")
    if draw == "uniform":
        if n_train + n_val > max_number + 1:
            raise ValueError(
                f"need n_train + n_val <= {max_number + 1} (the numbers 0..{max_number}), got "
                f"n_train={n_train}, n_val={n_val}"
            )
        order = torch.randperm(max_number + 1, generator=torch.Generator().manual_seed(seed)).tolist()
        train_numbers, val_numbers = order[:n_train], order[n_train : n_train + n_val]
    else:
        train_numbers, val_numbers = _draw_numbers_by_length(seed, n_train, n_val, max_number)
    numbers = train_numbers + val_numbers
    src_vocab, tgt_vocab = Vocabulary(ENGLISH_TOKENS), Vocabulary(GERMAN_TOKENS)
    src = _pad([src_vocab.encode(english_tokens(n)) for n in numbers], src_vocab.pad_id)
    tgt = _pad(
        [[tgt_vocab.bos_id, *tgt_vocab.encode(german_tokens(n)), tgt_vocab.eos_id] for n in numbers], tgt_vocab.pad_id
    )
    return NumberTranslation(
        src_vocab, tgt_vocab, train_numbers, val_numbers, src[:n_train], tgt[:n_train], src[n_train:], tgt[n_train:]
    )


def _draw_numbers_by_length(seed: int, n_train: int, n_val: int, max_number: int) -> tuple[list[int], list[int]]:
    rng = random.Random(seed)
    lengths = range(1, len(str(max_number)) + 1)
    held_out = {d: [n for n in _numbers_of_length(d, max_number) if is_held_out(str(n))] for d in lengths}
    if n_val > sum(map(len, held_out.values())):
        raise ValueError(
            f"need n_val <= {sum(map(len, held_out.values()))}, the held-out numbers in "
            f"0..{max_number}, got n_val={n_val}"
        )
    train = []
    while len(train) < n_train:  # 1 in 10 draws is held out and redrawn
        numbers = _numbers_of_length(rng.choice(lengths), max_number)
        n = numbers[rng.randrange(len(numbers))]
        if not is_held_out(str(n)):
            train.append(n)
    for numbers in held_out.values():
        rng.shuffle(numbers)
    val = []
    while len(val) < n_val:  # a length, then its next unused held-out number
        d = rng.choice([d for d in lengths if held_out[d]])
        val.append(held_out[d].pop())
    return train, val


def accuracy_by_length(numbers: list[int], correct: list[bool]) -> dict[int, tuple[int, int]]:
    """Exact-match counts split by the number of digits: {digits: (correct, total)}, digits ascending.

    numbers[i] is a translated number, correct[i] whether its translation was right, e.g.
    accuracy_by_length([6, 23, 45], [True, False, True]) == {1: (1, 1), 2: (1, 2)}.
    """
    if len(numbers) != len(correct) or not numbers:
        raise ValueError(f"need as many numbers as verdicts, and at least one; got {len(numbers)} and {len(correct)}")
    counts: dict[int, list[int]] = {}
    for n, ok in zip(numbers, correct):
        tally = counts.setdefault(number_length(n), [0, 0])
        tally[0] += bool(ok)
        tally[1] += 1
    return {d: (c, t) for d, (c, t) in sorted(counts.items())}


# ---------------------------------------------------------------- character-level language modelling


class CharDataset:
    """A text as one long sequence of character ids, split into train (the first part) and val (the end).

    A batch is batch_size random windows: x = data[i : i + block_size] and y = data[i + 1 : i + block_size + 1],
    so y[t] is the character after x[0..t]: block_size next-character predictions per window.
    """

    def __init__(self, text: str, val_fraction: float = 0.1):
        if not 0 < val_fraction < 1:
            raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
        self.tokenizer = CharTokenizer().train(text)  # vocabulary = the sorted characters
        data = torch.tensor(self.tokenizer.encode(text), dtype=torch.long)
        n_val = int(len(data) * val_fraction)
        if n_val < 2 or len(data) - n_val < 2:
            raise ValueError(
                f"the text ({len(data)} characters) is too short to split with val_fraction {val_fraction}"
            )
        self.train_data, self.val_data = data[:-n_val], data[-n_val:]

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    def encode(self, text: str) -> torch.Tensor:
        return torch.tensor(self.tokenizer.encode(text), dtype=torch.long)

    def decode(self, ids) -> str:
        return self.tokenizer.decode(ids.tolist() if isinstance(ids, torch.Tensor) else ids)

    def get_batch(
        self,
        split: str = "train",
        batch_size: int = 32,
        block_size: int = 128,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x, y: (batch_size, block_size) ids, y shifted one character to the right of x."""
        data = self.train_data if validate.choice(split, "split", SPLITS) == "train" else self.val_data
        if not 1 <= block_size < len(data):
            raise ValueError(f"block_size must be in 1..{len(data) - 1} for the {split} split, got {block_size}")
        starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)  # (batch,)
        index = starts[:, None] + torch.arange(block_size)  # (batch, block)
        return data[index], data[index + 1]


def moby_dick_dataset(val_fraction: float = 0.1) -> CharDataset:
    """Moby-Dick as characters; the last val_fraction of the novel is the validation split."""
    return CharDataset(assets.moby_dick_text(), val_fraction)


# ---------------------------------------------------------------- text-to-text tasks (lecture 9, T5)
#
# T5 reads a string and writes a string; the task is named by a prefix in the input. Four toy tasks whose
# right answer is known for every input, so exact match on held-out inputs measures what a model learned:
#
#   "translate English to German: twenty-three"   ->  "dreiundzwanzig"
#   "translate German to English: dreiundzwanzig" ->  "twenty-three"
#   "reverse: k d a x"                            ->  "x a d k"        (letters)
#   "sort: 42 7 19"                               ->  "7 19 42"        (numbers 0..99, ascending)
#
# A fifth task is classification as text, T5's way: the answer is a word.
#
#   "classify: Have You Dreamed Of Your Own Home Based Business? ..."   ->  "spam"   (or "ham")
#
# its input the first 300 characters of an e-mail of the SpamAssassin corpus (subject and body, HTML tags
# and line breaks removed; an npm asset, see scratch.assets.spam_emails).
#
# Held-out inputs are fixed by a hash of their content, not by a seed: a number (in either translation
# direction), a letter sequence or an e-mail text is held out if crc32 of its text is 0 mod 10; a sort input
# if crc32 of its numbers *in sorted order* is, so no permutation of a held-out input is ever trained on.

TEXT_TO_TEXT_TASKS = ("translate English to German", "translate German to English", "reverse", "sort")
CLASSIFY = "classify"
T5_TASKS = (*TEXT_TO_TEXT_TASKS, CLASSIFY)  # the tasks of the course's tiny T5
SPAM_LABELS = ("ham", "spam")  # the target words, by label 0 / 1
EMAIL_CHARS = 300  # characters of an e-mail a classify input keeps
LETTERS = "abcdefghijklmnopqrstuvwxyz"
HELD_OUT_MODULUS = 10  # 1 in 10 inputs is held out


def _check_task(task: str) -> str:
    if task not in T5_TASKS:
        raise ValueError(f"unknown task {task!r}; known tasks: {', '.join(map(repr, T5_TASKS))}")
    return task


def is_held_out(key: str) -> bool:
    """Whether an input (its canonical text) belongs to the val split: a fixed hash, the same on any machine."""
    return zlib.crc32(key.encode("utf-8")) % HELD_OUT_MODULUS == 0


def task_prefix(task: str) -> str:
    """ "reverse" -> "reverse: " (what T5 puts in front of every input of the task)."""
    return _check_task(task) + ": "


def task_of(source: str) -> str:
    """The task a prefixed source names: "sort: 3 1" -> "sort"; ValueError if it names none."""
    for task in T5_TASKS:
        if source.startswith(task + ": "):
            return task
    raise ValueError(
        f"{source[:40]!r} starts with no known task prefix ({', '.join(repr(t + ': ') for t in T5_TASKS)})"
    )


def email_text(email: dict, max_chars: int | None = EMAIL_CHARS) -> str:
    """An e-mail as one line of text: subject and body, HTML tags dropped, whitespace collapsed, cut to
    max_chars characters (None: all of it). `email` is a dict of scratch.assets.spam_emails()."""
    text = re.sub(r"<[^>]*>", " ", f"{email['subject']} {email['text']}")
    text = " ".join(text.split())
    return text if max_chars is None else text[:max_chars]


@functools.lru_cache(maxsize=1)
def _spam_examples() -> dict[str, list[tuple[str, str]]]:
    """(text, "spam" / "ham") of every e-mail, by split (held out: crc32 of the text is 0 mod 10)."""
    splits: dict[str, list[tuple[str, str]]] = {"train": [], "val": []}
    for email in assets.spam_emails():
        text = email_text(email)
        splits["val" if is_held_out(text) else "train"].append((text, SPAM_LABELS[email["label"]]))
    return splits


def spam_examples(split: str = "train") -> list[tuple[str, str]]:
    """The classify task's e-mails of a split, as (text, label word), in the corpus's fixed order.

    5,438 train and 608 held-out e-mails (31 % and 32 % spam). (Loading the corpus takes a few seconds
    the first time.) Identical texts fall in the same split, since the split is a hash of the text.
    """
    return list(_spam_examples()[validate.choice(split, "split", SPLITS)])


def text_to_text_example(
    task: str, rng: random.Random, split: str = "train", max_number: int = MAX_NUMBER
) -> tuple[str, str]:
    """One (source, target) pair of a task, source = prefix + input, drawn with `rng` from `split`.

    Translations use numbers 0..max_number, the number of digits uniform (short numbers are as common as
    long ones); "reverse" 3..8 lowercase letters; "sort" 3..7 numbers 0..99; "classify" an e-mail of the split,
    each equally likely.
    """
    _check_task(task)
    validate.choice(split, "split", SPLITS)
    max_number = _check_number(max_number)
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
    if task == CLASSIFY:
        text, label = rng.choice(_spam_examples()[split])
        return task_prefix(task) + text, label
    want_held_out = split == "val"
    while True:  # draw until the input falls in the wanted split (1 in 10 for val: a few draws)
        if task.startswith("translate"):
            digits = rng.randint(1, len(str(max_number)))  # as many 2-digit as 6-digit numbers
            n = rng.randint(0 if digits == 1 else 10 ** (digits - 1), min(10**digits - 1, max_number))
            key = str(n)
            english, german = english_number(n), german_number(n)
            source, target = (english, german) if task == "translate English to German" else (german, english)
        elif task == "reverse":
            letters = rng.choices(LETTERS, k=rng.randint(3, 8))
            key = source = " ".join(letters)
            target = " ".join(reversed(letters))
        else:  # sort
            numbers = [rng.randint(0, 99) for _ in range(rng.randint(3, 7))]
            source = " ".join(map(str, numbers))
            key = target = " ".join(map(str, sorted(numbers)))
        if is_held_out(key) == want_held_out:
            return task_prefix(task) + source, target


def text_to_text_dataset(
    n_per_task: int, split: str = "train", seed: int = 0, tasks=TEXT_TO_TEXT_TASKS, max_number: int = MAX_NUMBER
) -> list[tuple[str, str]]:
    """n_per_task distinct (source, target) pairs of every task in `tasks`, task after task, from `split`."""
    n_per_task = validate.integer(n_per_task, "n_per_task")
    if isinstance(tasks, str):
        raise TypeError("tasks must be a list of task names, not one string")
    rng = random.Random(seed)
    pairs = []
    for task in tasks:
        _check_task(task)
        seen = set()
        for _ in range(100 * n_per_task):
            pair = text_to_text_example(task, rng, split, max_number)
            if pair[0] not in seen:
                seen.add(pair[0])
                pairs.append(pair)
            if len(seen) == n_per_task:
                break
        else:
            raise ValueError(f"task {task!r} has fewer than {n_per_task} distinct {split} inputs")
    return pairs


def exact_match(predictions: list[str], targets: list[str]) -> float:
    """The fraction of predictions equal to their target, character for character (after strip())."""
    if len(predictions) != len(targets) or not targets:
        raise ValueError(
            f"need as many predictions as targets, and at least one; got {len(predictions)} and {len(targets)}"
        )
    return sum(p.strip() == t.strip() for p, t in zip(predictions, targets)) / len(targets)


def text_to_text_generate(
    model, tokenizer, sources: list[str], batch_size: int = 256, max_new_tokens: int = 48
) -> list[str]:
    """Greedy answers of an encoder-decoder (a transformers T5, e.g. scratch.pretrained.load_tiny_t5()) to a
    list of source strings, in batches: each batch is encoded once, then scratch.sampling.generate decodes."""
    answers = []
    with eval_mode(model):
        for start in range(0, len(sources), batch_size):
            batch = tokenizer(list(sources[start : start + batch_size]), return_tensors="pt", padding=True)
            begin = torch.full((len(batch["input_ids"]), 1), model.config.decoder_start_token_id)
            out = generate(
                _cached_decoder(model, batch),
                begin,
                max_new_tokens,
                eos_id=tokenizer.eos_token_id,
                pad_id=tokenizer.pad_token_id,
                use_cache=False,
            )
            answers += tokenizer.batch_decode(out, skip_special_tokens=True)
    return answers


def _cached_decoder(model, batch):
    """T5's decoder as a callable target ids -> logits for generate: the source is encoded once, and transformers'
    own KV cache (past_key_values) means only the newest target token goes through the decoder at each step."""
    memory, state = model.get_encoder()(**batch), {"cache": None, "seen": 0}

    def decoder(tgt: torch.Tensor) -> torch.Tensor:
        out = model(
            encoder_outputs=memory,
            attention_mask=batch["attention_mask"],
            use_cache=True,
            decoder_input_ids=tgt[:, state["seen"] :],
            past_key_values=state["cache"],
        )
        state["cache"], state["seen"] = out.past_key_values, tgt.shape[1]
        return out.logits

    return decoder


def text_to_text_accuracy(model, tokenizer, pairs: list[tuple[str, str]], batch_size: int = 256) -> dict[str, float]:
    """Exact match of greedy answers per task (the task read from each source's prefix)."""
    predictions = text_to_text_generate(model, tokenizer, [s for s, _ in pairs], batch_size)
    by_task: dict[str, tuple[list, list]] = {}
    for (source, target), prediction in zip(pairs, predictions):
        p, t = by_task.setdefault(task_of(source), ([], []))
        p.append(prediction)
        t.append(target)
    return {task: exact_match(p, t) for task, (p, t) in by_task.items()}
