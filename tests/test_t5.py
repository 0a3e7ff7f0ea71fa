"""The course's tiny T5 (data/checkpoints/tiny-t5, lecture 9): it loads, is small, and still answers every task as
well as its metrics.json says; T5's relative position buckets equal scratch.embeddings'; unsafe folders are refused."""

import json
import shutil

import pytest
import torch

from scratch import assets
from scratch.embeddings import RelativePositionBias
from scratch.pretrained import load_tiny_t5
from scratch.tasks import TEXT_TO_TEXT_TASKS, text_to_text_accuracy, text_to_text_dataset, text_to_text_generate

TARGET = 0.95  # exact match the issue asks for, on every task
TOLERANCE = 0.05  # a 100-input sample may differ from the 1000-input measurement by a few points
MAX_BYTES = 20_000_000


@pytest.fixture(scope="module")
def metrics():
    return json.loads((assets.checkpoint_dir("tiny-t5") / "metrics.json").read_text())


def test_checkpoint_is_small_safetensors_with_its_training_script(tiny_t5, metrics):
    folder = assets.checkpoint_dir("tiny-t5")
    size = (folder / "model.safetensors").stat().st_size
    assert size <= MAX_BYTES and size == metrics["model_safetensors_bytes"]
    assert (folder / "train.py").is_file() and (folder / "tokenizer.json").is_file()
    model, tokenizer = tiny_t5
    assert sum(p.numel() for p in model.parameters()) == metrics["parameters"]
    assert model.config.vocab_size == len(tokenizer) == metrics["vocab_size"]
    assert (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id) == (0, 1, 2)
    # T5 has no absolute position embeddings: positions enter only as the relative bias of layer 0
    names = [name for name, _ in model.named_parameters()]
    assert not any("position_embed" in name or "wpe" in name for name in names)
    assert sum("relative_attention_bias" in name for name in names) == 2  # encoder and decoder, first layer


def test_reaches_reported_exact_match_on_held_out_sample(tiny_t5, metrics):
    model, tokenizer = tiny_t5
    pairs = text_to_text_dataset(100, "val", seed=123, max_number=metrics["max_number"])
    accuracy = text_to_text_accuracy(model, tokenizer, pairs)
    assert set(accuracy) == set(TEXT_TO_TEXT_TASKS)
    for task, value in accuracy.items():
        reported = metrics["exact_match"][task]
        assert reported >= TARGET, f"{task}: metrics.json reports {reported:.3f} < {TARGET}"
        assert value >= TARGET - TOLERANCE / 2, f"{task}: {value:.2f} on 100 held-out inputs"
        assert abs(value - reported) <= TOLERANCE, f"{task}: measured {value:.2f}, reported {reported:.3f}"


def test_answers_by_prefix(tiny_t5):
    model, tokenizer = tiny_t5
    sources = ["translate English to German: twenty-three", "reverse: a b c", "sort: 30 2 11"]
    out = text_to_text_generate(model, tokenizer, sources)
    assert out[1:] == ["c b a", "2 11 30"] and out[0] == "dreiundzwanzig"
    # the course's greedy loop gives transformers' greedy answers (5 held-out inputs of every task too)
    sources += [source for source, _ in text_to_text_dataset(5, "val", seed=1)]
    batch = tokenizer(sources, return_tensors="pt", padding=True)
    theirs = model.generate(**batch, do_sample=False, num_beams=1, max_new_tokens=48)
    assert text_to_text_generate(model, tokenizer, sources) == tokenizer.batch_decode(theirs, skip_special_tokens=True)


def test_relative_position_bias_equals_t5_compute_bias(tiny_t5):
    model, _ = tiny_t5
    for stack, bidirectional in [(model.encoder, True), (model.decoder, False)]:
        attention = stack.block[0].layer[0].SelfAttention
        ours = RelativePositionBias(
            attention.n_heads,
            attention.relative_attention_num_buckets,
            attention.relative_attention_max_distance,
            bidirectional,
        )
        ours.bias.weight.data.copy_(attention.relative_attention_bias.weight)
        with torch.no_grad():
            assert torch.equal(ours(7, 9), attention.compute_bias(7, 9)[0])


def test_unsafe_checkpoint_folders_are_refused(tmp_path, monkeypatch):
    good = assets.checkpoint_dir("tiny-t5")
    monkeypatch.setattr(assets, "CHECKPOINT_DIR", tmp_path)
    pickled = tmp_path / "tiny-t5"
    shutil.copytree(good, pickled)
    assert assets.checkpoint_dir("tiny-t5") == pickled
    torch.save({"w": torch.zeros(1)}, pickled / "pytorch_model.bin")
    with pytest.raises(assets.AssetError, match="pickled weight files"):
        assets.checkpoint_dir("tiny-t5")
    with pytest.raises(assets.AssetError, match="pickled weight files"):
        load_tiny_t5()
    (pickled / "pytorch_model.bin").unlink()
    # a pickle renamed to model.safetensors is no safetensors file either
    torch.save({"w": torch.zeros(1)}, pickled / "model.safetensors")
    with pytest.raises(assets.AssetError, match="not a safetensors file"):
        assets.checkpoint_dir("tiny-t5")
    with pytest.raises(assets.AssetError, match="'missing' not found"):
        assets.checkpoint_dir("missing")
