"""MiniLM's checkpoints as ordinary transformers folders (course.checkpoints.merged_model_dir): the Auto classes
load them, pipeline() answers with them, and their logits are the course loaders' (adapters unmerged)."""

import json

import pytest
import torch
from transformers import (
    AutoModelForMaskedLM,
    AutoModelForNextSentencePrediction,
    AutoModelForTokenClassification,
    BertForMaskedLM,
    pipeline,
)

from course import checkpoints
from course.checkpoints import (
    frozen_block_outputs,
    is_next_probability,
    load_lora_mlm,
    load_ner_tagger,
    load_nsp_classifier,
    merged_model_dir,
    tag_words,
)
from course.metrics import bio_spans

pytestmark = [pytest.mark.slow, pytest.mark.assets]

SENTENCES = ["The sea was [MASK] and calm.", "Call me [MASK], said the old sailor to Captain Ahab in New Bedford."]


def metrics(name: str) -> dict:
    return json.loads((checkpoints.checkpoint_dir(name) / "metrics.json").read_text())


def test_fill_mask_folder_is_the_lora_model_with_its_adapters_merged():
    ours, tokenizer = load_lora_mlm()
    folder = merged_model_dir("minilm-lora-mlm")
    merged = AutoModelForMaskedLM.from_pretrained(folder).eval()
    assert type(merged) is BertForMaskedLM and not any("lora" in name for name, _ in merged.named_parameters())
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(merged(**batch).logits, ours(**batch).logits, atol=1e-4, rtol=1e-5)
    fill_mask = pipeline("fill-mask", model=str(folder))
    for text, expected in metrics("minilm-lora-mlm")["examples"].items():
        guesses = fill_mask(text, top_k=5)
        assert [g["token_str"] for g in guesses][0] == expected[0][0], text
        assert guesses[0]["score"] == pytest.approx(expected[0][1], abs=1e-3), text


def test_next_sentence_folder_is_the_lora_model_with_its_adapters_merged():
    ours, tokenizer = load_nsp_classifier()
    merged = AutoModelForNextSentencePrediction.from_pretrained(merged_model_dir("minilm-nsp")).eval()
    lecture = metrics("minilm-nsp")["lecture_pairs"]
    pairs = [(x["a"], x["b"]) for x in lecture]
    batch = tokenizer([a for a, _ in pairs], [b for _, b in pairs], padding=True, return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(merged(**batch).logits, ours(**batch).logits, atol=1e-5, rtol=1e-5)
    p_next = is_next_probability(merged, tokenizer, pairs)
    assert p_next.tolist() == pytest.approx([x["p_is_next"] for x in lecture], abs=1e-3)


def test_ner_folder_is_the_tagger_as_a_token_classifier():
    encoder, tagger, tokenizer, tags = load_ner_tagger()
    folder = merged_model_dir("minilm-ner")
    merged = AutoModelForTokenClassification.from_pretrained(folder).eval()
    assert merged.config.id2label == dict(enumerate(tags)) and merged.config.label2id == {
        t: i for i, t in enumerate(tags)
    }
    words = [
        "Captain Ahab sailed from Nantucket with Starbuck .".split(),
        "Anne Elliot walked to Bath with her father and Lady Russell .".split(),
    ]
    batch = tokenizer(words, is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        theirs = merged(**batch).logits
        ours = tagger(frozen_block_outputs(encoder, batch.input_ids), batch.input_ids)
    real = batch.attention_mask.bool()  # padding's outputs are never read
    torch.testing.assert_close(theirs[real], ours[real], atol=1e-4, rtol=1e-5)
    # the pipeline, reading each word's tag at its first piece as the tagger does, finds the tagger's entities
    tagged = tag_words(encoder, tagger, tokenizer, tags, words)
    find = pipeline("token-classification", model=str(folder), aggregation_strategy="first")
    for sentence, sentence_tags in zip(words, tagged):
        found = find(" ".join(sentence))
        expected = [
            (kind, " ".join(sentence[s:e]).lower())
            for kind, s, e in sorted(bio_spans(sentence_tags), key=lambda x: x[1])
        ]
        merged_runs = [(e["entity_group"], e["word"]) for e in found]
        assert merged_runs == expected


def test_folder_is_written_once_and_again_when_the_checkpoint_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoints, "MERGED_DIR", tmp_path)
    folder = merged_model_dir("minilm-mlm-head")
    assert folder == tmp_path / "minilm-mlm-head" and (folder / "config.json").is_file()
    assert not any(p.suffix in checkpoints.UNSAFE_WEIGHT_SUFFIXES for p in folder.iterdir())
    written = (folder / "model.safetensors").stat().st_mtime_ns
    assert merged_model_dir("minilm-mlm-head") == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == written  # cached
    (folder / ".converted-from").write_text("an older checkpoint")
    assert merged_model_dir("minilm-mlm-head") == folder
    assert (folder / ".converted-from").read_text() != "an older checkpoint"  # rewritten
    assert sorted(p.name for p in tmp_path.iterdir()) == ["minilm-mlm-head"]  # no staging folder left
