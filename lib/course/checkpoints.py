"""The checkpoints the course trained itself (data/checkpoints/<name>/), loaded in one place (lectures 6, 7 and 9).

    checkpoint_dir         a checkpoint's folder, refused unless its weights are safetensors
    load_tiny_t5           tiny-t5 or tiny-t5-pretrained: (T5ForConditionalGeneration, tokenizer)
    minilm_for             all-MiniLM-L6-v2 as a transformers BERT class (masked LM, next sentence, ...), with LoRA on
                           every encoder Linear or not, and the tensors a fine-tune trains marked trainable
    save_trained           what a fine-tune of minilm_for changed, as a small checkpoint (recipes/ write them)
    load_minilm            MiniLM + a course checkpoint made from minilm_for -> (model, tokenizer)
    load_lora_mlm          the fill-mask model: MiniLM adapted with LoRA plus an MLM head (minilm-lora-mlm)
    load_nsp_classifier    the next-sentence model (minilm-nsp)
    load_ner_tagger        the person/place tagger (minilm-ner), and tag_words to run it
    is_next_probability    P(IsNext) for sentence pairs, from a next-sentence model
    merged_model_dir       a MiniLM checkpoint as an ordinary transformers folder (adapters merged), for the Auto
                           classes and pipeline()

MiniLM's checkpoints hold only what training changed (scratch.l07_lora.trainable_state); their metadata names the
adapters' rank and alpha. Everything else is MiniLM's, as installed.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import nn
from transformers import (
    AutoModel,
    AutoTokenizer,
    BertForMaskedLM,
    BertForNextSentencePrediction,
    BertForTokenClassification,
    T5ForConditionalGeneration,
)
from transformers.utils import logging

from course import assets
from course.pretrained import BERT_LAYER, from_hf_bert
from scratch.l03_attention import padding_mask
from scratch.l06_gpt import GPT, GPTConfig
from scratch.l06_training import eval_mode
from scratch.l07_bert import BERT
from scratch.l07_lora import add_lora, merge_lora, trainable_state

CHECKPOINT_DIR = assets.ROOT / "data" / "checkpoints"
MERGED_DIR = assets.CACHE_DIR / "checkpoints"  # merged_model_dir's folders, written at first use


UNSAFE_WEIGHT_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt")
MLM_HEADS = ("cls.predictions.",)  # BERT's masked-LM head: dense + GELU + LayerNorm, the decoder tied to the words
NSP_HEADS = ("bert.pooler.", "cls.")  # BERT's next-sentence head: the pooler (dense + tanh on [CLS]) and a 2-way layer


def checkpoint_dir(name: str) -> Path:
    """Folder of a checkpoint the course trained and ships in git (`data/checkpoints/<name>/`).

    Only safetensors are accepted: a pickled weight file (`.bin`, `.pt`, ...) can run code when loaded,
    so a folder holding one is refused, as is a `model.safetensors` that is not a safetensors file.
    Each folder also names, in its README, the recipe (recipes/) and the command that made it.
    """
    folder = CHECKPOINT_DIR / name
    weights = folder / "model.safetensors"
    if not weights.is_file():
        known = sorted(p.name for p in CHECKPOINT_DIR.iterdir() if p.is_dir()) if CHECKPOINT_DIR.is_dir() else []
        raise assets.AssetError(
            f"checkpoint {name!r} not found: {weights} is missing (known: {', '.join(known) or 'none'}). "
            f"Fix: `git checkout -- data/checkpoints/{name}` restores it; "
            f"its README names the recipe that retrains it"
        )
    unsafe = sorted(p.name for p in folder.iterdir() if p.suffix in UNSAFE_WEIGHT_SUFFIXES)
    if unsafe:
        raise assets.AssetError(
            f"checkpoint {name!r} holds pickled weight files {unsafe}, which are refused: "
            "the course loads safetensors only. Fix: delete them"
        )
    _check_safetensors(weights)
    return folder


def _check_safetensors(path: Path) -> None:
    try:
        with safe_open(str(path), framework="pt") as f:
            f.keys()
    except (SafetensorError, OSError, ValueError) as error:
        raise assets.AssetError(
            f"{path} is not a safetensors file ({error}); the course refuses other formats. "
            f"Fix: `git checkout -- {_relative(path)}`"
        ) from None


def _relative(path: Path) -> Path:
    return path.relative_to(assets.ROOT) if path.is_relative_to(assets.ROOT) else path


def load_tiny_t5(name: str = "tiny-t5"):
    """The course's small T5 (data/checkpoints/tiny-t5, trained on course.text_to_text's four tasks; or
    tiny-t5-pretrained, pre-trained by span corruption): (T5ForConditionalGeneration in eval mode, tokenizer)."""
    folder = checkpoint_dir(name)
    model = T5ForConditionalGeneration.from_pretrained(folder, use_safetensors=True).eval()
    return model, AutoTokenizer.from_pretrained(folder)


def recorded_metrics(name: str) -> dict:
    """The metrics.json a recipe wrote beside its checkpoint (data/checkpoints/<name>/metrics.json)."""
    path = CHECKPOINT_DIR / name / "metrics.json"
    if not path.is_file():
        raise assets.AssetError(f"{path} is missing. Fix: `git checkout -- data/checkpoints/{name}`")
    return json.loads(path.read_text())


def load_char_gpt(variant: str, name: str = "char-gpt") -> GPT:
    """Lecture 6's character GPT trained with more compute (recipes/char_gpt.py): the variant 'longer' or 'larger',
    in eval mode."""
    variants = recorded_metrics(name)["variants"]
    if variant not in variants:
        raise ValueError(f"variant must be one of {sorted(variants)}, got {variant!r}")
    weights, metadata = read_checkpoint(checkpoint_dir(f"{name}/{variant}") / "model.safetensors")
    sizes = {key: int(metadata[key]) for key in ("d_model", "h", "N", "d_ff")}
    vocab_size = weights["tok_embed.weight"].shape[0]
    model = GPT(GPTConfig.gpt2(vocab_size=vocab_size, max_len=int(metadata["context"]), **sizes))
    return load_trained(model, weights, f"{name}/{variant}")


# ---------------------------------------------------------------- MiniLM's fine-tunes


@contextmanager
def _heads_newly_initialised():
    """Silence transformers' notice that a head's weights are newly initialised: MiniLM ships no task heads."""
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(verbosity)


def minilm_for(model_class, heads: tuple[str, ...], lora_rank: int | None = 16, lora_alpha: float = 32.0):
    """all-MiniLM-L6-v2 loaded as a transformers BERT model class (BertForMaskedLM, BertForNextSentencePrediction,
    ...), untrained, with what a fine-tune trains marked trainable (requires_grad) and everything else frozen.

    Trainable: the parameters whose names start with one of `heads` (the task head; MiniLM ships no `cls.*`
    weights, so transformers initialises them) and, with lora_rank r, low-rank adapters on every Linear of the
    6 encoder blocks (Q, K, V, attention output, both FFN layers) plus the encoder's biases and LayerNorms.
    """
    with _heads_newly_initialised():
        model = model_class.from_pretrained(assets.minilm_dir())
    for p in model.parameters():
        p.requires_grad_(False)
    if lora_rank is not None:
        add_lora(model.bert.encoder, rank=lora_rank, alpha=lora_alpha)
    for name, p in model.named_parameters():
        in_encoder = lora_rank is not None and name.startswith("bert.encoder.")
        if (
            "lora_" in name
            or (in_encoder and (name.endswith(".bias") or ".LayerNorm." in name))
            or name.startswith(heads)
        ):
            p.requires_grad_(True)
    return model


def read_checkpoint(name_or_file) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """(tensors, metadata) of a course checkpoint (a name under data/checkpoints, or a safetensors file)."""
    path = Path(name_or_file)
    if path.suffix != ".safetensors":
        path = checkpoint_dir(str(name_or_file)) / "model.safetensors"
    with safe_open(str(path), framework="pt") as f:
        return {key: f.get_tensor(key) for key in f.keys()}, f.metadata() or {}  # noqa: SIM118 (not a dict)


def save_trained(model: nn.Module, path: Path, **metadata) -> None:
    """Save what training changed (scratch.l07_lora.trainable_state) as a course checkpoint: a safetensors file whose
    metadata holds the given strings (the base model, the adapters' lora_rank and lora_alpha, the tags, ...)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(trainable_state(model), str(path), metadata={key: str(value) for key, value in metadata.items()})


def load_trained(model: nn.Module, weights: dict[str, torch.Tensor], name: str) -> nn.Module:
    """Load what training changed (trainable_state) into a freshly built model; the rest stays as built."""
    expected = {key for key, p in model.named_parameters() if p.requires_grad}
    if set(weights) != expected:
        missing = sorted(expected - set(weights))
        extra = sorted(set(weights) - expected)
        raise ValueError(
            f"{name}: the checkpoint does not match the model (missing {missing[:3]}, unexpected {extra[:3]})"
        )
    model.load_state_dict({k: v.float() for k, v in weights.items()}, strict=False)
    return model.eval()


def lora_settings(metadata: dict[str, str]) -> dict:
    """{'lora_rank', 'lora_alpha'} from a checkpoint's metadata; None rank when it was trained without adapters."""
    if "lora_rank" not in metadata:
        return {"lora_rank": None}
    return {"lora_rank": int(metadata["lora_rank"]), "lora_alpha": float(metadata["lora_alpha"])}


def load_minilm(model_class, name: str, heads: tuple[str, ...]):
    """MiniLM + a course checkpoint made by minilm_for -> (model in eval mode, tokenizer)."""
    weights, metadata = read_checkpoint(name)
    model = minilm_for(model_class, heads, **lora_settings(metadata))
    return load_trained(model, weights, name), AutoTokenizer.from_pretrained(assets.minilm_dir())


def load_lora_mlm(name: str = "minilm-lora-mlm"):
    """MiniLM + the course's LoRA adapters and MLM head -> (BertForMaskedLM in eval mode, tokenizer)."""
    return load_minilm(BertForMaskedLM, name, MLM_HEADS)


def load_nsp_classifier(name: str = "minilm-nsp"):
    """MiniLM + the course's next-sentence LoRA adapters and head -> (BertForNextSentencePrediction in eval mode,
    tokenizer). Its logits are (IsNext, NotNext), transformers' order."""
    return load_minilm(BertForNextSentencePrediction, name, NSP_HEADS)


@torch.no_grad()
def is_next_probability(model, tokenizer, pairs: list[tuple[str, str]], batch: int = 64) -> torch.Tensor:
    """P(IsNext) for each (A, B) pair, packed as [CLS] A [SEP] B [SEP] with segment ids 0 and 1, from a model
    with BERT's next-sentence head (transformers' BertForNextSentencePrediction: logits (IsNext, NotNext))."""
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


# ---------------------------------------------------------------- the NER tagger: a trained copy of the last block


@torch.no_grad()
def frozen_block_outputs(
    encoder, ids: torch.Tensor, token_type_ids: torch.Tensor | None = None, batch: int = 64
) -> torch.Tensor:
    """The output of all blocks but the last of a scratch.l07_bert.BERT = the last block's input, (n, T, d_model).

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
        self.block = copy.deepcopy(block)
        if lora_rank is not None:  # adapters on its Linears; their pretrained weight matrices stay frozen
            add_lora(self.block, lora_rank, lora_alpha)
            for name, p in self.block.named_parameters():
                p.requires_grad_(not name.endswith(".base.weight"))
        self.pad_id = pad_id
        self.head = nn.Linear(d_model, n_tags)

    def forward(self, h: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.block(h, padding_mask(ids, self.pad_id)))


def minilm_encoder() -> tuple[BERT, object]:
    """all-MiniLM-L6-v2 as the course's BERT (eval mode) and its tokenizer."""
    minilm = AutoModel.from_pretrained(assets.minilm_dir())
    return from_hf_bert(minilm).eval(), AutoTokenizer.from_pretrained(assets.minilm_dir())


def load_ner_tagger(name: str = "minilm-ner"):
    """MiniLM (scratch BERT) + the course's NER tagger -> (encoder, tagger, tokenizer, tags), in eval mode.

    The tagger is a BlockTagger: its own copy of MiniLM's last block, adapted with LoRA (metadata 'lora_rank',
    'lora_alpha'; without them, the whole block fine-tuned), and a linear layer to the tags (metadata 'tags',
    e.g. O B-PER I-PER B-LOC I-LOC); the encoder's blocks below it are MiniLM's, unchanged.
    """
    weights, metadata = read_checkpoint(name)
    if "tags" not in metadata:
        raise ValueError(f"{name}: metadata lacks 'tags'; is this a token-classification checkpoint?")
    tags = metadata["tags"].split()
    encoder, tokenizer = minilm_encoder()
    d_model = encoder.tok_embed.embedding_dim
    tagger = BlockTagger(encoder.blocks[-1], d_model, len(tags), tokenizer.pad_token_id, **lora_settings(metadata))
    return encoder, load_trained(tagger, weights, name), tokenizer, tags


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
        word_tags = ["O"] * len(words)
        previous = None
        for position, word in enumerate(enc.word_ids(row)):
            if word is not None and word != previous:
                word_tags[word] = tags[best[row, position]]
            previous = word
        out.append(word_tags)
    return out


# ---------------------------------------------------------------- MiniLM's fine-tunes as ordinary transformers folders


def merged_model_dir(name: str) -> Path:
    """A MiniLM checkpoint of the course as an ordinary transformers folder (config.json, model.safetensors,
    tokenizer files) under data/cache/checkpoints/, written at first use and again when the checkpoint changes.

    minilm-lora-mlm and minilm-mlm-head become a BertForMaskedLM, minilm-nsp a BertForNextSentencePrediction: the
    LoRA adapters merged into MiniLM's weights (W + (α/r) B A, scratch.l07_lora.merge_lora). minilm-ner becomes a
    BertForTokenClassification: the tagger's block in place of MiniLM's last block, its tag layer as the
    classifier, the tags as config.id2label. Load the folder with AutoModelForMaskedLM,
    AutoModelForNextSentencePrediction or AutoModelForTokenClassification, or give it to pipeline("fill-mask")
    or pipeline("token-classification"); the logits are the course loaders' (load_lora_mlm, load_nsp_classifier,
    load_ner_tagger) up to float rounding.
    """
    weights = checkpoint_dir(name) / "model.safetensors"
    folder = MERGED_DIR / name
    source = assets.sha256_of(weights)
    marker = folder / ".converted-from"
    if marker.is_file() and marker.read_text().strip() == source:
        return folder
    MERGED_DIR.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=MERGED_DIR))  # complete before it takes the name
    try:
        model = _as_transformers_model(name)
        model.save_pretrained(staging, safe_serialization=True)
        AutoTokenizer.from_pretrained(assets.minilm_dir()).save_pretrained(staging)
        (staging / ".converted-from").write_text(source)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(staging, folder)
    except OSError:  # another process wrote the folder at the same moment: keep its copy
        if not (marker.is_file() and marker.read_text().strip() == source):
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _as_transformers_model(name: str) -> nn.Module:
    """The checkpoint as one plain transformers BERT model (no adapters, no scratch modules), in eval mode."""
    weights, metadata = read_checkpoint(name)
    if "tags" in metadata:
        return _ner_as_token_classifier(name)
    if any(key.startswith("cls.seq_relationship.") for key in weights):
        model, _ = load_nsp_classifier(name)
    else:
        model, _ = load_lora_mlm(name)
    return merge_lora(model)


def _ner_as_token_classifier(name: str) -> BertForTokenClassification:
    """load_ner_tagger's tagger as a BertForTokenClassification: MiniLM with its last layer replaced by the
    tagger's block (adapters merged) and the tag layer as the classifier. The same computation: the tagger reads
    the output of MiniLM's first N - 1 blocks, as MiniLM's last layer does."""
    _, tagger, _, tags = load_ner_tagger(name)
    block = merge_lora(tagger.block)
    with _heads_newly_initialised():  # the classifier: overwritten below
        model = BertForTokenClassification.from_pretrained(
            assets.minilm_dir(), id2label=dict(enumerate(tags)), label2id={tag: i for i, tag in enumerate(tags)}
        )
    layer = model.bert.encoder.layer[-1]
    for ours, theirs in BERT_LAYER.items():
        layer.get_submodule(theirs).load_state_dict(block.get_submodule(ours).state_dict())
    model.classifier.load_state_dict(tagger.head.state_dict())
    return model.eval()
