"""The data of lecture 7's three tasks for a pretrained encoder: fill-mask test words, next-sentence pairs, named
entities.

    single_token_words     positions of whole words that are one WordPiece token (what a fill-mask test hides)
    masked_word_eval_set   held-out such words hidden behind [MASK]
    word_targets           every such word of a set of windows (for context-free baselines)
    sentence_pairs         BERT's next-sentence task: (A, B, IsNext / NotNext) pairs from chapters
    gazetteer_tags         BIO tags of a word sequence from lists of names (labels for token classification)
"""

from __future__ import annotations

import random

import torch

from course.corpora import split_sentences, split_words
from scratch import validate


def single_token_words(tokenizer, ids: list[int]) -> list[int]:
    """Positions of whole alphabetic words that are one WordPiece token (not '##x', not followed by '##x')."""
    tokens = tokenizer.convert_ids_to_tokens(ids)
    return [
        i
        for i, tok in enumerate(tokens)
        if tok.isalpha()
        and tok.isascii()
        and tok not in tokenizer.all_special_tokens
        and not (i + 1 < len(tokens) and tokens[i + 1].startswith("##"))
    ]


def masked_word_eval_set(tokenizer, windows: list[list[int]], prob: float = 0.15, seed: int = 0):
    """Hide about `prob` of each window's single-token words behind [MASK] (at least one per window).

    Returns a list of (input_ids (T,), positions (k,), targets (k,)) tensors, deterministic for a seed.
    """
    generator = torch.Generator().manual_seed(seed)
    examples = []
    for window in windows:
        candidates = single_token_words(tokenizer, window)
        if not candidates:
            continue
        k = max(1, round(prob * len(candidates)))
        chosen = sorted(candidates[i] for i in torch.randperm(len(candidates), generator=generator)[:k].tolist())
        ids = torch.tensor(window)
        positions = torch.tensor(chosen)
        targets = ids[positions].clone()
        ids[positions] = tokenizer.mask_token_id
        examples.append((ids, positions, targets))
    return examples


def word_targets(tokenizer, windows: list[list[int]]) -> torch.Tensor:
    """Every whole alphabetic single-token word in the windows (the kind of word the fill-mask test hides)."""
    return torch.tensor([w[i] for w in windows for i in single_token_words(tokenizer, w)], dtype=torch.long)


SAME_CHAPTER_DISTANCE = 10  # sentences between A and a same-chapter NotNext B, at least


def sentence_pairs(
    chapters: list[str], n: int, seed: int = 0, min_gap: int = 1, same_chapter_share: float = 0.0
) -> list[tuple[str, str, int]]:
    """BERT's next-sentence task: n pairs (A, B, label) from a list of chapter texts (in reading order), half of
    each kind: label 0 (IsNext) = B is the sentence that follows A in its chapter; label 1 (NotNext) = B is a random
    sentence of a chapter at least `min_gap` places away in the list (BERT drew it from anywhere in its corpus,
    nearly always another document). With `same_chapter_share` > 0, that share of the NotNext B are instead drawn
    from A's own chapter, at least SAME_CHAPTER_DISTANCE sentences away (where the chapter has one): same topic and
    style, so only the local thread tells them apart. Sentences of 4 to 40 words only. Deterministic for a seed."""
    min_gap = validate.integer(min_gap, "min_gap")
    if not isinstance(same_chapter_share, (int, float)) or not 0 <= same_chapter_share <= 1:
        raise ValueError(f"same_chapter_share must be a number in [0, 1], got {same_chapter_share!r}")
    rng = random.Random(seed)
    sentences = [[s for s in split_sentences(text)] for text in chapters]
    fits = [[4 <= len(s.split()) <= 40 for s in chapter] for chapter in sentences]
    candidates = [
        (c, i) for c, chapter in enumerate(sentences) for i in range(len(chapter) - 1) if fits[c][i] and fits[c][i + 1]
    ]
    if len(chapters) <= min_gap or len(candidates) < n:
        raise ValueError(
            f"asked for {n} pairs, but the {len(chapters)} chapters give {len(candidates)} "
            f"consecutive pairs (and NotNext needs at least {min_gap + 1} chapters, {min_gap} apart)"
        )
    pairs = []
    for k, (c, i) in enumerate(rng.sample(candidates, n)):
        if k % 2 == 0:
            pairs.append((sentences[c][i], sentences[c][i + 1], 0))
        else:
            far = []
            if same_chapter_share and rng.random() < same_chapter_share:
                far = [
                    s
                    for j, (s, f) in enumerate(zip(sentences[c], fits[c]))
                    if f and abs(j - i) >= SAME_CHAPTER_DISTANCE
                ]
            if far:
                pairs.append((sentences[c][i], rng.choice(far), 1))
                continue
            other = rng.choice([o for o in range(len(sentences)) if abs(o - c) >= min_gap and any(fits[o])])
            pairs.append((sentences[c][i], rng.choice([s for s, f in zip(sentences[other], fits[other]) if f]), 1))
    return pairs


def gazetteer_tags(words: list[str], entities: dict[str, list[str]]) -> list[str]:
    """BIO tags of a word sequence from lists of names per entity type ({'PER': [...], 'LOC': [...]}).

    A name may have several words ('New Bedford'); it matches case-sensitively, as listed or in capitals
    ('NEW BEDFORD', as in headings), the longest name first, and a matched word is never matched again.
    Unlisted words are 'O'.
    """
    names = {}
    for kind, entries in entities.items():
        for entry in entries:
            key = tuple(split_words(entry))
            if not key:
                raise ValueError(f"empty {kind} entry {entry!r}")
            for form in (key, tuple(w.upper() for w in key)):
                if names.setdefault(form, kind) != kind:
                    raise ValueError(f"{entry!r} is listed as both {names[form]} and {kind}")
    longest = max((len(k) for k in names), default=0)
    tags = ["O"] * len(words)
    i = 0
    while i < len(words):
        for n in range(min(longest, len(words) - i), 0, -1):
            kind = names.get(tuple(words[i : i + n]))
            if kind is not None:
                tags[i : i + n] = [f"B-{kind}"] + [f"I-{kind}"] * (n - 1)
                i += n
                break
        else:
            i += 1
    return tags
