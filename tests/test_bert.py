"""Lecture 7: BERT's masked-LM pieces (scratch.mlm) and the shipped fill-mask checkpoint."""

import json

import pytest
import torch

from scratch import assets
from scratch.mlm import (
    IGNORE_INDEX,
    fill_mask_accuracy,
    heldout_chapters,
    mask_tokens,
    masked_word_eval_set,
    single_token_words,
    token_windows,
)
from scratch.pretrained import MINILM_MLM_HEAD, load_minilm_mlm


@pytest.fixture(scope="module")
def mlm():
    return load_minilm_mlm()


@pytest.fixture(scope="module")
def metrics():
    return json.loads((assets.checkpoint_dir(MINILM_MLM_HEAD) / "metrics.json").read_text())


@pytest.fixture(scope="module")
def held_out_examples(mlm, metrics):
    _, tokenizer = mlm
    _, held = heldout_chapters(assets.moby_dick_chapters())
    assert [int(c["chapter"]) for c in held] == metrics["evaluation"]["held_out_chapters"]
    windows = token_windows(tokenizer, [c["text"] for c in held], metrics["evaluation"]["window_tokens"])
    return masked_word_eval_set(tokenizer, windows, seed=metrics["evaluation"]["seed"])


def test_checkpoint_is_a_small_head_only(metrics):
    from safetensors import safe_open

    folder = assets.checkpoint_dir(MINILM_MLM_HEAD)
    with safe_open(str(folder / "model.safetensors"), framework="pt") as f:
        names = set(f.keys())
    assert names == {
        "cls.predictions.bias",
        "cls.predictions.transform.dense.weight",
        "cls.predictions.transform.dense.bias",
        "cls.predictions.transform.LayerNorm.weight",
        "cls.predictions.transform.LayerNorm.bias",
    }
    assert (folder / "model.safetensors").stat().st_size < 1_000_000
    assert (folder / "train.py").is_file() and (folder / "README.md").is_file()
    assert set(metrics["variants"]) == {"head", "scratch"} and metrics["chosen"] == "head"
    variants = metrics["variants"]
    assert variants["head"]["held_out"]["top1"] > variants["scratch"]["held_out"]["top1"]


def test_shipped_head_reaches_its_reported_accuracy(mlm, metrics, held_out_examples):
    model, _ = mlm
    quick = held_out_examples[: metrics["evaluation"]["quick_sample_windows"]]
    model.train()
    measured = fill_mask_accuracy(model, quick)  # in eval mode (no dropout) ...
    assert model.training  # ... and the mode restored after
    model.eval()
    reported = metrics["variants"]["head"]["quick_sample"]
    assert measured["n"] == reported["n"]
    assert measured["top1"] == pytest.approx(reported["top1"], abs=0.005)
    assert measured["top5"] == pytest.approx(reported["top5"], abs=0.005)
    # and the quick sample is representative of the full held-out set reported in metrics.json
    assert measured["top1"] == pytest.approx(metrics["variants"]["head"]["held_out"]["top1"], abs=0.08)


def test_the_encoder_is_minilm_unchanged_and_the_decoder_tied(mlm):
    from transformers import AutoModel

    model, _ = mlm
    minilm = AutoModel.from_pretrained(assets.minilm_dir())
    for name, value in minilm.embeddings.state_dict().items():
        assert torch.equal(model.bert.embeddings.state_dict()[name], value)
    assert torch.equal(model.bert.encoder.layer[5].output.dense.weight, minilm.encoder.layer[5].output.dense.weight)
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight


def test_fill_mask_pipeline_works(mlm):
    from transformers import pipeline

    model, tokenizer = mlm
    guesses = pipeline("fill-mask", model=model, tokenizer=tokenizer)("The whale swam under the [MASK].", top_k=5)
    assert len(guesses) == 5 and all(g["token_str"].strip() for g in guesses)
    scores = [g["score"] for g in guesses]
    assert scores == sorted(scores, reverse=True) and 0 < sum(scores) <= 1 + 1e-6


def test_mask_tokens_follows_the_80_10_10_rule():
    ids = torch.randint(1000, 30522, (500, 128), generator=torch.Generator().manual_seed(0))
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, [0, -1]] = True
    inputs, labels = mask_tokens(ids, special, 103, 30522, generator=torch.Generator().manual_seed(1))
    picked = labels != IGNORE_INDEX
    assert not picked[special].any()
    assert torch.equal(labels[picked], ids[picked]) and torch.equal(inputs[~picked], ids[~picked])
    assert picked[~special].float().mean().item() == pytest.approx(0.15, abs=0.005)
    seen, original = inputs[picked], ids[picked]
    assert (seen == 103).float().mean().item() == pytest.approx(0.8, abs=0.01)
    assert (seen == original).float().mean().item() == pytest.approx(0.1, abs=0.01)
    same = mask_tokens(ids, special, 103, 30522, generator=torch.Generator().manual_seed(1))
    assert torch.equal(same[0], inputs) and torch.equal(same[1], labels)  # reproducible


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda: mask_tokens(torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.bool), 1, 10),
            TypeError,
            "integer tensor",
        ),
        (
            lambda: mask_tokens(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 4, dtype=torch.bool), 1, 10),
            ValueError,
            "special_mask must be",
        ),
        (
            lambda: mask_tokens(
                torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3, dtype=torch.bool), 1, 10, prob=1.5
            ),
            ValueError,
            "prob must be in",
        ),
        (
            lambda: mask_tokens(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3, dtype=torch.bool), 10, 10),
            ValueError,
            "mask_id 10 is outside",
        ),
        (lambda: fill_mask_accuracy(None, []), ValueError, "examples is empty"),
    ],
)
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_windows_and_eval_set(mlm):
    _, tokenizer = mlm
    with pytest.raises(ValueError, match="max_len must be at least 3"):
        token_windows(tokenizer, ["a b c"], max_len=2)
    windows = token_windows(tokenizer, ["Call me Ishmael. " * 40], max_len=16)
    assert windows and all(
        len(w) == 16 and w[0] == tokenizer.cls_token_id and w[-1] == tokenizer.sep_token_id for w in windows
    )
    ids = tokenizer("the whale unbelievably surfaced").input_ids
    positions = single_token_words(tokenizer, ids)
    assert [tokenizer.convert_ids_to_tokens(ids[p]) for p in positions] == ["the", "whale", "surfaced"]
    for masked, where, targets in masked_word_eval_set(tokenizer, windows, seed=0):
        assert (masked[where] == tokenizer.mask_token_id).all() and len(targets) == len(where) >= 1


def test_unknown_checkpoint_names_the_fix():
    with pytest.raises(assets.AssetError, match="checkpoint 'no-such-head' not found"):
        load_minilm_mlm("no-such-head")
