"""spam-lora (lecture 7, section 7): lecture 7's LoRA fine-tune of MiniLM on the spam task, through Trainer, over
three label draws.

Lecture 7 fine-tunes MiniLM on 100 labelled e-mails twice: every weight with a plain loop (its spread over draws is
in data/checkpoints/spam-transfer), and with `peft` LoRA through `transformers.Trainer`: rank 8 (alpha 16) on the
query and value projections of all 6 layers, the new classification head trained in full; batches of 8, AdamW at
3e-3 with a linear schedule (warm-up over the first tenth), 5 epochs, the validation accuracy (100 further labelled
e-mails) measured after each epoch and the best epoch's weights kept. This recipe runs that fine-tune on draws 0, 1
and 2 (course.corpora.spam_draw; the seed also seeds the head, the adapters and the batches) and records, per draw,
the test accuracy on the 200 held-out e-mails, the validation accuracy of each epoch, the best epoch and the number of
trained parameters. Draw 0 is the run lecture 7 trains live.

Only results are written (metrics.json): no model is kept. data/checkpoints/spam-lora/README.md gives the command.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from recipes.common import checkpoint_folder, cli, write_json

# isort: split
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForSequenceClassification, AutoTokenizer, PrinterCallback, Trainer, TrainingArguments
from transformers.utils import logging

from course import assets, corpora

MAX_TOKENS = 32  # WordPiece tokens of an e-mail, as in lecture 7


@dataclass
class Config:
    out: Path = checkpoint_folder("spam-lora")
    draws: list[int] = field(default_factory=lambda: [0, 1, 2])  # spam_draw seeds
    n_train: int = 100
    n_valid: int = 100
    epochs: int = 5
    lr: float = 3e-3
    rank: int = 8
    threads: int = 1


def rows(tokenizer, emails) -> list[dict]:
    """One dict per e-mail: its 32 token ids, mask and segment ids, and its label (what Trainer batches)."""
    enc = tokenizer(
        [corpora.email_text(e) for e in emails], truncation=True, max_length=MAX_TOKENS, padding="max_length"
    )
    return [{**{key: values[i] for key, values in enc.items()}, "labels": e["label"]} for i, e in enumerate(emails)]


def accuracy_metric(prediction) -> dict:
    return {"accuracy": float((prediction.predictions.argmax(-1) == prediction.label_ids).mean())}


def lora_classifier(config: Config, seed: int):
    torch.manual_seed(seed)  # the new head's weights and LoRA's A matrices
    model = AutoModelForSequenceClassification.from_pretrained(assets.minilm_dir(), num_labels=2)
    lora = LoraConfig(r=config.rank, lora_alpha=2 * config.rank, target_modules=["query", "value"], task_type="SEQ_CLS")
    return get_peft_model(model, lora)


def main(config: Config) -> dict:
    logging.set_verbosity_error()
    tokenizer = AutoTokenizer.from_pretrained(assets.minilm_dir())
    metrics = {"config": {k: v for k, v in vars(config).items() if k not in ("out", "threads")}, "runs": []}
    for draw in config.draws:
        begin = time.perf_counter()
        train, valid, test = corpora.spam_draw(draw, n_train=config.n_train, n_valid=config.n_valid)
        model = lora_classifier(config, draw)
        with tempfile.TemporaryDirectory() as folder:
            args = TrainingArguments(
                output_dir=folder,
                num_train_epochs=config.epochs,
                learning_rate=config.lr,
                per_device_train_batch_size=8,
                lr_scheduler_type="linear",
                warmup_steps=0.1,
                eval_strategy="epoch",
                save_strategy="epoch",
                load_best_model_at_end=True,
                metric_for_best_model="accuracy",
                seed=draw,
                report_to="none",
                disable_tqdm=True,
                use_cpu=True,
            )
            trainer = Trainer(
                model=model,
                args=args,
                train_dataset=rows(tokenizer, train),
                eval_dataset=rows(tokenizer, valid),
                compute_metrics=accuracy_metric,
            )
            trainer.remove_callback(PrinterCallback)
            trainer.train()
        test_rows = rows(tokenizer, test)
        batch = {key: torch.tensor([row[key] for row in test_rows]) for key in test_rows[0] if key != "labels"}
        model.eval()  # Trainer leaves the model in train mode: dropout on
        with torch.no_grad():
            predicted = model(**batch).logits.argmax(-1)
        labels = torch.tensor([row["labels"] for row in test_rows])
        metrics["runs"].append(
            {
                "draw": draw,
                "test_accuracy": round(float((predicted == labels).float().mean()), 4),
                "valid_accuracy": [h["eval_accuracy"] for h in trainer.state.log_history if "eval_accuracy" in h],
                "best_valid_accuracy": trainer.state.best_metric,
                "trained_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
                "wall_s": round(time.perf_counter() - begin, 1),
            }
        )
        write_json(config.out / "metrics.json", metrics)
    return metrics


if __name__ == "__main__":
    cli(main, Config, __doc__)
