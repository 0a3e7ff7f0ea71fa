"""English -> German number words, lecture 6's translation task, the same every time for the same seed.

    english_number, german_number   n in 0..999999 written out: "twenty-three", "dreiundzwanzig"
    english_tokens, german_tokens   the same as tokens: English words (and "-"), German morphemes
    Vocabulary                      token <-> id, with <pad> = 0, <bos> = 1, <eos> = 2
    number_translation_dataset      English -> German number words as padded id tensors, train/val disjoint,
                                    every length (1..5 digits) equally common
    accuracy_by_length              exact-match counts split by the number of digits
    check_number                    an argument that must be a number of the task (0..MAX_NUMBER), checked
    pad_right, numbers_of_length    rows of ids padded into one tensor; the numbers with a given count of digits
    digits_conversation             lecture 8's task as chat messages: an English number word, to write in digits

Why numbers: translating them needs real reordering (German says the units before the tens,
"three-and-twenty"), a few irregular words (elf, zwölf, sechzehn, siebzehn, dreißig, "eins" vs "ein"),
and the right answer is known for every input, so accuracy on held-out numbers measures generalisation.
German is tokenised into morphemes, so the German word is exactly the concatenation of its tokens:
    twenty - three thousand one hundred one  ->  drei und zwanzig tausend ein hundert eins
                                                 "dreiundzwanzigtausendeinhunderteins"
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from course.corpora import SPLITS, is_held_out
from scratch import validate
from scratch.l08_sft import SYSTEM

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


def check_number(n, name: str = "n") -> int:
    """n as an int if it is one in 0..MAX_NUMBER (the numbers the task writes out), else a TypeError or ValueError
    naming the argument `name`."""
    if (n := validate.integer(n, name, minimum=0)) > MAX_NUMBER:
        raise ValueError(f"{name} must be in 0..{MAX_NUMBER}, got {n}")
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
    if (n := check_number(n)) == 0:
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
        self.pad_id = 0
        self.bos_id = 1
        self.eos_id = 2

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


def pad_right(rows: list[list[int]], pad_id: int) -> torch.Tensor:
    """Rows of ids as one (len(rows), longest row) tensor, the shorter rows padded on the right with pad_id."""
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
    return len(str(check_number(n)))


def numbers_of_length(digits: int, max_number: int) -> range:
    """The numbers of `digits` decimal digits up to max_number (one digit: 0 to 9)."""
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

    tools/number_lengths.py trains lecture 6's model on both draws and compares them.
    """
    max_number = check_number(max_number, "max_number")
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
    src = pad_right([src_vocab.encode(english_tokens(n)) for n in numbers], src_vocab.pad_id)
    tgt = pad_right(
        [[tgt_vocab.bos_id, *tgt_vocab.encode(german_tokens(n)), tgt_vocab.eos_id] for n in numbers], tgt_vocab.pad_id
    )
    return NumberTranslation(
        src_vocab, tgt_vocab, train_numbers, val_numbers, src[:n_train], tgt[:n_train], src[n_train:], tgt[n_train:]
    )


def _draw_numbers_by_length(seed: int, n_train: int, n_val: int, max_number: int) -> tuple[list[int], list[int]]:
    rng = random.Random(seed)
    lengths = range(1, len(str(max_number)) + 1)
    held_out = {d: [n for n in numbers_of_length(d, max_number) if is_held_out(str(n))] for d in lengths}
    if n_val > sum(map(len, held_out.values())):
        raise ValueError(
            f"need n_val <= {sum(map(len, held_out.values()))}, the held-out numbers in "
            f"0..{max_number}, got n_val={n_val}"
        )
    train = []
    while len(train) < n_train:  # 1 in 10 draws is held out and redrawn
        numbers = numbers_of_length(rng.choice(lengths), max_number)
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


# ---------------------------------------------------------------- lecture 8's digits task, as chat messages


def digits_conversation(n: int, with_answer: bool = True) -> list[dict]:
    """[system, user: "Write <n in English words> in digits.", assistant: "<n>"] (the answer only if with_answer)."""
    n = check_number(n)
    question = {"role": "user", "content": f"Write {english_number(n)} in digits."}
    answer = [{"role": "assistant", "content": str(n)}] if with_answer else []
    return [SYSTEM, question, *answer]
