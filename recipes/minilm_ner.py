"""minilm-ner (lecture 7): a person/place tagger, all-MiniLM-L6-v2 fine-tuned for token classification.

Task: tag the persons (PER) and places (LOC) of the novels in BIO form (B-X begins an entity, I-X continues it,
O is outside). No registry ships an English NER data set with a licence the course can use, so the labels are made
by a rule that is written down: data/checkpoints/minilm-ner/entities.json lists the names (written by hand; its
"how" field says how), and course.bert_tasks.gazetteer_tags marks every occurrence in the original, cased text.

Model: lecture 7's spam recipe applied to every token: MiniLM's first five blocks frozen (their outputs computed
once), the last block fine-tuned (--lora-rank r: adapted with rank-r LoRA instead), and a linear layer from each
token's vector to the 5 tags (course.checkpoints.BlockTagger). Each word is labelled on its first WordPiece; its
other pieces are not scored (scratch.l07_masking.label_first_pieces). MiniLM is uncased: it never sees the capitals
that the labels were made from.

Text: sentences from Moby-Dick (chapters other than 10, 20, ..., 130) and, where apt-get exists, as many from five
of Austen's novels; test: every sentence of Moby-Dick's held-out chapters and, where apt-get exists, 1,000 of
*Persuasion*, whose characters the training text never names. Scores: exact-match spans, precision / recall / F1
per type, against looking up the names seen in training and calling every capitalised word inside a sentence a
person. data/checkpoints/minilm-ner/README.md gives the command that made the shipped checkpoint.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from recipes.common import MINILM, checkpoint_folder, cli, write_json

# isort: split
import torch
import torch.nn.functional as F

from course import assets, corpora
from course.bert_tasks import gazetteer_tags
from course.checkpoints import BlockTagger, frozen_block_outputs, minilm_encoder, save_trained, tag_words
from course.metrics import bio_spans, span_scores
from scratch.l06_training import Run
from scratch.l07_masking import IGNORE_INDEX, label_first_pieces

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
MAX_TOKENS = 96
QUICK_SAMPLE = 300  # the first held-out Moby-Dick sentences, re-scored by tests/test_bert.py


@dataclass
class Config:
    out: Path = checkpoint_folder("minilm-ner")
    entities: Path = checkpoint_folder("minilm-ner") / "entities.json"
    train_with_entities: int = 900  # training sentences that name someone or somewhere
    train_without: int = 300  # training sentences with no entity
    austen: bool = True  # train on five of Austen's novels and test on Persuasion, where apt-get can fetch them
    test_sentences: int | None = None  # score only the first test sentences of each text (None: all)
    epochs: int = 3
    lora_rank: int = 0  # 0 (the shipped checkpoint): fine-tune the whole last block; r > 0: LoRA of rank r
    lora_alpha: float = 32.0
    lr: float | None = None  # of the block (default 1e-3 with LoRA, 1e-4 for the whole block); the head's is 1e-3
    seed: int = 0
    threads: int = 1


def labelled_sentences(texts: list[str], names) -> list[tuple[list[str], list[str]]]:
    """(words, tags) per sentence of 3 to 60 words."""
    out = []
    for text in texts:
        for sentence in corpora.split_sentences(text):
            words = corpora.split_words(sentence)
            if 3 <= len(words) <= 60:
                out.append((words, gazetteer_tags(words, names)))
    return out


def capitalised_baseline(words: list[str]) -> set:
    """Every run of capitalised words that does not start the sentence (and is not 'I') is a person."""
    tags = ["B-PER" if i > 0 and w[:1].isupper() and w.isalpha() and w != "I" else "O" for i, w in enumerate(words)]
    tags = [("I-PER" if t == "B-PER" and i > 0 and tags[i - 1] != "O" else t) for i, t in enumerate(tags)]
    return bio_spans(tags)


def rounded(scores: dict) -> dict:
    return {k: {m: (round(v, 4) if isinstance(v, float) else v) for m, v in s.items()} for k, s in scores.items()}


def main(config: Config) -> dict:
    names = {kind: json.loads(config.entities.read_text())[kind] for kind in ("PER", "LOC")}
    encoder, tokenizer = minilm_encoder()
    train_md, held_md = corpora.heldout_chapters(corpora.moby_dick_chapters())
    tests = {"moby_dick": labelled_sentences([c["text"] for c in held_md], names)}
    sources = [[c["text"] for c in train_md]]
    rng = random.Random(config.seed)
    if config.austen and assets.apt_available():
        austen = corpora.austen_chapters()
        sources.append([c["text"] for c in austen if c["book"] != "persuasion"])
        persuasion = labelled_sentences([c["text"] for c in austen if c["book"] == "persuasion"], names)
        tests["persuasion"] = rng.sample(persuasion, 1000)
    tests = {name: sentences[: config.test_sentences] for name, sentences in tests.items()}
    train = []
    for texts in sources:  # the same number of sentences from each author
        pool = labelled_sentences(texts, names)
        train += rng.sample(
            [s for s in pool if any(t != "O" for t in s[1])], config.train_with_entities // len(sources)
        )
        train += rng.sample([s for s in pool if all(t == "O" for t in s[1])], config.train_without // len(sources))
    enc = tokenizer(
        [w for w, _ in train],
        is_split_into_words=True,
        truncation=True,
        max_length=MAX_TOKENS,
        padding=True,
        return_tensors="pt",
    )
    labels = [label_first_pieces(enc.word_ids(i), [TAGS.index(t) for t in tags]) for i, (_, tags) in enumerate(train)]
    ids_train, labels_train = enc.input_ids, torch.tensor(labels)
    h_train = frozen_block_outputs(encoder, ids_train)  # the five frozen blocks, run once

    torch.manual_seed(config.seed)
    lora_rank = config.lora_rank or None
    block_lr = config.lr or (1e-3 if lora_rank else 1e-4)
    tagger = BlockTagger(
        encoder.blocks[-1],
        encoder.tok_embed.embedding_dim,
        len(TAGS),
        tokenizer.pad_token_id,
        lora_rank,
        config.lora_alpha,
    )
    block_params = [p for p in tagger.block.parameters() if p.requires_grad]
    groups = [{"params": block_params, "lr": block_lr}, {"params": tagger.head.parameters(), "lr": 1e-3}]
    optimizer = torch.optim.AdamW(groups, weight_decay=0.01)

    def epochs():
        for _ in range(config.epochs):
            order = torch.randperm(len(ids_train))
            for i in range(0, len(order), 16):
                rows = order[i : i + 16]
                longest = int((ids_train[rows] != tokenizer.pad_token_id).sum(1).max())  # cut the batch's padding
                yield [tuple(t[rows][:, :longest] for t in (ids_train, h_train, labels_train))]

    def token_loss(tagger, batch) -> torch.Tensor:
        ids, h, labels = batch
        return F.cross_entropy(tagger(h, ids).flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX)

    batches = epochs()
    run = Run(tagger, optimizer, config.epochs * -(-len(train) // 16), grad_clip=None, loss_fn=token_loss)
    run.train(lambda: next(batches), label="tagger")

    seen = {kind: {" ".join(w[s:e]) for w, tags in train for k, s, e in bio_spans(tags) if k == kind} for kind in names}
    results = {}
    for name, sentences in tests.items():
        words = [w for w, _ in sentences]
        predicted = [
            bio_spans(tags)
            for i in range(0, len(words), 64)
            for tags in tag_words(encoder, tagger, tokenizer, TAGS, words[i : i + 64], MAX_TOKENS)
        ]
        gold = [bio_spans(tags) for _, tags in sentences]
        lookup = [bio_spans(gazetteer_tags(w, {k: sorted(v) for k, v in seen.items()})) for w in words]
        gold_names = {" ".join(w[s:e]) for w, spans in zip(words, gold) for _, s, e in spans}
        results[name] = {
            "sentences": len(sentences),
            "model": rounded(span_scores(gold, predicted)),
            "baseline_training_names": rounded(span_scores(gold, lookup)),
            "baseline_capitalised_is_person": rounded(span_scores(gold, [capitalised_baseline(w) for w in words])),
            "distinct_gold_names": len(gold_names),
            "gold_names_unseen_in_training": len(gold_names - seen["PER"] - seen["LOC"]),
        }
        if name == "moby_dick":
            results[name]["quick_sample"] = rounded(span_scores(gold[:QUICK_SAMPLE], predicted[:QUICK_SAMPLE]))
            results[name]["quick_sample_sentences"] = len(sentences[:QUICK_SAMPLE])

    metadata = {"base": MINILM, "made_by": __spec__.name, "tags": " ".join(TAGS)}
    if lora_rank:
        metadata |= {"lora_rank": lora_rank, "lora_alpha": config.lora_alpha}
    save_trained(tagger, config.out / "model.safetensors", **metadata)
    metrics = {
        "tags": TAGS,
        "labels": "entities.json (names written by hand) matched on the cased text",
        "scoring": "exact-match entity spans; precision, recall, F1 per type and over all ('all')",
        "results": results,
        "training": {
            "sentences": len(train),
            "with_entities": config.train_with_entities,
            "without_entities": config.train_without,
            "epochs": config.epochs,
            "batch": 16,
            "lr": {"last block": block_lr, "head": 1e-3},
            "last_block": f"LoRA rank {lora_rank}, alpha {config.lora_alpha}, on its 6 Linears; biases and "
            "LayerNorms trained"
            if lora_rank
            else "fine-tuned whole",
            "corpora": ["Moby-Dick"] + (["Jane Austen: five novels (not Persuasion)"] if len(sources) > 1 else []),
            "trainable_params": sum(p.numel() for p in tagger.parameters() if p.requires_grad),
            "threads": config.threads,
            "seed": config.seed,
            "train_s": round(run.seconds),
        },
        "evaluation": {
            "moby_dick": "every 3-60-word sentence of chapters 10, 20, ..., 130",
            "persuasion": "1,000 random 3-60-word sentences (seed 0)",
            "max_tokens": MAX_TOKENS,
            "quick_sample_sentences": QUICK_SAMPLE,
        },
    }
    write_json(config.out / "metrics.json", metrics)
    return metrics


if __name__ == "__main__":
    result = cli(main, Config, __doc__)
    print({name: r["model"]["all"] for name, r in result["results"].items()})
