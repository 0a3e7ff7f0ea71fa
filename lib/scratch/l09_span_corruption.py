"""T5's training objective, span corruption (lecture 9).

    random_spans_noise_mask   which tokens to drop, about noise_density of them in spans of mean_span_length
    span_corruption           (input, target): each dropped span becomes one sentinel in the input; the target
                              lists every sentinel followed by the span it replaced
    sentinel_tokens           the sentinels' names, <extra_id_0>, <extra_id_1>, ...
    corrupt_ids               both steps on a row of token ids, with T5's sentinel ids and </s> appended
    shift_right               labels -> decoder input: [decoder_start, labels[:-1]], -100 replaced by <pad>

Span corruption, T5's pre-training objective: drop 15 % of the tokens in spans of about 3, and train the model to
write the missing spans. On the example of the T5 paper (Raffel et al. 2020, figure 2):

    original:  Thank you for inviting me to your party last week .
    input:     Thank you <extra_id_0> me to your party <extra_id_1> week .
    target:    <extra_id_0> for inviting <extra_id_1> last <extra_id_2>

The input keeps its length almost (one sentinel per span), the target is short (the spans and their
sentinels), so pre-training is cheap per token; and it is already text to text, the same interface as every
later task.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Sequence
from typing import TypeVar

import torch

from scratch.l07_masking import IGNORE_INDEX

Item = TypeVar("Item")


def _check_rng(rng) -> random.Random:
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
    return rng


def _random_segmentation(num_items: int, num_segments: int, rng: random.Random) -> list[int]:
    """num_items split into num_segments positive lengths, every split equally likely.

    (Choose num_segments - 1 of the num_items - 1 gaps between items as segment boundaries.)
    """
    cuts = sorted(rng.sample(range(1, num_items), num_segments - 1))
    bounds = [0, *cuts, num_items]
    return [b - a for a, b in zip(bounds, bounds[1:])]


def random_spans_noise_mask(
    length: int, noise_density: float = 0.15, mean_span_length: float = 3.0, rng: random.Random | None = None
) -> list[bool]:
    """T5's noise mask for a sequence of `length` tokens: True = dropped (noise).

    As in T5's `random_spans_noise_mask`: the number of noise tokens is round(length * noise_density) (at least
    1, at most length - 1), the number of noise spans round(noise tokens / mean_span_length) (at least 1); the
    noise tokens and the kept tokens are each cut into that many non-empty spans at random, and the spans
    alternate, kept first: kept, noise, kept, noise, ..., so a mask always ends with noise.
    """
    length = operator.index(length)
    if length < 2:
        raise ValueError(f"length must be at least 2 (one kept and one noise token), got {length}")
    if not 0.0 < noise_density < 1.0:
        raise ValueError(f"noise_density must be in (0, 1), got {noise_density}")
    if not mean_span_length >= 1.0:
        raise ValueError(f"mean_span_length must be >= 1, got {mean_span_length}")
    rng = random.Random() if rng is None else _check_rng(rng)
    num_noise = min(max(round(length * noise_density), 1), length - 1)
    num_spans = max(round(num_noise / mean_span_length), 1)
    num_spans = min(num_spans, num_noise, length - num_noise)  # every span needs at least one token
    noise_lengths = _random_segmentation(num_noise, num_spans, rng)
    kept_lengths = _random_segmentation(length - num_noise, num_spans, rng)
    mask = []
    for kept, noise in zip(kept_lengths, noise_lengths):
        mask += [False] * kept + [True] * noise
    return mask


def sentinel_tokens(n: int) -> list[str]:
    """["<extra_id_0>", ..., "<extra_id_{n-1}>"]: T5's names for the sentinels (its tokenizer has 100)."""
    return [f"<extra_id_{i}>" for i in range(operator.index(n))]


def span_corruption(
    items: Sequence[Item], noise_mask: Sequence[bool], sentinels: Sequence[Item]
) -> tuple[list[Item], list[Item]]:
    """Replace each noise span of `items` by the next sentinel; the target lists sentinel + span, span by span.

    If the sequence ends with kept items, the target ends with one more sentinel (as in the T5 paper's figure:
    it marks where the last kept stretch begins, and the end of the answer). `items` can be words, pieces or
    ids; `sentinels` must be at least as many as the noise spans.
    """
    if len(items) != len(noise_mask):
        raise ValueError(f"noise_mask must have one entry per item: {len(noise_mask)} != {len(items)}")
    inputs, targets, k = [], [], 0
    for i, (item, noisy) in enumerate(zip(items, noise_mask)):
        starts_span = noisy and (i == 0 or not noise_mask[i - 1])
        if starts_span:
            if k >= len(sentinels):
                raise ValueError(f"the mask has more noise spans than the {len(sentinels)} sentinels given")
            inputs.append(sentinels[k])
            targets.append(sentinels[k])
            k += 1
        (targets if noisy else inputs).append(item)
    if noise_mask and not noise_mask[-1]:
        if k >= len(sentinels):
            raise ValueError(f"the target needs a final sentinel, but only {len(sentinels)} sentinels were given")
        targets.append(sentinels[k])
    return inputs, targets


def corrupt_ids(
    ids: Sequence[int],
    sentinel_ids: Sequence[int],
    eos_id: int,
    noise_density: float = 0.15,
    mean_span_length: float = 3.0,
    rng: random.Random | None = None,
) -> tuple[list[int], list[int]]:
    """One pre-training pair from a window of token ids: (input_ids, labels), each ending with </s>.

    sentinel_ids[k] is the id of <extra_id_k> (in a T5 tokenizer: tokenizer.convert_tokens_to_ids(...)).
    """
    mask = random_spans_noise_mask(len(ids), noise_density, mean_span_length, rng)
    inputs, targets = span_corruption(list(ids), mask, sentinel_ids)
    return inputs + [eos_id], targets + [eos_id]


def shift_right(labels: torch.Tensor, decoder_start_token_id: int, pad_token_id: int) -> torch.Tensor:
    """T5's decoder input for teacher forcing: the labels moved one place right, decoder_start in front.

    labels (batch, T) -> (batch, T): row [y1, y2, ..., yT] becomes [start, y1, ..., y(T-1)], so position t
    reads the tokens before label t. Ignored labels (-100, on padding) become <pad> in the input.
    (T5's decoder_start_token_id is <pad>, id 0.)
    """
    if not isinstance(labels, torch.Tensor) or labels.dim() != 2:
        raise ValueError(f"labels must be a (batch, T) tensor, got {getattr(labels, 'shape', type(labels).__name__)}")
    shifted = torch.full_like(labels, decoder_start_token_id)
    shifted[:, 1:] = labels[:, :-1]
    return shifted.masked_fill(shifted == IGNORE_INDEX, pad_token_id)
