"""course.number_words and corpora: number words checked by hand, the translation and character data sets."""

import random

import pytest
import torch

from course.corpora import CharDataset, email_text, is_held_out, moby_dick_dataset
from course.metrics import exact_match
from course.number_words import (
    ENGLISH_TOKENS,
    GERMAN_TOKENS,
    MAX_NUMBER,
    ONE_WORD_NUMBERS,
    Vocabulary,
    accuracy_by_length,
    check_number,
    english_number,
    english_tokens,
    german_number,
    german_tokens,
    number_length,
    number_translation_dataset,
)
from course.text_to_text import (
    CLASSIFY,
    NEW_TASKS,
    T5_TASKS,
    TEXT_TO_TEXT_TASKS,
    spam_examples,
    task_prefix,
    text_to_text_dataset,
    text_to_text_example,
)

KNOWN = {  # n: (English, German), written by hand
    0: ("zero", "null"),
    1: ("one", "eins"),
    7: ("seven", "sieben"),
    11: ("eleven", "elf"),
    12: ("twelve", "zwölf"),
    13: ("thirteen", "dreizehn"),
    16: ("sixteen", "sechzehn"),
    17: ("seventeen", "siebzehn"),
    20: ("twenty", "zwanzig"),
    21: ("twenty-one", "einundzwanzig"),
    23: ("twenty-three", "dreiundzwanzig"),
    30: ("thirty", "dreißig"),
    31: ("thirty-one", "einunddreißig"),
    56: ("fifty-six", "sechsundfünfzig"),
    60: ("sixty", "sechzig"),
    67: ("sixty-seven", "siebenundsechzig"),
    70: ("seventy", "siebzig"),
    71: ("seventy-one", "einundsiebzig"),
    99: ("ninety-nine", "neunundneunzig"),
    100: ("one hundred", "einhundert"),
    101: ("one hundred one", "einhunderteins"),
    111: ("one hundred eleven", "einhundertelf"),
    216: ("two hundred sixteen", "zweihundertsechzehn"),
    1000: ("one thousand", "eintausend"),
    1001: ("one thousand one", "eintausendeins"),
    1999: ("one thousand nine hundred ninety-nine", "eintausendneunhundertneunundneunzig"),
    2017: ("two thousand seventeen", "zweitausendsiebzehn"),
    10000: ("ten thousand", "zehntausend"),
    21121: ("twenty-one thousand one hundred twenty-one", "einundzwanzigtausendeinhunderteinundzwanzig"),
    31000: ("thirty-one thousand", "einunddreißigtausend"),
    100000: ("one hundred thousand", "einhunderttausend"),
    101001: ("one hundred one thousand one", "einhunderteintausendeins"),
    999999: (
        "nine hundred ninety-nine thousand nine hundred ninety-nine",
        "neunhundertneunundneunzigtausendneunhundertneunundneunzig",
    ),
}


@pytest.mark.parametrize("n", list(KNOWN))
def test_known_numbers(n):
    assert (english_number(n), german_number(n)) == KNOWN[n]


def test_tokens():
    assert english_tokens(23) == ["twenty", "-", "three"]
    assert german_tokens(23) == ["drei", "und", "zwanzig"]  # units before tens
    assert german_tokens(1001) == ["ein", "tausend", "eins"]
    assert german_tokens(17) == ["siebzehn"]


def test_every_number_uses_the_vocabulary_and_concatenates():
    english, german = set(ENGLISH_TOKENS), set(GERMAN_TOKENS)
    for n in range(0, MAX_NUMBER + 1, 997):
        assert set(english_tokens(n)) <= english and set(german_tokens(n)) <= german
        assert german_number(n) == "".join(german_tokens(n))
        assert english_number(n).replace("-", " ").split() == [t for t in english_tokens(n) if t != "-"]
    used = set().union(*(german_tokens(n) for n in range(2000)))
    assert used == german  # every German token occurs below 2000


def test_vocabulary():
    vocab = Vocabulary(["a", "b"])
    assert (vocab.pad_id, vocab.bos_id, vocab.eos_id, len(vocab)) == (0, 1, 2, 5)
    assert vocab.encode(["b", "a"]) == [4, 3]
    assert vocab.decode([1, 3, 4, 2, 3, 0]) == ["a", "b"]  # stops at <eos>
    assert vocab.decode(torch.tensor([3, 0, 0])) == ["a"]
    with pytest.raises(ValueError, match="'c' is not in the vocabulary"):
        vocab.encode(["c"])
    with pytest.raises(ValueError, match="outside the vocabulary 0..4"):
        vocab.decode([7])
    with pytest.raises(ValueError, match="distinct"):
        Vocabulary(["a", "a"])


def test_number_translation_dataset():
    data = number_translation_dataset(seed=1, n_train=300, n_val=50, max_number=999)
    assert len(data.train_numbers) == 300 and len(data.val_numbers) == 50
    assert not set(data.train_numbers) & set(data.val_numbers)  # held out
    assert data.train_src.shape[0] == 300 and data.val_tgt.shape[0] == 50
    assert data.train_src.shape[1] == data.val_src.shape[1] and data.train_tgt.dtype == torch.long
    for i in (0, 57, 299):
        n = data.train_numbers[i]
        assert data.english(data.train_src[i]) == english_number(n)
        assert data.german(data.train_tgt[i]) == german_number(n)
        assert data.train_tgt[i, 0] == data.tgt_vocab.bos_id
    again = number_translation_dataset(seed=1, n_train=300, n_val=50, max_number=999)
    assert again.train_numbers == data.train_numbers and torch.equal(again.val_tgt, data.val_tgt)
    assert number_translation_dataset(seed=2, n_train=300, n_val=50, max_number=999).train_numbers != data.train_numbers
    src, tgt_in, tgt_out = data.get_batch("val", 16, torch.Generator().manual_seed(0))
    assert src.shape == (16, data.val_src.shape[1]) and tgt_in.shape == tgt_out.shape
    assert (tgt_in[:, 0] == data.tgt_vocab.bos_id).all()
    assert torch.equal(tgt_in[:, 1:], tgt_out[:, :-1])  # shifted by one: teacher forcing
    with pytest.raises(ValueError, match="n_val <= 83"):  # 83 held-out numbers below 1000
        number_translation_dataset(n_train=900, n_val=84, max_number=999)
    with pytest.raises(ValueError, match="n_train \\+ n_val <= 1000"):
        number_translation_dataset(n_train=900, n_val=101, max_number=999, draw="uniform")
    with pytest.raises(ValueError, match="draw must be one of 'by-length', 'uniform'"):
        number_translation_dataset(draw="natural")
    with pytest.raises(ValueError, match="unknown split 'test'; choose one of train, val"):
        data.get_batch("test")


def test_every_number_length_is_equally_common_in_training():
    data = number_translation_dataset(seed=0, n_train=20000, n_val=2000)  # lecture 6's data
    lengths = [number_length(n) for n in data.train_numbers]
    for digits in range(1, 6):
        assert abs(lengths.count(digits) / len(lengths) - 0.2) < 0.015  # 4,000 +- 3 sigma
    assert set(ONE_WORD_NUMBERS) - {6, 40} <= set(data.train_numbers)  # 6 and 40 are held out
    assert not any(is_held_out(str(n)) for n in data.train_numbers)
    assert all(is_held_out(str(n)) for n in data.val_numbers)
    assert len(set(data.val_numbers)) == 2000  # distinct held-out numbers
    val_lengths = accuracy_by_length(data.val_numbers, [True] * 2000)
    assert {d: t for d, (_, t) in val_lengths.items() if d <= 3} == {1: 1, 2: 8, 3: 74}  # all there are
    assert val_lengths[4][1] > 800 and val_lengths[5][1] > 800
    # the old data: every number equally likely, so short numbers are nearly absent
    uniform = number_translation_dataset(seed=0, draw="uniform")
    assert sum(n < 100 for n in uniform.train_numbers) < 40 and len(set(uniform.train_numbers)) == 20000


def test_one_word_numbers_and_lengths():
    assert ONE_WORD_NUMBERS == [*range(21), 30, 40, 50, 60, 70, 80, 90]
    assert [english_number(n) for n in ONE_WORD_NUMBERS[-3:]] == ["seventy", "eighty", "ninety"]
    assert [number_length(n) for n in (0, 9, 10, 99999, 100000)] == [1, 1, 2, 5, 6]


def test_accuracy_by_length():
    assert accuracy_by_length([6, 23, 45, 100], [True, False, True, True]) == {1: (1, 1), 2: (1, 2), 3: (1, 1)}
    assert list(accuracy_by_length([1000, 5], [0, 1])) == [1, 4]  # ascending by length
    with pytest.raises(ValueError, match="as many numbers as verdicts"):
        accuracy_by_length([1, 2], [True])
    with pytest.raises(ValueError, match="as many numbers as verdicts"):
        accuracy_by_length([], [])


def test_bad_numbers():
    with pytest.raises(ValueError, match="0..999999"):
        german_number(1_000_000)
    with pytest.raises(ValueError, match="n must be at least 0"):
        english_number(-1)
    with pytest.raises(TypeError, match="must be an int"):
        german_number(2.0)
    # an argument that bounds the numbers is named in the error, not called n
    with pytest.raises(ValueError, match=r"max_number must be in 0\.\.999999, got 1000000"):
        number_translation_dataset(max_number=1_000_000)
    with pytest.raises(ValueError, match="max_number must be at least 0"):
        text_to_text_example("translate English to German", random.Random(0), max_number=-1)
    assert check_number(7) == 7
    with pytest.raises(TypeError, match="count must be an int, got str"):
        check_number("7", "count")


def test_char_dataset():
    data = CharDataset("hello world, hello moby" * 10, val_fraction=0.1)
    assert data.decode(data.encode("hello")) == "hello"
    assert len(data.val_data) == 23 and len(data.train_data) == 207
    g = torch.Generator().manual_seed(0)
    x, y = data.get_batch("train", 4, 8, g)
    assert x.shape == y.shape == (4, 8)
    assert torch.equal(x[:, 1:], y[:, :-1])  # y is x shifted by one character
    with pytest.raises(ValueError, match="block_size"):
        data.get_batch("val", 4, 23)
    with pytest.raises(ValueError, match="unknown split 'test'"):
        data.get_batch("test", 4, 8)
    with pytest.raises(ValueError, match="val_fraction"):
        CharDataset("abc", val_fraction=1.0)


@pytest.mark.assets
def test_moby_dick_dataset():
    data = moby_dick_dataset()
    total = len(data.train_data) + len(data.val_data)
    assert len(data.val_data) == int(total * 0.1)
    assert data.decode(data.train_data[:16]) == "Call me Ishmael."
    x, y = data.get_batch("val", 2, 64, torch.Generator().manual_seed(0))
    assert x.shape == (2, 64) and int(x.max()) < data.vocab_size


# ---------------------------------------------------------------- text-to-text tasks (lecture 9)


def test_text_to_text_examples_are_right():
    rng = random.Random(0)
    number_of = {english_number(n): n for n in range(10000)}
    for _ in range(200):
        source, target = text_to_text_example("translate English to German", rng, max_number=9999)
        assert german_number(number_of[source.removeprefix("translate English to German: ")]) == target
        source, target = text_to_text_example("translate German to English", rng, max_number=9999)
        assert german_number(number_of[target]) == source.removeprefix("translate German to English: ")
        source, target = text_to_text_example("reverse", rng)
        assert target.split() == source.removeprefix("reverse: ").split()[::-1]
        source, target = text_to_text_example("sort", rng)
        numbers = [int(x) for x in source.removeprefix("sort: ").split()]
        assert [int(x) for x in target.split()] == sorted(numbers) and 3 <= len(numbers) <= 7
    assert text_to_text_example("translate German to English", random.Random(1), max_number=21)[0] in {
        f"translate German to English: {german_number(n)}" for n in range(22)
    }


def test_new_tasks_draw_the_lists_of_sort_and_keep_its_split():
    """sort descending and largest: the same number lists as sort from the same rng, held out by the sorted list."""
    assert NEW_TASKS == ("sort descending", "largest") and not set(NEW_TASKS) & set(T5_TASKS)
    for split in ("train", "val"):
        for seed in range(20):
            sort_source, sort_target = text_to_text_example("sort", random.Random(seed), split)
            numbers = sort_source.removeprefix("sort: ")
            descending = text_to_text_example("sort descending", random.Random(seed), split)
            largest = text_to_text_example("largest", random.Random(seed), split)
            assert descending == ("sort descending: " + numbers, " ".join(sort_target.split()[::-1]))
            assert largest == ("largest: " + numbers, str(max(map(int, numbers.split()))))
            assert is_held_out(sort_target) == (split == "val")
    pairs = text_to_text_dataset(5, "val", seed=1, tasks=NEW_TASKS)
    assert [s.split(": ")[0] for s, _ in pairs] == ["sort descending"] * 5 + ["largest"] * 5


def test_translation_directions_agree_and_prefix_names_the_task():
    pairs = text_to_text_dataset(50, "train", seed=3, tasks=["translate English to German"])
    back = {g: e.removeprefix("translate English to German: ") for e, g in pairs}
    for source, target in text_to_text_dataset(50, "train", seed=3, tasks=["translate German to English"]):
        german = source.removeprefix("translate German to English: ")
        assert back.get(german, target) == target
    for task in TEXT_TO_TEXT_TASKS:
        assert (task_prefix(task) + "x y").split(": ")[0] == task


def test_text_to_text_held_out_is_disjoint_from_train():
    train = text_to_text_dataset(2000, "train", seed=0, max_number=9999)
    val = text_to_text_dataset(60, "val", seed=0, max_number=9999)
    assert len(val) == 4 * 60 and len({s for s, _ in val}) == len(val)

    def key(source, target):  # the canonical input the held-out rule hashes
        task = source.split(": ")[0]
        if task == "sort":
            return "sort", target
        if task.startswith("translate"):
            english = source if task == "translate English to German" else target
            return "number", english.removeprefix("translate English to German: ")
        return task, source

    train_keys = {key(s, t) for s, t in train}
    # the English words stand for the number: both translation directions share one split
    val_keys = {key(s, t) for s, t in val}
    assert not train_keys & val_keys
    assert all(is_held_out(t) for s, t in val if s.split(": ")[0] == "sort")
    assert not any(is_held_out(t) for s, t in train if s.split(": ")[0] == "sort")
    assert 0.05 < sum(is_held_out(str(n)) for n in range(10000)) / 10000 < 0.15  # about 1 in 10


def test_text_to_text_dataset_is_deterministic():
    assert text_to_text_dataset(20, "val", seed=5) == text_to_text_dataset(20, "val", seed=5)
    assert text_to_text_dataset(20, "val", seed=5) != text_to_text_dataset(20, "val", seed=6)


def test_exact_match():
    assert exact_match(["a b", "c", "d "], ["a b", "x", "d"]) == pytest.approx(2 / 3)


def test_text_to_text_bad_input():
    rng = random.Random(0)
    with pytest.raises(ValueError, match="unknown task 'summarize'"):
        text_to_text_example("summarize", rng)
    with pytest.raises(ValueError, match="unknown task 'translate English to French'"):
        text_to_text_dataset(3, tasks=["translate English to French"])
    with pytest.raises(ValueError, match="unknown split 'test'; choose one of train, val"):
        text_to_text_example("sort", rng, split="test")
    with pytest.raises(TypeError, match="rng must be a random.Random"):
        text_to_text_example("sort", 0)
    with pytest.raises(ValueError, match="n_per_task must be at least 1"):
        text_to_text_dataset(0)
    with pytest.raises(TypeError, match="list of task names"):
        text_to_text_dataset(3, tasks="sort")
    with pytest.raises(ValueError, match="fewer than 50 distinct val inputs"):
        text_to_text_dataset(50, "val", tasks=["translate English to German"], max_number=99)
    with pytest.raises(ValueError, match="as many predictions as targets"):
        exact_match(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="as many predictions as targets"):
        exact_match([], [])


# ---------------------------------------------------------------- classification as text (lecture 9)


def test_email_text():
    email = {"subject": "Cheap  <b>pills</b>", "text": "<html><body>Buy\n\nnow!</body></html>  " + "x" * 400}
    assert email_text(email, None) == "Cheap pills Buy now! " + "x" * 400
    assert email_text(email) == email_text(email, None)[:300]


@pytest.mark.assets
def test_classify_examples():
    train, val = spam_examples("train"), spam_examples("val")
    assert (len(train), len(val)) == (5438, 608)  # 6,046 e-mails
    assert {label for _, label in train + val} == {"spam", "ham"}
    assert 0.28 < sum(label == "spam" for _, label in val) / len(val) < 0.36
    assert not {t for t, _ in train} & {t for t, _ in val}  # held out by a hash of the text
    assert all(is_held_out(t) for t, _ in val) and all(len(t) <= 300 for t, _ in train)
    source, target = text_to_text_example(CLASSIFY, random.Random(0), "val")
    assert source.split(": ")[0] == CLASSIFY and source.removeprefix("classify: ") in {t for t, _ in val}
    assert target in ("spam", "ham") and T5_TASKS == (*TEXT_TO_TEXT_TASKS, "classify")
    pairs = text_to_text_dataset(3, "val", seed=0, tasks=T5_TASKS)
    assert [s.split(": ")[0] for s, _ in pairs] == [t for t in T5_TASKS for _ in range(3)]
