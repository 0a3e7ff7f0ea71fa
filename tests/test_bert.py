"""Lecture 7: BERT's masked LM, next-sentence and NER pieces, and the shipped MiniLM checkpoints."""

import json

import pytest
import torch
from transformers import BertForMaskedLM, BertForNextSentencePrediction

from course import assets, checkpoints, corpora
from course.bert_tasks import gazetteer_tags, masked_word_eval_set, sentence_pairs, single_token_words, word_targets
from course.checkpoints import (
    MLM_HEADS,
    NSP_HEADS,
    is_next_probability,
    load_lora_mlm,
    load_minilm,
    load_ner_tagger,
    load_nsp_classifier,
    tag_words,
)
from course.corpora import heldout_chapters, split_sentences, split_words, token_windows
from course.metrics import bio_spans, context_free_baselines, fill_mask_accuracy, span_scores
from scratch.l07_masking import IGNORE_INDEX, mask_tokens

MINILM_MLM_HEAD = "minilm-mlm-head"  # the head on the frozen encoder that minilm-lora-mlm superseded
LORA_CHECKPOINT = "minilm-lora-mlm"
NER_CHECKPOINT = "minilm-ner"
NSP_CHECKPOINT = "minilm-nsp"


@pytest.fixture(scope="module")
def mlm():
    return load_minilm(BertForMaskedLM, MINILM_MLM_HEAD, MLM_HEADS)


@pytest.fixture(scope="module")
def metrics():
    return json.loads((checkpoints.checkpoint_dir(MINILM_MLM_HEAD) / "metrics.json").read_text())


@pytest.fixture(scope="module")
def held_out_examples(mlm, metrics):
    _, tokenizer = mlm
    _, held = heldout_chapters(corpora.moby_dick_chapters())
    assert [int(c["chapter"]) for c in held] == metrics["evaluation"]["held_out_chapters"]
    windows = token_windows(tokenizer, [c["text"] for c in held], metrics["evaluation"]["window_tokens"])
    return masked_word_eval_set(tokenizer, windows, seed=metrics["evaluation"]["seed"])


def test_checkpoint_is_a_small_head_only(metrics):
    from safetensors import safe_open

    folder = checkpoints.checkpoint_dir(MINILM_MLM_HEAD)
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
        load_minilm(BertForMaskedLM, "no-such-head", MLM_HEADS)


# ---------------------------------------------------------------- the LoRA-adapted fill-mask model (minilm-lora-mlm)


@pytest.fixture(scope="module")
def lora_mlm():
    torch.set_num_threads(1)
    return load_lora_mlm()


@pytest.fixture(scope="module")
def lora_metrics():
    return json.loads((checkpoints.checkpoint_dir(LORA_CHECKPOINT) / "metrics.json").read_text())


def test_lora_checkpoint_holds_only_what_training_changed(lora_mlm, lora_metrics):
    from safetensors import safe_open

    model, _ = lora_mlm
    path = checkpoints.checkpoint_dir(LORA_CHECKPOINT) / "model.safetensors"
    with safe_open(str(path), framework="pt") as f:
        names = set(f.keys())
    assert names == {n for n, p in model.named_parameters() if p.requires_grad}
    assert any("lora_a" in n for n in names) and "cls.predictions.bias" in names
    assert not any(n.endswith(("query.base.weight", "word_embeddings.weight")) for n in names)  # frozen: not stored
    assert path.stat().st_size < 5_000_000
    assert lora_metrics["training"]["trainable_params"] == sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight


def test_lora_model_reaches_its_reported_accuracy(lora_mlm, lora_metrics):
    model, tokenizer = lora_mlm
    evaluation = lora_metrics["evaluation"]
    _, held = heldout_chapters(corpora.moby_dick_chapters())
    assert [int(c["chapter"]) for c in held] == evaluation["moby_dick_held_out_chapters"]
    windows = token_windows(tokenizer, [c["text"] for c in held], evaluation["window_tokens"])
    examples = masked_word_eval_set(tokenizer, windows, seed=evaluation["seed"])
    reported = lora_metrics["results"]["moby_dick"]
    assert len(examples) == reported["windows"] and sum(len(e[2]) for e in examples) == reported["masked_words"]
    measured = fill_mask_accuracy(model, examples[: evaluation["quick_sample_windows"]])
    assert measured["n"] == reported["quick_sample"]["n"]
    assert measured["top1"] == pytest.approx(reported["quick_sample"]["top1"], abs=0.005)
    assert measured["top5"] == pytest.approx(reported["quick_sample"]["top5"], abs=0.005)
    # the quick sample (431 words) agrees with the full set within sampling error (2 standard errors of ~0.02)
    assert measured["top1"] == pytest.approx(reported["model"]["top1"], abs=0.05)
    # and the model beats the best context-free guess, chosen on the training words, on the full held-out set
    baseline = reported["baseline_from_training_words"]
    assert reported["model"]["top1"] > baseline["top1"] + 0.05 and reported["model"]["top5"] > baseline["top5"] + 0.05


def test_context_free_baseline_is_recomputed_from_the_training_words(lora_mlm, lora_metrics):
    _, tokenizer = lora_mlm
    train, held = heldout_chapters(corpora.moby_dick_chapters())
    windows = lambda chapters: token_windows(tokenizer, [c["text"] for c in chapters], 64)  # noqa: E731
    test_targets = torch.cat([e[2] for e in masked_word_eval_set(tokenizer, windows(held), seed=0)])
    baseline = context_free_baselines(word_targets(tokenizer, windows(train)), test_targets)
    reported = lora_metrics["results"]["moby_dick"]["baseline_from_training_words"]
    assert tokenizer.convert_ids_to_tokens(baseline["guesses"]) == reported["guesses"]
    assert baseline["top1"] == pytest.approx(reported["top1"]) and baseline["top5"] == pytest.approx(reported["top5"])
    assert all(g.isalpha() for g in reported["guesses"])  # guesses that can be right


def test_lora_fill_mask_answers_match_metrics(lora_mlm, lora_metrics):
    from transformers import pipeline

    model, tokenizer = lora_mlm
    fill_mask = pipeline("fill-mask", model=model, tokenizer=tokenizer)
    for text, expected in lora_metrics["examples"].items():
        guesses = fill_mask(text, top_k=5)
        assert [g["token_str"] for g in guesses][0] == expected[0][0], text
        assert guesses[0]["score"] == pytest.approx(expected[0][1], abs=1e-3), text


def test_context_free_baselines_break_ties_and_refuse_empty_input():
    result = context_free_baselines(torch.tensor([7, 7, 3, 3, 9]), torch.tensor([3, 9, 7, 1]), k=2)
    assert result["guesses"] == [3, 7] and result["top1"] == 0.25 and result["top2"] == 0.5
    with pytest.raises(ValueError, match="must be non-empty"):
        context_free_baselines(torch.tensor([], dtype=torch.long), torch.tensor([1]))


# ---------------------------------------------------------------- NER and NSP checkpoints


@pytest.mark.assets
@pytest.mark.slow
def test_ner_tagger_reaches_its_reported_scores():
    torch.set_num_threads(1)
    folder = checkpoints.checkpoint_dir(NER_CHECKPOINT)
    metrics = json.loads((folder / "metrics.json").read_text())
    lists = json.loads((folder / "entities.json").read_text())
    names = {kind: lists[kind] for kind in ("PER", "LOC")}
    encoder, tagger, tokenizer, tags = load_ner_tagger()
    assert tags == metrics["tags"]
    _, held = heldout_chapters(corpora.moby_dick_chapters())
    sentences = [w for c in held for s in split_sentences(c["text"]) if 3 <= len(w := split_words(s)) <= 60]
    reported = metrics["results"]["moby_dick"]
    assert len(sentences) == reported["sentences"]
    quick = sentences[: metrics["evaluation"]["quick_sample_sentences"]]
    predicted = tag_words(encoder, tagger, tokenizer, tags, quick, metrics["evaluation"]["max_tokens"])
    scores = span_scores([bio_spans(gazetteer_tags(w, names)) for w in quick], [bio_spans(t) for t in predicted])
    for kind, expected in reported["quick_sample"].items():
        assert scores[kind]["correct"] == expected["correct"] and scores[kind]["predicted"] == expected["predicted"]
    # it beats guessing that capitalised words are persons; on Persuasion, whose characters training never named,
    # it also beats looking up the training names (on Moby-Dick the same characters recur, and lookup is strong)
    assert reported["model"]["all"]["f1"] > reported["baseline_capitalised_is_person"]["all"]["f1"]
    unseen = metrics["results"].get("persuasion")
    if unseen is not None:
        assert unseen["model"]["all"]["f1"] > unseen["baseline_training_names"]["all"]["f1"] + 0.1


@pytest.mark.assets
@pytest.mark.slow
def test_lora_loader_refuses_a_checkpoint_of_another_kind():
    with pytest.raises(ValueError, match="does not match the model"):
        load_minilm(BertForNextSentencePrediction, "minilm-mlm-head", NSP_HEADS)  # a head, no adapters
    with pytest.raises(ValueError, match="does not match the model"):
        load_minilm(BertForNextSentencePrediction, LORA_CHECKPOINT, NSP_HEADS)  # fill-mask, not NSP


def test_nsp_stories_are_the_ones_the_head_was_trained_on():
    import gzip
    import hashlib

    folder = checkpoints.checkpoint_dir(NSP_CHECKPOINT)
    recorded = json.loads((folder / "metrics.json").read_text())["training"]["stories"]
    raw = (folder / recorded["file"]).read_bytes()
    assert hashlib.sha256(raw).hexdigest() == recorded["sha256"]
    stories = json.loads(gzip.decompress(raw))["stories"]
    assert len(stories) == 1490 and len({s["topic"] for s in stories}) == 149
    lecture = json.loads((folder / "metrics.json").read_text())["lecture_pairs"]
    sentences = {x["a"] for x in lecture} | {x["b"] for x in lecture}
    assert not any(sentence in s["text"] for s in stories for sentence in sentences)


@pytest.mark.assets
@pytest.mark.slow
def test_nsp_head_reaches_its_reported_accuracy_and_answers_the_lecture_pairs():
    torch.set_num_threads(1)
    metrics = json.loads((checkpoints.checkpoint_dir(NSP_CHECKPOINT) / "metrics.json").read_text())
    model, tokenizer = load_nsp_classifier()
    _, held = heldout_chapters(corpora.moby_dick_chapters())
    test = sentence_pairs([c["text"] for c in held], metrics["test_pairs"], seed=1)[: metrics["quick_sample_pairs"]]
    p_next = is_next_probability(model, tokenizer, [(a, b) for a, b, _ in test])
    accuracy = ((p_next < 0.5).long() == torch.tensor([label for *_, label in test])).float().mean().item()
    assert accuracy == pytest.approx(metrics["quick_sample_accuracy"], abs=0.01)
    lecture = metrics["lecture_pairs"]
    p = is_next_probability(model, tokenizer, [(x["a"], x["b"]) for x in lecture])
    assert p.tolist() == pytest.approx([x["p_is_next"] for x in lecture], abs=1e-3)
    assert p[0] > 0.5 > p[1]  # milk: IsNext; the weather sentence: NotNext (narrowly: see its README)
    with pytest.raises(ValueError, match="at least one"):
        is_next_probability(model, tokenizer, [])
