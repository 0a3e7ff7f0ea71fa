"""spam-transfer (lecture 7, section 7): what pre-training is worth on the spam task, measured fairly.

Three classifiers on the same labelled e-mails (20, 50 or 100, drawn three times: course.corpora.spam_draw with
seeds 0, 1, 2) and the same 200 held-out test e-mails, each reading an e-mail's first 32 WordPiece tokens:

    naive Bayes   the tokens as a bag ([PAD] left out): per class, how often each token occurs (plus one), the
                  share of the class, Bayes' rule
    random        MiniLM's architecture from random weights (from_config), every weight trained. Tuned: the
                  learning rate picked from a grid by accuracy on 200 validation e-mails (100 labelled, draw 0),
                  then trained at each size until it fits its training e-mails (an epoch's mean loss below
                  fit_loss) or max_steps
    pretrained    MiniLM's weights, every weight trained at lecture 7's rate (1e-4) for the lecture's epochs

Each run seeds its weights and batch order with its draw's seed; draw 0 with 100 e-mails is the run lecture 7 trains
live. Only results are written (metrics.json): no model is kept. data/checkpoints/spam-transfer/README.md gives the
command.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from recipes.common import checkpoint_folder, cli, write_json

# isort: split
import torch
from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer
from transformers.utils import logging

from course import assets, corpora

MAX_TOKENS = 32  # WordPiece tokens of an e-mail, as in lecture 7
BATCH = 8


@dataclass
class Config:
    out: Path = checkpoint_folder("spam-transfer")
    sizes: list[int] = field(default_factory=lambda: [20, 50, 100])  # labelled e-mails (a prefix of the draw)
    draws: list[int] = field(default_factory=lambda: [0, 1, 2])  # spam_draw seeds
    pretrained_epochs: list[int] = field(default_factory=lambda: [10, 6, 3])  # per size, as lecture 7 trains
    pretrained_lr: float = 1e-4  # lecture 7's rate
    random_lrs: list[float] = field(default_factory=lambda: [3e-5, 1e-4, 3e-4])  # the random start's grid
    max_steps: int = 300  # the random start trains at most this many steps (whole epochs) ...
    fit_loss: float = 0.05  # ... or until an epoch's mean training loss falls below this
    n_test: int = 200
    threads: int = 1


def encode(tokenizer, emails):
    return tokenizer(
        [corpora.email_text(e) for e in emails],
        truncation=True,
        max_length=MAX_TOKENS,
        padding="max_length",
        return_tensors="pt",
    )


def naive_bayes(train: dict, train_labels: torch.Tensor, test: dict, vocab_size: int) -> torch.Tensor:
    """Multinomial naive Bayes, each e-mail a bag of its tokens ([PAD] left out by the attention mask), add-one
    smoothing: the predicted labels of the test encodings. Lecture 7 writes the same function out."""
    counts = torch.ones(2, vocab_size)  # +1 for every token of both classes, so none has probability 0
    for label in (0, 1):
        rows = train["attention_mask"][train_labels == label].bool()
        counts[label].index_add_(0, train["input_ids"][train_labels == label][rows], torch.ones(int(rows.sum())))
    log_p_token = (counts / counts.sum(dim=1, keepdim=True)).log()  # ln p(token | class), (2, V)
    log_prior = torch.stack([(train_labels == label).float().mean().log() for label in (0, 1)])
    return (log_prior + (log_p_token[:, test["input_ids"]] * test["attention_mask"]).sum(-1).T).argmax(-1)


def classifier(start: str, seed: int):
    torch.manual_seed(seed)
    if start == "pretrained":
        return AutoModelForSequenceClassification.from_pretrained(assets.minilm_dir(), num_labels=2)
    config = AutoConfig.from_pretrained(assets.minilm_dir(), num_labels=2)
    return AutoModelForSequenceClassification.from_config(config)


def fine_tune(model, encodings, labels, lr: float, epochs: int, seed: int, fit_loss: float | None = None) -> list:
    """Lecture 7's loop (batches of 8, AdamW fused); the mean training loss of each epoch. Stops early once an
    epoch's mean loss is below fit_loss."""
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)
    model.train()
    epoch_losses = []
    for _ in range(epochs):
        losses = []
        for batch in torch.randperm(len(labels)).split(BATCH):
            loss = model(**{k: v[batch] for k, v in encodings.items()}, labels=labels[batch]).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        epoch_losses.append(sum(losses) / len(losses))
        if fit_loss is not None and epoch_losses[-1] < fit_loss:
            break
    model.eval()
    return epoch_losses


@torch.no_grad()
def predict(model, encodings) -> torch.Tensor:
    return torch.cat(
        [
            model(**{k: v[i : i + 50] for k, v in encodings.items()}).logits.argmax(-1)
            for i in range(0, len(encodings["input_ids"]), 50)
        ]
    )


def scores(predicted: torch.Tensor, labels: torch.Tensor) -> dict:
    return {
        "accuracy": round((predicted == labels).float().mean().item(), 4),
        "spam_caught": int(predicted[labels == 1].sum()),
        "ham_flagged": int(predicted[labels == 0].sum()),
    }


def epochs_within(steps: int, size: int) -> int:
    """The whole epochs of batches of BATCH that fit in `steps` optimizer steps (at least one)."""
    return max(1, steps // math.ceil(size / BATCH))


def run(start, lr, epochs, seed, train_x, train_y, test_x, test_y, fit_loss=None, valid=None) -> dict:
    began = time.time()
    model = classifier(start, seed)
    losses = fine_tune(model, train_x, train_y, lr, epochs, seed, fit_loss)
    result = {
        "lr": lr,
        "epochs": len(losses),
        "steps": len(losses) * math.ceil(len(train_y) / BATCH),
        "final_train_loss": round(losses[-1], 4),
        "train_accuracy": scores(predict(model, train_x), train_y)["accuracy"],
    } | scores(predict(model, test_x), test_y)
    if valid is not None:
        result["valid_accuracy"] = scores(predict(model, valid[0]), valid[1])["accuracy"]
    result["wall_s"] = round(time.time() - began, 1)
    print(start, result, flush=True)
    return result


def main(config: Config) -> dict:
    logging.set_verbosity_error()
    tokenizer = AutoTokenizer.from_pretrained(assets.minilm_dir())
    largest = max(config.sizes)
    metrics = {"sizes": config.sizes, "draws": config.draws, "max_tokens": MAX_TOKENS, "runs": []}
    out = config.out / "metrics.json"

    def data(draw):
        train, valid, test = corpora.spam_draw(draw, n_train=largest, n_test=config.n_test)
        labels = [torch.tensor([e["label"] for e in emails]) for emails in (train, valid, test)]
        return [(encode(tokenizer, emails), y) for emails, y in zip((train, valid, test), labels)]

    # 1. the random start's learning rate, by validation accuracy (largest size, first draw)
    (train_x, train_y), valid, (test_x, test_y) = data(config.draws[0])
    tuning = {
        lr: run(
            "random",
            lr,
            epochs_within(config.max_steps, largest),
            config.draws[0],
            train_x,
            train_y,
            test_x,
            test_y,
            config.fit_loss,
            valid,
        )
        for lr in config.random_lrs
    }
    best_lr = max(config.random_lrs, key=lambda lr: (tuning[lr]["valid_accuracy"], -tuning[lr]["final_train_loss"]))
    metrics["random_lr_grid"] = [{"lr": lr} | result for lr, result in tuning.items()]
    metrics["random_lr"] = best_lr
    write_json(out, metrics)

    # 2. every size and draw
    for draw in config.draws:
        (train_x, train_y), _, (test_x, test_y) = data(draw)
        for size, epochs in zip(config.sizes, config.pretrained_epochs):
            x, y = {k: v[:size] for k, v in train_x.items()}, train_y[:size]
            row = {"draw": draw, "size": size, "spam": int(y.sum())}
            row["naive_bayes"] = scores(naive_bayes(x, y, test_x, len(tokenizer)), test_y)
            row["pretrained"] = run("pretrained", config.pretrained_lr, epochs, draw, x, y, test_x, test_y)
            if draw == config.draws[0] and size == largest:
                row["random"] = tuning[best_lr]
            else:
                row["random"] = run(
                    "random",
                    best_lr,
                    epochs_within(config.max_steps, size),
                    draw,
                    x,
                    y,
                    test_x,
                    test_y,
                    config.fit_loss,
                )
            metrics["runs"].append(row)
            write_json(out, metrics)
    return metrics


if __name__ == "__main__":
    cli(main, Config, __doc__)
