"""scratch.l07_lora, course.bert_tasks and metrics: LoRA, BIO spans, span scores, gazetteer tags, sentence pairs."""

import pytest
import torch
from torch import nn

from course.bert_tasks import gazetteer_tags, sentence_pairs
from course.checkpoints import BlockTagger, frozen_block_outputs
from course.corpora import split_sentences, split_words
from course.metrics import bio_spans, span_scores
from scratch.l07_lora import LoRALinear, add_lora, trainable_state
from scratch.l07_masking import IGNORE_INDEX, label_first_pieces


def test_lora_starts_as_the_base_layer_and_trains_only_the_adapters():
    torch.manual_seed(0)
    base = nn.Linear(12, 7)
    lora = LoRALinear(base, rank=3, alpha=6.0)
    x = torch.randn(5, 12)
    assert torch.equal(lora(x), base(x))  # B = 0: exactly the pretrained layer
    lora(x).pow(2).sum().backward()
    assert base.weight.grad is None and lora.lora_b.grad is not None
    with torch.no_grad():
        lora.lora_b.normal_()
    expected = x @ (base.weight + 2.0 * lora.lora_b @ lora.lora_a).T + base.bias  # alpha / rank = 2
    assert torch.allclose(lora(x), expected, atol=1e-5)
    assert torch.allclose(lora.merged_weight(), base.weight + 2.0 * lora.lora_b @ lora.lora_a)
    assert sum(p.numel() for p in lora.parameters() if p.requires_grad) == 3 * (12 + 7) + 7  # A, B and the bias


def test_add_lora_wraps_every_linear_of_bert_blocks():
    from transformers import BertConfig, BertModel

    model = BertModel(
        BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, vocab_size=50)
    )
    names = add_lora(model.encoder, rank=4)
    assert len(names) == 2 * 6  # Q, K, V, attention output, FFN in, out
    assert all(isinstance(model.encoder.get_submodule(n), LoRALinear) for n in names)
    for p in model.parameters():
        p.requires_grad_(False)
    model.encoder.layer[0].attention.self.query.lora_a.requires_grad_(True)
    assert list(trainable_state(model)) == ["encoder.layer.0.attention.self.query.lora_a"]


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: LoRALinear(nn.Conv1d(2, 2, 1)), TypeError, "wraps an nn.Linear"),
        (lambda: LoRALinear(nn.Linear(4, 4), rank=0), ValueError, "rank must be at least 1"),
        (lambda: LoRALinear(nn.Linear(4, 3), rank=4), ValueError, "rank 4 exceeds"),
        (lambda: add_lora(nn.ReLU()), ValueError, "holds no nn.Linear"),
        (lambda: label_first_pieces([None, 0, 2], [1, 1]), ValueError, "outside word_labels"),
        (lambda: bio_spans(["O", "PER"]), ValueError, "tag 'PER' at position 1"),
        (lambda: span_scores([set()], []), ValueError, "1 gold sentences but 0 predicted"),
        (lambda: gazetteer_tags(["x"], {"PER": ["Paris"], "LOC": ["Paris"]}), ValueError, "both PER and LOC"),
        (lambda: gazetteer_tags(["x"], {"PER": ["  "]}), ValueError, "empty PER entry"),
        (lambda: sentence_pairs(["One two three four. Five six seven eight."], 1), ValueError, "at least 2 chapters"),
        (lambda: sentence_pairs(["a b c d.", "e f g h."], 1, same_chapter_share=1.5), ValueError, "same_chapter_share"),
    ],
)
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.assets
def test_first_piece_labels_with_the_real_tokenizer():
    from transformers import AutoTokenizer

    from course import assets

    tokenizer = AutoTokenizer.from_pretrained(assets.minilm_dir())
    words = ["Queequeg", "met", "Ishmael", "."]
    enc = tokenizer(words, is_split_into_words=True)
    labels = label_first_pieces(enc.word_ids(), [1, 0, 1, 0])
    pieces = tokenizer.convert_ids_to_tokens(enc.input_ids)
    assert len(labels) == len(pieces) and labels[0] == labels[-1] == IGNORE_INDEX  # [CLS], [SEP]
    scored = [(p, label) for p, label in zip(pieces, labels) if label != IGNORE_INDEX]
    assert [label for _, label in scored] == [1, 0, 1, 0]  # one label per word, on its first piece
    assert all(not p.startswith("##") for p, _ in scored) and len(pieces) > len(words) + 2


def test_bio_spans_and_exact_match_scores():
    tags = ["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "B-LOC", "O", "B-PER"]
    assert bio_spans(tags) == {("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 5), ("LOC", 5, 6), ("PER", 7, 8)}
    gold = [{("PER", 0, 2), ("LOC", 5, 6)}, {("PER", 1, 2)}]
    predicted = [{("PER", 0, 1), ("LOC", 5, 6)}, {("PER", 1, 2), ("LOC", 3, 4)}]
    scores = span_scores(gold, predicted)
    assert scores["PER"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "gold": 2, "predicted": 2, "correct": 1}
    assert scores["LOC"]["precision"] == 0.5 and scores["LOC"]["recall"] == 1.0
    assert scores["all"]["correct"] == 2 and scores["all"]["predicted"] == 4 and scores["all"]["gold"] == 3


def test_gazetteer_labels_longest_name_first_and_leave_the_possessive_out():
    words = split_words("Captain Ahab's boat left New Bedford for the Cape of Good Hope, said Mr. Darcy.")
    assert words[:3] == ["Captain", "Ahab", "'s"]
    tags = gazetteer_tags(words, {"PER": ["Ahab", "Darcy"], "LOC": ["New Bedford", "Cape of Good Hope", "Cape"]})
    spans = {(k, " ".join(words[s:e])) for k, s, e in bio_spans(tags)}
    assert spans == {("PER", "Ahab"), ("LOC", "New Bedford"), ("LOC", "Cape of Good Hope"), ("PER", "Darcy")}
    assert gazetteer_tags(["ahab", "AHAB"], {"PER": ["Ahab"]}) == ["O", "B-PER"]  # as listed, or in capitals


def test_sentences_and_pairs():
    assert split_sentences('Mr. Darcy bowed. She smiled! "Well?" he said.\nA new line') == [
        "Mr. Darcy bowed.",
        "She smiled!",
        '"Well?" he said.',
        "A new line",
    ]
    chapters = [" ".join(f"Chapter {c} sentence number {i} here." for i in range(6)) for c in range(3)]
    pairs = sentence_pairs(chapters, 10, seed=0)
    assert [label for *_, label in pairs] == [0, 1] * 5
    for a, b, label in pairs:
        same_chapter = a.split()[1] == b.split()[1]
        if label == 0:
            assert same_chapter and int(b.split()[4]) == int(a.split()[4]) + 1  # B follows A
        else:
            assert not same_chapter
    assert sentence_pairs(chapters, 10, seed=0) == pairs


def test_same_chapter_negatives_are_far_from_a():
    from course.bert_tasks import SAME_CHAPTER_DISTANCE

    long_chapters = [" ".join(f"Chapter {c} sentence number {i} here." for i in range(40)) for c in range(3)]
    assert sentence_pairs(long_chapters, 20, seed=3, same_chapter_share=0.0) == sentence_pairs(
        long_chapters, 20, seed=3
    )
    pairs = sentence_pairs(long_chapters, 100, seed=0, same_chapter_share=1.0)
    for a, b, label in pairs:
        if label == 1:  # every NotNext B from A's own chapter, at least SAME_CHAPTER_DISTANCE sentences away
            assert a.split()[1] == b.split()[1]
            assert abs(int(b.split()[4]) - int(a.split()[4])) >= SAME_CHAPTER_DISTANCE
    # where A's chapter is too short, B falls back to another chapter
    short = sentence_pairs(
        [" ".join(f"Chapter {c} sentence number {i} here." for i in range(6)) for c in range(3)],
        10,
        seed=0,
        same_chapter_share=1.0,
    )
    assert all(a.split()[1] != b.split()[1] for a, b, label in short if label == 1)


def test_block_heads_have_the_right_shapes():
    from scratch.l07_bert import BERT

    torch.manual_seed(0)
    encoder = BERT(vocab_size=30, d_model=16, h=2, N=2, d_ff=32, max_len=12).eval()  # no dropout
    ids = torch.tensor([[1, 5, 6, 2, 0], [1, 7, 2, 0, 0]])
    h = encoder.hidden_states(ids)[-2]
    assert BlockTagger(encoder.blocks[-1], 16, 5)(h, ids).shape == (2, 5, 5)
    tagger = BlockTagger(encoder.blocks[-1], 16, 5).eval()
    assert torch.allclose(tagger.block(h, None), encoder.blocks[-1](h, None))  # a copy of the last block
    cached = frozen_block_outputs(encoder, ids, batch=1)  # each row cut to its own length
    real = ids != 0
    assert torch.allclose(cached[real], h[real], atol=1e-5) and (cached[~real] == 0).all()
