"""T5's span corruption in scratch.l09_span_corruption: the noise mask measured over many samples, the corruption
checked by hand and by reconstruction, corrupt_ids on token ids, shift_right against transformers' own, bad input. (The
BERT objectives, scratch.l07_masking, are tested in test_bert.py and
test_lora_and_bert_tasks.py.)"""

import random
import statistics

import pytest
import torch

from scratch.l07_masking import IGNORE_INDEX
from scratch.l09_span_corruption import (
    corrupt_ids,
    random_spans_noise_mask,
    sentinel_tokens,
    shift_right,
    span_corruption,
)


def spans_of(mask):
    """Lengths of the runs of True in a mask."""
    lengths, run = [], 0
    for noisy in [*mask, False]:
        if noisy:
            run += 1
        elif run:
            lengths.append(run)
            run = 0
    return lengths


def reconstruct(inputs, targets, sentinels):
    """Undo span_corruption: put each sentinel's span from the target back in place of the sentinel."""
    spans, current = {}, None
    for item in targets:
        if item in sentinels:
            current = item
            spans[current] = []
        else:
            spans[current].append(item)
    out = []
    for item in inputs:
        out += spans[item] if item in sentinels else [item]
    return out


def test_paper_example_by_hand():
    words = "Thank you for inviting me to your party last week .".split()
    mask = [w in ("for", "inviting", "last") for w in words]
    inputs, targets = span_corruption(words, mask, sentinel_tokens(3))
    assert " ".join(inputs) == "Thank you <extra_id_0> me to your party <extra_id_1> week ."
    assert " ".join(targets) == "<extra_id_0> for inviting <extra_id_1> last <extra_id_2>"  # T5 paper, figure 2


def test_mask_ending_with_noise_has_no_final_sentinel():
    inputs, targets = span_corruption(list("abcdef"), [False, True, False, False, True, True], sentinel_tokens(5))
    assert inputs == ["a", "<extra_id_0>", "c", "d", "<extra_id_1>"]
    assert targets == ["<extra_id_0>", "b", "<extra_id_1>", "e", "f"]


def test_counts_follow_t5s_rule():
    rng = random.Random(0)
    for length, noise, spans in [(64, 10, 3), (20, 3, 1), (100, 15, 5), (2, 1, 1), (7, 1, 1)]:
        mask = random_spans_noise_mask(length, 0.15, 3.0, rng)
        assert len(mask) == length and sum(mask) == noise and len(spans_of(mask)) == spans
        assert not mask[0] and mask[-1]  # kept first, noise last, as T5's alternation gives


def test_noise_density_and_span_length_over_many_samples():
    rng = random.Random(1)
    noise = total = 0
    span_lengths = []
    for _ in range(3000):
        length = rng.randint(30, 200)
        mask = random_spans_noise_mask(length, 0.15, 3.0, rng)
        noise += sum(mask)
        total += length
        span_lengths += spans_of(mask)
    assert abs(noise / total - 0.15) < 0.003  # rounding per sequence only
    assert abs(statistics.mean(span_lengths) - 3.0) < 0.15
    assert min(span_lengths) >= 1 and max(span_lengths) > 6  # lengths vary: random segmentation
    counts = {k: span_lengths.count(k) / len(span_lengths) for k in (1, 2, 3)}
    assert counts[1] > counts[2] > counts[3]  # roughly geometric, as for a random split


def test_all_masks_equally_likely():
    # length 40: 6 noise tokens in 2 spans (5 ways to split), 34 kept in 2 spans (33 ways): 165 masks
    rng = random.Random(2)
    counts = {}
    for _ in range(3300):
        mask = tuple(random_spans_noise_mask(40, 0.15, 3.0, rng))
        counts[mask] = counts.get(mask, 0) + 1
    assert len(counts) == 5 * 33
    assert 3 <= min(counts.values()) and max(counts.values()) <= 45  # 20 expected each; Poisson spread


def test_sentinels_in_order_and_reconstruction():
    rng = random.Random(3)
    sentinels = sentinel_tokens(100)
    for _ in range(300):
        items = [f"w{i}" for i in range(rng.randint(2, 120))]
        mask = random_spans_noise_mask(len(items), 0.15, 3.0, rng)
        inputs, targets = span_corruption(items, mask, sentinels)
        n_spans = len(spans_of(mask))
        assert [x for x in inputs if x in sentinels] == sentinels[:n_spans]
        assert [x for x in targets if x in sentinels] == sentinels[:n_spans]  # mask ends with noise
        assert len(inputs) == len(items) - sum(mask) + n_spans
        assert len(targets) == sum(mask) + n_spans
        assert reconstruct(inputs, targets, set(sentinels)) == items


def test_corrupt_ids_appends_eos_and_uses_sentinel_ids():
    ids = list(range(10, 74))  # 64 ids
    sentinel_ids = list(range(199, 99, -1))  # <extra_id_0> = 199, the last id, as in T5
    inputs, labels = corrupt_ids(ids, sentinel_ids, eos_id=1, rng=random.Random(0))
    assert inputs[-1] == labels[-1] == 1
    assert labels[0] == 199 and 199 in inputs
    assert reconstruct(inputs[:-1], labels[:-1], set(sentinel_ids)) == ids


def test_shift_right_equals_transformers():
    from transformers import T5Config, T5ForConditionalGeneration

    model = T5ForConditionalGeneration(
        T5Config(
            vocab_size=50,
            d_model=8,
            d_kv=4,
            d_ff=16,
            num_layers=1,
            num_heads=2,
            decoder_start_token_id=0,
            pad_token_id=0,
        )
    )
    labels = torch.tensor([[5, 6, 7, 1], [8, 1, IGNORE_INDEX, IGNORE_INDEX]])
    shifted = shift_right(labels, decoder_start_token_id=0, pad_token_id=0)
    assert shifted.tolist() == [[0, 5, 6, 7], [0, 8, 1, 0]]
    assert torch.equal(shifted, model._shift_right(labels))


def test_bad_input():
    with pytest.raises(ValueError, match="length must be at least 2"):
        random_spans_noise_mask(1)
    with pytest.raises(ValueError, match="noise_density"):
        random_spans_noise_mask(10, 1.5)
    with pytest.raises(ValueError, match="mean_span_length"):
        random_spans_noise_mask(10, 0.15, 0.5)
    with pytest.raises(TypeError, match="random.Random"):
        random_spans_noise_mask(10, rng=0)
    with pytest.raises(ValueError, match="one entry per item"):
        span_corruption([1, 2, 3], [True, False], sentinel_tokens(2))
    with pytest.raises(ValueError, match="more noise spans than the 1 sentinels"):
        span_corruption([1, 2, 3, 4], [True, False, True, False], sentinel_tokens(1))
    with pytest.raises(ValueError, match="final sentinel"):
        span_corruption([1, 2], [True, False], sentinel_tokens(1))
    with pytest.raises(ValueError, match=r"\(batch, T\)"):
        shift_right(torch.tensor([1, 2]), 0, 0)
