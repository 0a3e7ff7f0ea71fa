"""Every recipe (recipes/) on a tiny configuration: it trains, saves, and the library's loader reads what it saved, so
a recipe that breaks fails here. The shipped checkpoints are never written: each run goes to a temporary folder.
Every shipped checkpoint's README names its recipe and the command that made it."""

import gzip
import json
import re
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForTokenClassification, BertForMaskedLM

from course import checkpoints
from course.text_to_text import TEXT_TO_TEXT_TASKS
from recipes import (
    char_gpt,
    digits_sft,
    minilm_lora_mlm,
    minilm_mlm_head,
    minilm_ner,
    minilm_nsp,
    minilm_nsp_stories,
    spam_lora,
    spam_transfer,
    t5_new_task,
    tiny_t5,
    tiny_t5_pretrained,
)
from recipes.common import cli

RECIPES = Path(__file__).parents[1] / "recipes"


def smoke(test):
    """A recipe's tiny run: seconds to a minute, on the fetched corpora and models."""
    return pytest.mark.slow(pytest.mark.assets(test))


def test_every_checkpoint_names_its_recipe_and_command():
    folders = sorted(p for p in checkpoints.CHECKPOINT_DIR.iterdir() if p.is_dir())
    assert len(folders) == 11
    for folder in folders:
        recipe = folder.name.replace("-", "_")
        readme = (folder / "README.md").read_text()
        assert (RECIPES / f"{recipe}.py").is_file(), f"no recipes/{recipe}.py for {folder.name}"
        assert re.search(rf"python -m recipes\.{recipe}\b", readme), f"{folder.name}/README.md names no command"
        assert not list(folder.glob("*.py")), f"{folder.name} holds code: recipes live in recipes/"


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """data/checkpoints and the merged folders' cache, both moved to a temporary folder."""
    monkeypatch.setattr(checkpoints, "CHECKPOINT_DIR", tmp_path)
    monkeypatch.setattr(checkpoints, "MERGED_DIR", tmp_path / "merged")
    return tmp_path


@smoke
def test_tiny_t5_trains_in_stages_and_loads(shipped):
    tiny = dict(steps=3, eval_every=2, n_eval=3, d_model=32, d_ff=64, layers=1, heads=2, batch_size=8, warmup=2)
    first = tiny_t5.main(
        tiny_t5.Config(out=shipped / "stage1", vocab_size=200, tokenizer_pairs=200, tokenizer_chapters=3, **tiny)
    )
    assert first["steps"] == 3 and [row["step"] for row in first["history"]] == [2, 3]
    second = tiny_t5.main(tiny_t5.Config(out=shipped / "tiny-t5", init_from=shipped / "stage1", **tiny))
    assert (
        second["steps"] == 6
        and len(second["stages"]) == 2
        and [row["step"] for row in second["history"]] == [2, 3, 5, 6]
    )
    model, tokenizer = checkpoints.load_tiny_t5("tiny-t5")
    assert len(tokenizer) == model.config.vocab_size == 200 and set(second["exact_match"]) == set(TEXT_TO_TEXT_TASKS)


@smoke
def test_tiny_t5_pretrained_runs_every_stage_and_resumes(shipped):
    config = tiny_t5_pretrained.Config(
        work=shipped / "work",
        out=shipped / "tiny-t5-pretrained",
        vocab_size=300,
        tokenizer_pairs=20,
        max_texts=3,
        d_model=32,
        d_ff=64,
        layers=1,
        heads=2,
        window=16,
        pretrain_steps=4,
        stop_after=2,
        pretrain_batch=4,
        pretrain_eval_every=2,
        heldout_windows=8,
        warmup=2,
        sizes=[4],
        transfer_repeats=1,
        transfer_steps=2,
        transfer_batch=2,
        transfer_warmup=1,
        export_windows=4,
        save_every=2,
    )
    tiny_t5_pretrained.main(config)  # stops pre-training after step 2, then transfers and exports
    assert json.loads((config.work / "pretrained" / "pretraining.json").read_text())["steps"] == 2
    (config.work / "pretrained" / "pretraining.json").unlink()  # pre-train again: the run resumes at step 2
    config.stop_after = None
    metrics = tiny_t5_pretrained.main(config)
    pretraining = metrics["pretraining"]
    assert pretraining["steps"] == 4 and [row["step"] for row in pretraining["history"]] == [2, 4]
    assert {(r["init"], r["size"]) for r in metrics["transfer"]["runs"]} == {("pretrained", 4), ("scratch", 4)}
    model, tokenizer = checkpoints.load_tiny_t5("tiny-t5-pretrained")
    assert tokenizer.convert_tokens_to_ids("<extra_id_0>") == len(tokenizer) - 1 == model.config.vocab_size - 1


@smoke
def test_minilm_lora_mlm_trains_resumes_and_loads(shipped):
    config = minilm_lora_mlm.Config(
        out=shipped / "minilm-lora-mlm",
        work=shipped / "work",
        steps=2,
        batch=2,
        save_every=1,
        austen=False,
        max_windows=8,
        rank=2,
    )
    first = minilm_lora_mlm.main(config)
    assert [row["step"] for row in first["training"]["history"]] == [1, 2]
    config.steps = 3  # a longer schedule on the same work folder: resumes after step 2
    again = minilm_lora_mlm.main(config)
    assert [row["step"] for row in again["training"]["history"]] == [1, 2, 3]
    second = minilm_lora_mlm.main(
        minilm_lora_mlm.Config(
            out=shipped / "stage2",
            init_from=config.out,
            steps=1,
            batch=2,
            austen=False,
            max_windows=8,
            rank=2,
            moby_share=0.5,
        )
    )
    assert second["previous_stage_results"]["results"] == again["results"]
    model, _ = checkpoints.load_lora_mlm("minilm-lora-mlm")
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == again["training"]["trainable_params"]


@smoke
def test_minilm_mlm_head_compares_both_variants_and_loads(shipped):
    metrics = minilm_mlm_head.main(
        minilm_mlm_head.Config(
            out=shipped / "minilm-mlm-head",
            head_steps=2,
            batch=8,
            scratch_steps=2,
            scratch_schedule_steps=2,
            scratch_batch=2,
            max_windows=6,
        )
    )
    assert set(metrics["variants"]) == {"head", "scratch"} and metrics["chosen"] in metrics["variants"]
    if metrics["chosen"] == "head":
        model, _ = checkpoints.load_minilm(BertForMaskedLM, "minilm-mlm-head", checkpoints.MLM_HEADS)
        assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight


@smoke
def test_minilm_nsp_stories_are_written(tmp_path):
    stories = tmp_path / "stories.json.gz"
    argv = ["--out", str(stories), "--topics", "3", "--per-topic", "1", "--batch", "3", "--max-new-tokens", "12"]
    cli(minilm_nsp_stories.main, minilm_nsp_stories.Config, "", argv)
    with gzip.open(stories, "rt") as f:
        assert [story["topic"] for story in json.load(f)["stories"]] == [
            "a visit to the dentist",
            "a rainy afternoon at home",
            "fixing a flat bicycle tyre",
        ]


@smoke
def test_minilm_nsp_trains_on_every_corpus_and_loads(shipped):
    tiny = dict(moby_pairs=24, austen_pairs=8, email_pairs=24, story_pairs=8, test_pairs=6, batch=16, eval_every=2)
    metrics = minilm_nsp.main(minilm_nsp.Config(out=shipped / "minilm-nsp", calibration_pairs=8, rank=2, **tiny))
    assert metrics["training"]["steps"] == 4 and [row["step"] for row in metrics["training"]["history"]] == [2, 4]
    assert metrics["story_test_pairs"] == 6 and "story_accuracy" in metrics["baseline_similarity_threshold"]
    model, tokenizer = checkpoints.load_nsp_classifier("minilm-nsp")
    p_next = checkpoints.is_next_probability(model, tokenizer, minilm_nsp.LECTURE_PAIRS)
    assert p_next.tolist() == pytest.approx([pair["p_is_next"] for pair in metrics["lecture_pairs"]], abs=1e-4)


@smoke
def test_minilm_ner_trains_and_loads_as_a_token_classifier(shipped):
    metrics = minilm_ner.main(
        minilm_ner.Config(
            out=shipped / "minilm-ner",
            train_with_entities=12,
            train_without=4,
            epochs=1,
            austen=False,
            test_sentences=20,
        )
    )
    assert metrics["results"]["moby_dick"]["sentences"] == 20 and metrics["training"]["sentences"] == 16
    encoder, tagger, tokenizer, tags = checkpoints.load_ner_tagger("minilm-ner")
    assert tags == minilm_ner.TAGS
    merged = AutoModelForTokenClassification.from_pretrained(checkpoints.merged_model_dir("minilm-ner"))
    batch = tokenizer(["Call me Ishmael ."], return_tensors="pt")
    with torch.no_grad():
        ours = tagger(checkpoints.frozen_block_outputs(encoder, batch.input_ids), batch.input_ids)
        torch.testing.assert_close(merged(**batch).logits, ours, atol=1e-4, rtol=1e-5)


@smoke
def test_char_gpt_records_loss_against_compute_per_seed_and_loads(shipped):
    config = char_gpt.Config(
        out=shipped / "char-gpt", seeds=[0, 1], live_steps=2, longer_steps=4, larger_steps=2, larger_batch=4, warmup=1
    )
    config.eval_every, config.eval_windows, config.full_val_chars = 2, 4, 32 * 64
    metrics = char_gpt.main(config)
    assert list(metrics["variants"]) == ["live", "longer", "larger"]
    for name, variant in metrics["variants"].items():
        assert variant["seed"] == 0 and [run["seed"] for run in variant["seeds"]] == [0, 1]
        assert variant["seeds"][0]["val_loss"] == [row["val_loss"] for row in variant["curve"]]
        assert variant["seeds"][1]["val_loss"] != variant["seeds"][0]["val_loss"]  # other weights, other batches
        assert [row["step"] for row in variant["curve"]][-1] == variant["steps"]
        assert all(row["flops"] == 6 * variant["params"] * row["characters"] for row in variant["curve"])
        if name == "live":
            assert not (shipped / "char-gpt" / "live").exists()  # the lecture trains it: no weights kept
            continue
        model = checkpoints.load_char_gpt(name)
        assert sum(p.numel() for p in model.parameters()) == variant["params"] and not model.training
        assert model.max_len == char_gpt.CONTEXT and model.config.d_model == char_gpt.SIZES[name]["d_model"]
    with pytest.raises(ValueError, match="variant must be one of"):
        checkpoints.load_char_gpt("huge")


def test_naive_bayes_counts_tokens_per_class():
    train = {"input_ids": torch.tensor([[5, 6, 0], [5, 5, 0], [7, 8, 0], [7, 7, 8]])}
    train["attention_mask"] = (train["input_ids"] != 0).long()
    test = {"input_ids": torch.tensor([[5, 0, 0], [8, 7, 0], [9, 0, 0]])}
    test["attention_mask"] = (test["input_ids"] != 0).long()
    predicted = spam_transfer.naive_bayes(train, torch.tensor([0, 0, 1, 1]), test, 10)
    # token 9 was never seen: its add-one share is larger in ham, which counted fewer tokens (1/14 against 1/15)
    assert predicted.tolist() == [0, 1, 0]


@smoke
def test_spam_transfer_tunes_the_random_start_and_scores_every_draw(shipped):
    config = spam_transfer.Config(
        out=shipped / "spam-transfer", sizes=[4, 8], draws=[0, 1], pretrained_epochs=[1, 1], n_test=10
    )
    config.random_lrs, config.max_steps = [1e-4, 1e-3], 1
    metrics = spam_transfer.main(config)
    assert metrics["random_lr"] in config.random_lrs and len(metrics["random_lr_grid"]) == 2
    assert [(row["draw"], row["size"]) for row in metrics["runs"]] == [(0, 4), (0, 8), (1, 4), (1, 8)]
    for row in metrics["runs"]:
        for start in ("naive_bayes", "random", "pretrained"):
            assert 0 <= row[start]["accuracy"] <= 1
        assert row["random"]["lr"] == metrics["random_lr"]


@smoke
def test_digits_sft_scores_every_seed_before_and_after(shipped):
    config = digits_sft.Config(out=shipped / "digits-sft", seeds=[0, 1], n_train=4, n_test=2, batch=2, warmup=1)
    metrics = digits_sft.main(config)
    assert metrics["before"] == 0.0 and [run["seed"] for run in metrics["seeds"]] == [0, 1]
    for run in metrics["seeds"]:
        assert 0 <= run["after"] <= 1 and len(run["train_loss"]) == 2  # 4 numbers, 2 a step, each once
    assert checkpoints.recorded_metrics("digits-sft") == metrics


def test_digits_sft_draws_lecture_8s_numbers():
    train, test = digits_sft.lecture_numbers(80, 25)
    assert len(train) == 80 and len(test) == 25 and not set(train) & set(test)
    assert all(1 <= n <= 999 for n in train + test)


@smoke
def test_t5_new_task_records_every_start_rate_and_seed(tmp_path):
    config = t5_new_task.Config(out=tmp_path, n_train=8, n_test=3, steps=2, batch_size=4, lrs=[1e-3], seeds=[0, 1])
    metrics = t5_new_task.main(config)
    assert [(run["start"], run["seed"]) for run in metrics["runs"]] == [
        ("multitask", 0),
        ("multitask", 1),
        ("random", 0),
        ("random", 1),
    ]
    for run in metrics["runs"]:
        assert 0 <= run["exact_match"] <= 1 and run["answers"][0][0].startswith("sort descending: ")
    assert json.loads((tmp_path / "metrics.json").read_text()) == metrics


@smoke
def test_spam_lora_records_every_draw(tmp_path):
    config = spam_lora.Config(out=tmp_path, draws=[0, 1], n_train=16, n_valid=8, epochs=2)
    metrics = spam_lora.main(config)
    assert [run["draw"] for run in metrics["runs"]] == [0, 1]
    for run in metrics["runs"]:
        assert 0 <= run["test_accuracy"] <= 1 and len(run["valid_accuracy"]) == 2
        assert run["best_valid_accuracy"] == max(run["valid_accuracy"]) and run["trained_parameters"] == 74498
    assert json.loads((tmp_path / "metrics.json").read_text()) == metrics
