"""Adapting a pretrained encoder cheaply (lecture 7): low-rank adapters (LoRA) and the pieces of two fine-tunes.

    LoRALinear           a frozen nn.Linear plus a trainable low-rank update: y = x Wᵀ + b + (α/r) x Aᵀ Bᵀ
    add_lora             wrap every nn.Linear inside a module (e.g. all of BERT's encoder blocks) in a LoRALinear
    trainable_state      the tensors that training changed (adapters, unfrozen biases/LayerNorms, heads): a small
                         checkpoint that is loaded on top of the unchanged pretrained weights
    minilm_with_lora     all-MiniLM-L6-v2 as a transformers BERT class (masked LM, next sentence) with LoRA on
                         every encoder Linear; load_minilm_with_lora adds a course checkpoint's trained tensors
    label_first_pieces   word-level tags -> WordPiece-level labels (first piece of a word labelled, the rest -100)
    bio_spans            the (type, start, end) entity spans of a BIO tag sequence
    span_scores          per-type precision, recall and F1 of predicted spans against gold spans (exact match)

Hu et al. (2021), "LoRA": a pretrained weight W (d_out × d_in) stays frozen; training learns B (d_out × r) and
A (r × d_in) with r ≪ d, and the layer computes W x + (α/r) B A x. B starts at zero, so training starts from the
pretrained model exactly; the update B A has rank at most r, and costs r (d_in + d_out) numbers instead of d_in d_out.
"""

from __future__ import annotations

import math

import torch
from torch import nn

IGNORE_INDEX = -100  # PyTorch's cross_entropy default: positions with this label are not scored


class LoRALinear(nn.Module):
    """`base` (frozen) + a rank-`rank` update scaled by alpha / rank. Same inputs and outputs as `base`."""

    def __init__(self, base: nn.Linear, rank: int = 8, alpha: float = 16.0):
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise TypeError(f"LoRALinear wraps an nn.Linear, got {type(base).__name__}")
        if not isinstance(rank, int) or rank < 1:
            raise ValueError(f"rank must be a positive int, got {rank!r}")
        if rank > min(base.in_features, base.out_features):
            raise ValueError(f"rank {rank} exceeds min(d_in, d_out) = {min(base.in_features, base.out_features)}")
        self.base = base
        self.base.weight.requires_grad_(False)
        self.rank, self.alpha, self.scale = rank, alpha, alpha / rank
        # A random (as nn.Linear initialises a weight), B zero: the adapted layer starts equal to the base layer
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * self.scale

    def merged_weight(self) -> torch.Tensor:
        """W + (α/r) B A: one plain weight that computes the same layer (no extra cost at inference)."""
        return self.base.weight + self.scale * self.lora_b @ self.lora_a


def add_lora(module: nn.Module, rank: int = 8, alpha: float = 16.0) -> list[str]:
    """Replace every nn.Linear inside `module` by a LoRALinear around it (in place); returns their names.

    For a transformers BertEncoder that is, per block, Q, K, V, the attention output and both FFN layers.
    """
    targets = [(name, child) for name, child in module.named_modules() if isinstance(child, nn.Linear)]
    if not targets:
        raise ValueError(f"{type(module).__name__} holds no nn.Linear to adapt")
    for name, linear in targets:
        parent_name, _, attribute = name.rpartition(".")
        parent = module.get_submodule(parent_name) if parent_name else module
        setattr(parent, attribute, LoRALinear(linear, rank, alpha))
    return [name for name, _ in targets]


def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """{name: tensor} of the parameters with requires_grad: what a fine-tune changed, cloned and contiguous."""
    return {name: p.detach().clone().contiguous() for name, p in model.named_parameters() if p.requires_grad}


def label_first_pieces(word_ids: list[int | None], word_labels: list[int]) -> list[int]:
    """Word-level labels -> one label per WordPiece token: a word's first piece gets the word's label; its
    other pieces and the special tokens ([CLS], [SEP], padding: word id None) get IGNORE_INDEX (-100).

    word_ids: a fast tokenizer's `encoding.word_ids()` (the index of the word each token came from).
    """
    if any(w is not None and not 0 <= w < len(word_labels) for w in word_ids):
        raise ValueError(f"word_ids refer to words outside word_labels (which has {len(word_labels)} labels)")
    labels, previous = [], None
    for word in word_ids:
        labels.append(IGNORE_INDEX if word is None or word == previous else word_labels[word])
        previous = word
    return labels


def bio_spans(tags: list[str]) -> set[tuple[str, int, int]]:
    """Entity spans of a BIO sequence as (type, start, end) with end exclusive. 'B-X' starts an X; 'I-X'
    continues it (an 'I-X' with no open X starts one, the usual lenient reading); 'O' is outside."""
    spans, kind, start = set(), None, 0
    for i, tag in enumerate([*tags, "O"]):
        if tag != "O" and not tag.startswith(("B-", "I-")):
            raise ValueError(f"tag {tag!r} at position {i} is not 'O', 'B-<type>' or 'I-<type>'")
        continues = tag.startswith("I-") and tag[2:] == kind
        if kind is not None and not continues:
            spans.add((kind, start, i))
            kind = None
        if tag != "O" and not continues:
            kind, start = tag[2:], i
    return spans


def span_scores(gold: list[set], predicted: list[set]) -> dict[str, dict]:
    """Exact-match span precision/recall/F1 per entity type (and 'all'), summed over the sentences.

    gold, predicted: one set of (type, start, end) per sentence, as bio_spans returns.
    Returns {type: {'precision', 'recall', 'f1', 'gold', 'predicted', 'correct'}}.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted ones")
    counts: dict[str, list[int]] = {}
    for g, p in zip(gold, predicted):
        for kind in {s[0] for s in g | p} | {"all"}:
            c = counts.setdefault(kind, [0, 0, 0])
            g_k = g if kind == "all" else {s for s in g if s[0] == kind}
            p_k = p if kind == "all" else {s for s in p if s[0] == kind}
            c[0], c[1], c[2] = c[0] + len(g_k), c[1] + len(p_k), c[2] + len(g_k & p_k)
    scores = {}
    for kind, (n_gold, n_pred, correct) in sorted(counts.items()):
        precision = correct / n_pred if n_pred else 0.0
        recall = correct / n_gold if n_gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        scores[kind] = {
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "gold": n_gold,
            "predicted": n_pred,
            "correct": correct,
        }
    return scores


WORD_PATTERN = r"[A-Za-z]+(?:-[A-Za-z]+)*|'s\b|[0-9]+|[^\sA-Za-z0-9]"  # a possessive 's is a word of its own


def split_words(text: str) -> list[str]:
    """Words and punctuation marks of a text, the unit that NER labels: "Ahab's boat." -> Ahab, 's, boat, ."""
    import re

    return re.findall(WORD_PATTERN, text)


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
    tags, i = ["O"] * len(words), 0
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


def split_sentences(text: str) -> list[str]:
    """A text's sentences: split after . ! or ? when a capital letter or a quote follows (not after Mr. Mrs. Dr.
    St.); paragraphs (lines) never share a sentence; whitespace inside a sentence is collapsed."""
    import re

    boundary = r"(?<!\bMr\.)(?<!\bMrs\.)(?<!\bDr\.)(?<!\bSt\.)(?<=[.!?])\s+(?=[\"'“‘A-Z])"
    return [" ".join(s.split()) for line in text.split("\n") for s in re.split(boundary, line) if s.strip()]


# ---------------------------------------------------------------- fine-tuning only the last block (lecture 7's recipe)


@torch.no_grad()
def frozen_block_outputs(
    encoder, ids: torch.Tensor, token_type_ids: torch.Tensor | None = None, batch: int = 64
) -> torch.Tensor:
    """The output of all blocks but the last of a scratch.models.BERT = the last block's input, (n, T, d_model).

    When only the last block is trained, the blocks below never change: compute their output once, then train on it.
    Sequences are run in batches of similar length, each cut to its longest sequence (padding is masked anyway, so
    the real positions come out the same); the output at padding positions is 0.
    """
    lengths = (ids != encoder.pad_id).sum(1)
    order = lengths.argsort(descending=True)
    out = torch.zeros(*ids.shape, encoder.tok_embed.embedding_dim)
    for i in range(0, len(ids), batch):
        rows = order[i : i + batch]
        longest = int(lengths[rows].max())
        types = None if token_type_ids is None else token_type_ids[rows, :longest]
        out[rows, :longest] = encoder.hidden_states(ids[rows, :longest], token_type_ids=types)[-2]
    return out


def trim_padding(ids: torch.Tensor, *tensors: torch.Tensor, pad_id: int = 0):
    """Cut a padded batch (and tensors aligned with it along dim 1) to its longest real sequence."""
    longest = int((ids != pad_id).sum(1).max())
    return (ids[:, :longest], *(t[:, :longest] for t in tensors))


def trainable_copy(block: nn.Module, lora_rank: int | None = None, lora_alpha: float = 16.0) -> nn.Module:
    """A copy of an encoder block to fine-tune: all of it (lora_rank None), or, with lora_rank r, LoRA adapters on
    its Linears while their pretrained weight matrices stay frozen (biases and LayerNorms train too)."""
    import copy

    block = copy.deepcopy(block)
    if lora_rank is not None:
        add_lora(block, lora_rank, lora_alpha)
        for name, p in block.named_parameters():
            p.requires_grad_(not name.endswith(".base.weight"))
    return block


class BlockTagger(nn.Module):
    """Token classification: a copy of an encoder's last block (trained, or adapted with LoRA when lora_rank is
    given) + Linear(d_model, n_tags) on every token.

    Input: the frozen blocks' output h (batch, T, d_model) and the ids (for the padding mask) -> (batch, T, n_tags).
    """

    def __init__(
        self,
        block: nn.Module,
        d_model: int,
        n_tags: int,
        pad_id: int = 0,
        lora_rank: int | None = None,
        lora_alpha: float = 16.0,
    ):
        super().__init__()
        self.block, self.pad_id = trainable_copy(block, lora_rank, lora_alpha), pad_id
        self.head = nn.Linear(d_model, n_tags)

    def forward(self, h: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        from scratch.attention import padding_mask

        return self.head(self.block(h, padding_mask(ids, self.pad_id)))


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
    import random

    if not isinstance(min_gap, int) or min_gap < 1:
        raise ValueError(f"min_gap must be a positive int, got {min_gap!r}")
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


# ---------------------------------------------------------------- the course's two small fine-tuned checkpoints

NER_CHECKPOINT, NSP_CHECKPOINT = "minilm-ner", "minilm-nsp"


def _minilm_encoder():
    from transformers import AutoModel, AutoTokenizer

    from scratch import assets
    from scratch.pretrained import from_hf_bert

    minilm = AutoModel.from_pretrained(assets.minilm_dir())
    return from_hf_bert(minilm).eval(), AutoTokenizer.from_pretrained(assets.minilm_dir())


def _load_checkpoint(name: str):
    from safetensors import safe_open

    from scratch import assets

    with safe_open(str(assets.checkpoint_dir(name) / "model.safetensors"), framework="pt") as f:
        return {key: f.get_tensor(key) for key in f.keys()}, f.metadata() or {}  # noqa: SIM118 (safe_open is not a dict)


def _load_trained(model: nn.Module, weights: dict[str, torch.Tensor], name: str) -> nn.Module:
    """Load what training changed (trainable_state) into a freshly built model; the rest is MiniLM's."""
    expected = {key for key, p in model.named_parameters() if p.requires_grad}
    if set(weights) != expected:
        missing, extra = sorted(expected - set(weights)), sorted(set(weights) - expected)
        raise ValueError(
            f"{name}: the checkpoint does not match the model (missing {missing[:3]}, unexpected {extra[:3]})"
        )
    model.load_state_dict({k: v.float() for k, v in weights.items()}, strict=False)
    return model.eval()


def _lora_settings(metadata: dict) -> dict:
    if "lora_rank" not in metadata:
        return {}
    return {"lora_rank": int(metadata["lora_rank"]), "lora_alpha": float(metadata["lora_alpha"])}


def load_ner_tagger(name: str = NER_CHECKPOINT):
    """MiniLM (scratch BERT) + the course's NER tagger -> (encoder, tagger, tokenizer, tags), in eval mode.

    The tagger is a BlockTagger: its own copy of MiniLM's last block, adapted with LoRA (metadata 'lora_rank',
    'lora_alpha'; without them, the whole block fine-tuned), and a linear layer to the tags (metadata 'tags',
    e.g. O B-PER I-PER B-LOC I-LOC); the encoder's blocks below it are MiniLM's, unchanged.
    """
    weights, metadata = _load_checkpoint(name)
    if "tags" not in metadata:
        raise ValueError(f"{name}: metadata lacks 'tags'; is this a token-classification checkpoint?")
    tags = metadata["tags"].split()
    encoder, tokenizer = _minilm_encoder()
    tagger = BlockTagger(
        encoder.blocks[-1],
        encoder.tok_embed.embedding_dim,
        len(tags),
        tokenizer.pad_token_id,
        **_lora_settings(metadata),
    )
    return encoder, _load_trained(tagger, weights, name), tokenizer, tags


def minilm_with_lora(model_class, rank: int = 16, alpha: float = 32.0, heads: tuple[str, ...] = ("cls.",)):
    """all-MiniLM-L6-v2 loaded as a transformers BERT model class (BertForMaskedLM, BertForNextSentencePrediction,
    ...), its encoder adapted with LoRA, untrained.

    Trainable: the low-rank adapters on every Linear of the 6 encoder blocks (Q, K, V, attention output, both FFN
    layers), the encoder's biases and LayerNorms, and the parameters whose names start with one of `heads` (the task
    head; MiniLM ships no `cls.*` weights, so transformers initialises them). Frozen: everything else, as installed.
    """
    from transformers.utils import logging

    from scratch import assets

    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()  # MiniLM has no cls.* weights: the "newly initialised" notice is expected
    try:
        model = model_class.from_pretrained(assets.minilm_dir())
    finally:
        logging.set_verbosity(verbosity)
    for p in model.parameters():
        p.requires_grad_(False)
    add_lora(model.bert.encoder, rank=rank, alpha=alpha)
    for name, p in model.named_parameters():
        in_encoder = name.startswith("bert.encoder.")
        if (
            "lora_" in name
            or (in_encoder and (name.endswith(".bias") or ".LayerNorm." in name))
            or name.startswith(heads)
        ):
            p.requires_grad_(True)
    return model


def load_minilm_with_lora(model_class, name: str, heads: tuple[str, ...] = ("cls.",)):
    """MiniLM + a course checkpoint made by minilm_with_lora -> (model in eval mode, tokenizer).

    data/checkpoints/<name>/model.safetensors holds only what training changed (trainable_state); its metadata
    names the adapters' rank and alpha. Everything else is MiniLM's, as installed.
    """
    from transformers import AutoTokenizer

    from scratch import assets

    weights, metadata = _load_checkpoint(name)
    if "lora_rank" not in metadata or "lora_alpha" not in metadata:
        raise ValueError(f"{name}: metadata lacks lora_rank/lora_alpha; is this a LoRA checkpoint?")
    model = minilm_with_lora(model_class, int(metadata["lora_rank"]), float(metadata["lora_alpha"]), heads)
    return _load_trained(model, weights, name), AutoTokenizer.from_pretrained(assets.minilm_dir())


NSP_HEADS = ("bert.pooler.", "cls.")  # BERT's next-sentence head: the pooler (dense + tanh on [CLS]) and a 2-way layer


def load_nsp_classifier(name: str = NSP_CHECKPOINT):
    """MiniLM + the course's next-sentence LoRA adapters and head -> (BertForNextSentencePrediction in eval mode,
    tokenizer). Its logits are (IsNext, NotNext), transformers' order."""
    from transformers import BertForNextSentencePrediction

    return load_minilm_with_lora(BertForNextSentencePrediction, name, NSP_HEADS)


@torch.no_grad()
def tag_words(
    encoder, tagger, tokenizer, tags: list[str], sentences: list[list[str]], max_tokens: int = 96
) -> list[list[str]]:
    """One tag per word for each sentence (a list of words, as split_words gives): the tag predicted at the word's
    first WordPiece. Words cut off by max_tokens get 'O'."""
    if not sentences or any(not s for s in sentences):
        raise ValueError("give at least one sentence, each a non-empty list of words")
    enc = tokenizer(
        sentences, is_split_into_words=True, truncation=True, max_length=max_tokens, padding=True, return_tensors="pt"
    )
    best = tagger(frozen_block_outputs(encoder, enc.input_ids), enc.input_ids).argmax(-1)
    out = []
    for row, words in enumerate(sentences):
        word_tags, previous = ["O"] * len(words), None
        for position, word in enumerate(enc.word_ids(row)):
            if word is not None and word != previous:
                word_tags[word] = tags[best[row, position]]
            previous = word
        out.append(word_tags)
    return out


@torch.no_grad()
def is_next_probability(model, tokenizer, pairs: list[tuple[str, str]], batch: int = 64) -> torch.Tensor:
    """P(IsNext) for each (A, B) pair, packed as [CLS] A [SEP] B [SEP] with segment ids 0 and 1, from a model
    with BERT's next-sentence head (transformers' BertForNextSentencePrediction: logits (IsNext, NotNext))."""
    from scratch.training import eval_mode

    if not pairs or any(len(p) < 2 for p in pairs):
        raise ValueError("give at least one (sentence A, sentence B) pair")
    out = []
    with eval_mode(model):  # no dropout, whatever mode the caller left the model in
        for i in range(0, len(pairs), batch):
            chunk = pairs[i : i + batch]
            enc = tokenizer(
                [p[0] for p in chunk],
                [p[1] for p in chunk],
                truncation=True,
                max_length=128,
                padding=True,
                return_tensors="pt",
            )
            out.append(model(**enc).logits.softmax(-1)[:, 0])
    return torch.cat(out)
