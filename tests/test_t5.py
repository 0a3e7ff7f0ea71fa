"""The course's tiny T5s (lecture 9). data/checkpoints/tiny-t5 (four tasks, trained from scratch): it loads, is small,
its tokenizer keeps the prefixes whole and spells numbers digit by digit, and it still answers every task as well as
its metrics.json says; one training step by hand equals transformers' loss.
data/checkpoints/tiny-t5-pretrained (span corruption only, with a 4,000-piece tokenizer): it is small, its tokenizer
keeps the task prefixes and common words whole, and it still fills held-out spans as its metrics.json says (fresh
windows and masks); its transfer record is complete. T5's relative position bias equals scratch.l02_positions'; unsafe
folders are refused."""

import copy
import json
import math
import random
import re
import shutil
from collections import Counter

import pytest
import torch

from course import assets, checkpoints, corpora
from course.checkpoints import load_tiny_t5
from course.corpora import heldout_chapters
from course.text_to_text import (
    CLASSIFY,
    T5_TASKS,
    TEXT_TO_TEXT_TASKS,
    fine_tune,
    spam_examples,
    text_to_text_accuracy,
    text_to_text_batch,
    text_to_text_dataset,
    text_to_text_generate,
)
from scratch.l02_positions import RelativePositionBias
from scratch.l07_masking import IGNORE_INDEX
from scratch.l09_span_corruption import corrupt_ids, sentinel_tokens, shift_right

TARGET = 0.95  # exact match the issue asks for, on every task
TOLERANCE = 0.05  # a 100-input sample may differ from the 1000-input measurement by a few points
MAX_BYTES = 20_000_000


@pytest.fixture(scope="module")
def metrics():
    return json.loads((checkpoints.checkpoint_dir("tiny-t5") / "metrics.json").read_text())


def test_checkpoint_is_small_safetensors_with_its_tokenizer(tiny_t5, metrics):
    folder = checkpoints.checkpoint_dir("tiny-t5")
    size = (folder / "model.safetensors").stat().st_size
    assert size <= MAX_BYTES and size == metrics["model_safetensors_bytes"]
    assert (folder / "tokenizer.json").is_file()
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


def test_tokenizer_keeps_prefixes_and_words_whole_and_spells_numbers_digit_by_digit(tiny_t5):
    _, tokenizer = tiny_t5
    for task in TEXT_TO_TEXT_TASKS:
        assert tokenizer.tokenize(f"{task}:") == [f"▁{word}" for word in task.split()] + [":"]
    assert tokenizer.tokenize("one") == ["▁one"]
    assert tokenizer.tokenize("sort: 42 7 190")[2:] == ["▁", "4", "2", "▁", "7", "▁", "1", "9", "0"]
    assert all(len(tokenizer.tokenize(letter)) == 1 for letter in "abcdefghijklmnopqrstuvwxyz")
    digit_pieces = [piece for piece in tokenizer.get_vocab() if any(ch.isdigit() for ch in piece)]
    assert sorted(digit_pieces) == list("0123456789")  # no piece holds more than one digit


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


@pytest.fixture(scope="module")
def pretrained():
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    folder = checkpoints.checkpoint_dir("tiny-t5-pretrained")
    model = T5ForConditionalGeneration.from_pretrained(folder, use_safetensors=True).eval()
    metrics = json.loads((folder / "metrics.json").read_text())
    return model, AutoTokenizer.from_pretrained(folder), metrics


@pytest.mark.slow
@pytest.mark.assets
def test_pretrained_checkpoint_is_small_safetensors_with_its_tokenizer(pretrained):
    model, tokenizer, metrics = pretrained
    folder = checkpoints.checkpoint_dir("tiny-t5-pretrained")
    size = (folder / "model.safetensors").stat().st_size
    assert size == metrics["model_safetensors_bytes"] <= 10_000_000
    assert (folder / "tokenizer.json").is_file()
    assert sum(p.numel() for p in model.parameters()) == metrics["parameters"]
    assert model.config.vocab_size == len(tokenizer) == metrics["vocab_size"]
    assert (tokenizer.pad_token_id, tokenizer.eos_token_id, tokenizer.unk_token_id) == (0, 1, 2)
    assert model.config.decoder_start_token_id == 0
    pretraining = metrics["pretraining"]
    assert pretraining["steps"] == max(row["step"] for row in pretraining["history"]) <= pretraining["schedule_steps"]


@pytest.mark.slow
@pytest.mark.assets
def test_pretrained_tokenizer_has_sentinels_and_keeps_prefixes_and_common_words_whole(pretrained):
    _, tokenizer, metrics = pretrained
    ids = tokenizer.convert_tokens_to_ids(sentinel_tokens(metrics["sentinels"]))
    assert ids == list(range(len(tokenizer) - 1, len(tokenizer) - 1 - metrics["sentinels"], -1))  # <extra_id_0> last
    for task in T5_TASKS:
        pieces = tokenizer.tokenize(f"{task}: ")
        assert pieces == [f"▁{word}" for word in task.split()] + [":"], pieces  # every word one piece
        assert pieces == metrics["tokenizer"]["prefixes"][task]
    assert tokenizer.tokenize("one") == ["▁one"]
    words = Counter(re.findall(r"[A-Za-z]+", corpora.moby_dick_text())).most_common(500)
    whole = [len(tokenizer.tokenize(word)) == 1 for word, _ in words]
    assert sum(whole[:100]) == metrics["tokenizer"]["moby_dick_top_100_words_whole"] >= 95
    assert sum(whole) == metrics["tokenizer"]["moby_dick_top_500_words_whole"]


@pytest.mark.slow
@pytest.mark.assets
def test_pretrained_model_fills_held_out_spans_as_reported(pretrained):
    """Span-corruption loss on held-out Moby-Dick windows, against metrics.json (another sample of windows and
    masks; the tolerance is 4 standard errors of the mean of the per-window losses)."""
    model, tokenizer, metrics = pretrained
    info = metrics["pretraining"]
    _, held = heldout_chapters(corpora.moby_dick_chapters())
    stream = []
    for chapter in held:
        stream += tokenizer(" ".join(chapter["text"].split()), add_special_tokens=False).input_ids
    length = info["window"]
    windows = random.Random(5).sample([stream[i : i + length] for i in range(0, len(stream) - length + 1, length)], 64)
    sentinel_ids = tokenizer.convert_tokens_to_ids(sentinel_tokens(metrics["sentinels"]))
    rng = random.Random(11)
    losses, correct, count = [], 0, 0
    with torch.no_grad():
        for window in windows:
            inputs, labels = corrupt_ids(window, sentinel_ids, tokenizer.eos_token_id, 0.15, 3.0, rng)
            out = model(input_ids=torch.tensor([inputs]), labels=torch.tensor([labels]))
            losses.append(out.loss.item())
            correct += int((out.logits[0].argmax(-1) == torch.tensor(labels)).sum())
            count += len(labels)
    mean = sum(losses) / len(losses)
    sd = math.sqrt(sum((x - mean) ** 2 for x in losses) / (len(losses) - 1))
    reported = info["moby_dick_heldout_loss"]
    assert abs(mean - reported) <= 4 * sd / math.sqrt(len(losses)), f"loss {mean:.3f}, reported {reported:.3f}"
    assert mean < math.log(len(tokenizer)) - 2  # far better than a uniform guess over the vocabulary
    assert abs(correct / count - info["moby_dick_heldout_piece_accuracy"]) < 0.06


@pytest.mark.slow
@pytest.mark.assets
def test_transfer_record_is_complete(pretrained):
    transfer = pretrained[2]["transfer"]
    assert transfer["task"] == CLASSIFY
    runs = {(r["init"], r["size"], r["repeat"]): r for r in transfer["runs"]}
    assert len(runs) == len(transfer["runs"])  # no run twice
    assert set(runs) == {
        (init, size, repeat)
        for init in ("pretrained", "scratch")
        for size in transfer["sizes"]
        for repeat in range(transfer["repeats"])
    }
    assert transfer["repeats"] >= 3  # enough runs per setting to see their spread
    labels = [label for _, label in spam_examples("val")]
    assert transfer["heldout_emails"] == len({text for text, _ in spam_examples("val")})
    assert (
        0.5
        < transfer["majority_baseline"]
        == pytest.approx(max(labels.count(w) for w in set(labels)) / len(labels), abs=0.02)
    )
    assert all(0.0 <= run["exact_match"] <= 1.0 for run in runs.values())


def test_one_training_step_by_hand(tiny_t5):
    """labels -> decoder input (shifted right, <pad> in front) -> logits -> the loss, by hand, equal to
    transformers' model(..., labels=...).loss; then one optimizer step lowers it."""
    model, tokenizer = tiny_t5
    batch = tokenizer(
        ["reverse: a b c d", "translate English to German: nine"],
        text_target=["d c b a", "neun"],
        padding=True,
        return_tensors="pt",
    )
    labels = batch["labels"].masked_fill(batch["labels"] == tokenizer.pad_token_id, IGNORE_INDEX)
    assert (labels == IGNORE_INDEX).any()  # the second target is padded
    decoder_input_ids = shift_right(labels, model.config.decoder_start_token_id, tokenizer.pad_token_id)
    assert torch.equal(decoder_input_ids, model._shift_right(labels))
    assert (decoder_input_ids[:, 0] == 0).all() and torch.equal(decoder_input_ids[0, 1:], labels[0, :-1])
    student = copy.deepcopy(model).train()
    logits = student(
        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], decoder_input_ids=decoder_input_ids
    ).logits  # (batch, T, vocab)
    real = labels != IGNORE_INDEX
    picked = logits.log_softmax(-1).gather(-1, labels.clamp(min=0)[..., None])[..., 0]
    by_hand = -(picked * real).sum() / real.sum()
    library = student(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=labels).loss
    assert torch.allclose(by_hand, library, atol=1e-5)
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    by_hand.backward()
    optimizer.step()
    with torch.no_grad():
        after = student(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=labels).loss
    assert after < library


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
    good = checkpoints.checkpoint_dir("tiny-t5")
    monkeypatch.setattr(checkpoints, "CHECKPOINT_DIR", tmp_path)
    pickled = tmp_path / "tiny-t5"
    shutil.copytree(good, pickled)
    assert checkpoints.checkpoint_dir("tiny-t5") == pickled
    torch.save({"w": torch.zeros(1)}, pickled / "pytorch_model.bin")
    with pytest.raises(assets.AssetError, match="pickled weight files"):
        checkpoints.checkpoint_dir("tiny-t5")
    with pytest.raises(assets.AssetError, match="pickled weight files"):
        load_tiny_t5()
    (pickled / "pytorch_model.bin").unlink()
    # a pickle renamed to model.safetensors is no safetensors file either
    torch.save({"w": torch.zeros(1)}, pickled / "model.safetensors")
    with pytest.raises(assets.AssetError, match="not a safetensors file"):
        checkpoints.checkpoint_dir("tiny-t5")
    with pytest.raises(assets.AssetError, match="'missing' not found"):
        checkpoints.checkpoint_dir("missing")


def test_text_to_text_batch_is_the_tokenizers_with_padded_labels_ignored(tiny_t5):
    model, tokenizer = tiny_t5
    pairs = [("reverse: a b c d", "d c b a"), ("translate English to German: nine", "neun")]
    batch = text_to_text_batch(tokenizer, pairs)
    reference = tokenizer([s for s, _ in pairs], text_target=[t for _, t in pairs], padding=True, return_tensors="pt")
    assert sorted(batch) == ["attention_mask", "input_ids", "labels"]
    assert torch.equal(batch["input_ids"], reference.input_ids)
    padding = reference.labels == tokenizer.pad_token_id
    assert padding.any() and torch.equal(batch["labels"], reference.labels.masked_fill(padding, IGNORE_INDEX))
    with torch.no_grad():  # the loss averages the real labels only
        logits = model(**batch).logits
        by_hand = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten())
        assert torch.allclose(model(**batch).loss, by_hand, atol=1e-6)
    with pytest.raises(ValueError, match="pairs is empty"):
        text_to_text_batch(tokenizer, [])


def test_fine_tune_teaches_a_new_prefix_in_place(tiny_t5):
    model, tokenizer = tiny_t5
    student = copy.deepcopy(model)
    pairs = text_to_text_dataset(32, "train", seed=0, tasks=["largest"])
    before = student.lm_head.weight.detach().clone()
    history = fine_tune(student, tokenizer, pairs, 8, lr=1e-3, batch_size=8, seed=0, progress=False)
    assert len(history.train_loss) == 8 and history.train_loss[-1] < history.train_loss[0]
    assert not student.training and not torch.equal(student.lm_head.weight, before)
    again = copy.deepcopy(model)
    assert fine_tune(again, tokenizer, pairs, 8, lr=1e-3, batch_size=8, seed=0, progress=False).train_loss == (
        history.train_loss
    )
    with pytest.raises(ValueError, match="batch_size 40 is more than the 32 pairs"):
        fine_tune(copy.deepcopy(model), tokenizer, pairs, 2, batch_size=40)
