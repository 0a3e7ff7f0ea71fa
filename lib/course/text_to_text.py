"""T5's text-to-text tasks (lecture 9): a prefix names the task, the answer is a string.

    translate English to German: twenty-three      -> dreiundzwanzig
    translate German to English: dreiundzwanzig    -> twenty-three
    reverse: k d a x                               -> x a d k          (letters)
    sort: 42 7 19                                  -> 7 19 42          (numbers 0..99, ascending)
    classify: Have You Dreamed Of Your Own ...     -> spam             (or ham: classification as text)

Two more tasks on the same lists of numbers, which the tiny T5 never saw (lecture 9 teaches it one, exercise 9.5
the other):

    sort descending: 42 7 19                       -> 42 19 7
    largest: 42 7 19                               -> 42

The first four have a right answer known for every input, so exact match on held-out inputs measures what a model
learned; classify's input is the first 300 characters of a SpamAssassin e-mail (course.corpora.email_text).
Held-out inputs are fixed by a hash of their content, not by a seed: a number (in either translation
direction), a letter sequence or an e-mail text is held out if crc32 of its text is 0 mod 10; a sort input
if crc32 of its numbers *in sorted order* is, so no permutation of a held-out input is ever trained on.

    text_to_text_example/_dataset   (source, target) pairs of a split
    spam_examples                   the classify task's e-mails of a split
    text_to_text_generate           greedy answers of an encoder-decoder such as T5 (scratch.l10_decoding's loop)
    text_to_text_accuracy           exact match per task
    text_to_text_batch              a batch for a transformers T5: source ids and labels, padding as -100
    fine_tune                       train a T5 on (source, target) pairs with scratch.l06_training.train
"""

from __future__ import annotations

import functools
import random

import torch

from course import corpora
from course.metrics import exact_match
from course.number_words import MAX_NUMBER, check_number, english_number, german_number, numbers_of_length
from scratch import validate
from scratch.l06_training import eval_mode, hf_loss, train
from scratch.l10_decoding import generate

TEXT_TO_TEXT_TASKS = ("translate English to German", "translate German to English", "reverse", "sort")


CLASSIFY = "classify"


T5_TASKS = (*TEXT_TO_TEXT_TASKS, CLASSIFY)  # the tasks of the course's tiny T5


NEW_TASKS = ("sort descending", "largest")  # tasks the tiny T5 never saw, drawn like "sort"


SPAM_LABELS = ("ham", "spam")  # the target words, by label 0 / 1


LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _check_task(task: str) -> str:
    if task not in (*T5_TASKS, *NEW_TASKS):
        raise ValueError(f"unknown task {task!r}; known tasks: {', '.join(map(repr, (*T5_TASKS, *NEW_TASKS)))}")
    return task


def task_prefix(task: str) -> str:
    """ "reverse" -> "reverse: " (what T5 puts in front of every input of the task)."""
    return _check_task(task) + ": "


@functools.lru_cache(maxsize=1)
def _spam_examples() -> dict[str, list[tuple[str, str]]]:
    """(text, "spam" / "ham") of every e-mail, by split (held out: crc32 of the text is 0 mod 10)."""
    splits: dict[str, list[tuple[str, str]]] = {"train": [], "val": []}
    for email in corpora.spam_emails():
        text = corpora.email_text(email)
        splits["val" if corpora.is_held_out(text) else "train"].append((text, SPAM_LABELS[email["label"]]))
    return splits


def spam_examples(split: str = "train") -> list[tuple[str, str]]:
    """The classify task's e-mails of a split, as (text, label word), in the corpus's fixed order.

    Identical texts fall in the same split, since the split is a hash of the text.
    """
    return list(_spam_examples()[validate.choice(split, "split", corpora.SPLITS)])


def text_to_text_example(
    task: str, rng: random.Random, split: str = "train", max_number: int = MAX_NUMBER
) -> tuple[str, str]:
    """One (source, target) pair of a task, source = prefix + input, drawn with `rng` from `split`.

    Translations use numbers 0..max_number, the number of digits uniform (short numbers are as common as
    long ones); "reverse" 3..8 lowercase letters; "sort", "sort descending" and "largest" 3..7 numbers 0..99;
    "classify" an e-mail of the split, each equally likely.
    """
    _check_task(task)
    validate.choice(split, "split", corpora.SPLITS)
    max_number = check_number(max_number, "max_number")
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
    if task == CLASSIFY:
        text, label = rng.choice(_spam_examples()[split])
        return task_prefix(task) + text, label
    want_held_out = split == "val"
    while True:  # draw until the input falls in the wanted split (1 in 10 for val: a few draws)
        if task.startswith("translate"):
            digits = rng.randint(1, len(str(max_number)))  # as many 2-digit as 6-digit numbers
            length = numbers_of_length(digits, max_number)
            n = rng.randint(length.start, length.stop - 1)
            key = str(n)
            english, german = english_number(n), german_number(n)
            source, target = (english, german) if task == "translate English to German" else (german, english)
        elif task == "reverse":
            letters = rng.choices(LETTERS, k=rng.randint(3, 8))
            key = source = " ".join(letters)
            target = " ".join(reversed(letters))
        else:  # a list of numbers: sort, sort descending or largest
            numbers = [rng.randint(0, 99) for _ in range(rng.randint(3, 7))]
            source = " ".join(map(str, numbers))
            key = target = " ".join(map(str, sorted(numbers)))  # held out by the sorted list, for all three tasks
            if task == "sort descending":
                target = " ".join(map(str, sorted(numbers, reverse=True)))
            elif task == "largest":
                target = str(max(numbers))
        if corpora.is_held_out(key) == want_held_out:
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


def text_to_text_generate(
    model, tokenizer, sources: list[str], batch_size: int = 256, max_new_tokens: int = 48
) -> list[str]:
    """Greedy answers of an encoder-decoder (a transformers T5, e.g. the model course.checkpoints.load_tiny_t5()
    returns) to a list of source strings, in batches: each batch is encoded once, then scratch.l10_decoding.generate
    decodes."""
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
    memory = model.get_encoder()(**batch)
    state = {"cache": None, "seen": 0}

    def decoder(tgt: torch.Tensor) -> torch.Tensor:
        out = model(
            encoder_outputs=memory,
            attention_mask=batch["attention_mask"],
            use_cache=True,
            decoder_input_ids=tgt[:, state["seen"] :],
            past_key_values=state["cache"],
        )
        state["cache"] = out.past_key_values
        state["seen"] = tgt.shape[1]
        return out.logits

    return decoder


def text_to_text_accuracy(model, tokenizer, pairs: list[tuple[str, str]], batch_size: int = 256) -> dict[str, float]:
    """Exact match of greedy answers per task (the task read from each source's prefix)."""
    task_of = {task_prefix(task): task for task in (*T5_TASKS, *NEW_TASKS)}
    predictions = text_to_text_generate(model, tokenizer, [s for s, _ in pairs], batch_size)
    by_task: dict[str, tuple[list, list]] = {}
    for (source, target), prediction in zip(pairs, predictions):
        p, t = by_task.setdefault(task_of[source[: source.index(": ") + 2]], ([], []))
        p.append(prediction)
        t.append(target)
    return {task: exact_match(p, t) for task, (p, t) in by_task.items()}


def text_to_text_batch(tokenizer, pairs: list[tuple[str, str]]) -> dict[str, torch.Tensor]:
    """(source, target) pairs -> input_ids and attention_mask (batch, n) of the sources, labels (batch, m) of the
    targets with </s>; padded label positions are -100, so the loss ignores them (lecture 9, section 7)."""
    if not pairs:
        raise ValueError("pairs is empty: a batch needs at least one (source, target) pair")
    batch = tokenizer([s for s, _ in pairs], text_target=[t for _, t in pairs], padding=True, return_tensors="pt")
    batch["labels"][batch["labels"] == tokenizer.pad_token_id] = -100
    return dict(batch)


def fine_tune(
    model,
    tokenizer,
    pairs: list[tuple[str, str]],
    steps: int,
    *,
    lr: float = 1e-3,
    batch_size: int = 16,
    seed: int = 0,
    progress: bool = True,
):
    """Train a transformers T5 on (source, target) pairs for `steps` AdamW steps of `batch_size` pairs drawn without
    replacement within a batch (random.Random(seed)), warm-up over the first tenth, cosine decay after; the model is
    left in eval mode; `progress` shows train's progress bar. Returns scratch.l06_training.train's History."""
    batch_size = validate.integer(batch_size, "batch_size")
    if batch_size > len(pairs):
        raise ValueError(f"batch_size {batch_size} is more than the {len(pairs)} pairs")
    draw = random.Random(seed)
    return train(
        model,
        lambda: text_to_text_batch(tokenizer, draw.sample(pairs, batch_size)),
        steps,
        lr=lr,
        warmup=steps // 10,
        loss_fn=hf_loss,
        seed=seed,
        progress=progress,
    )
