"""Train the course's tiny T5 (lecture 9): one encoder-decoder, four text-to-text tasks chosen by a prefix.

    translate English to German: twenty-three      -> dreiundzwanzig
    translate German to English: dreiundzwanzig    -> twenty-three
    reverse: k d a x                               -> x a d k
    sort: 42 7 19                                  -> 7 19 42

The data comes from the course's own code (`scratch.tasks.text_to_text_example`); held-out inputs are fixed
by a hash and never trained on. Steps:

1. a Unigram tokenizer (the SentencePiece algorithm T5 uses, trained with the sentencepiece library: "▁" marks a
   word start) is learned from generated task sentences and Moby-Dick's training chapters, digits split, and
   wrapped as transformers' T5Tokenizer (<pad> = 0, </s> = 1, <unk> = 2);
2. a small T5ForConditionalGeneration (T5Config, relative position buckets, no absolute positions) is
   trained from scratch with AdamW on freshly drawn mixed-task batches (teacher forcing, cross-entropy);
3. greedy exact match per task is measured on held-out inputs and written to metrics.json with the
   weights (model.safetensors), config, generation config and tokenizer files.

Commands that made the shipped checkpoint (CPU, one thread, MKL's fast path as set below, on a shared 2-core
machine), three stages of 2,500 steps: at a peak learning rate of 2e-3, then from that checkpoint at 1e-3, then at
5e-4 (after the first stage "reverse" and "sort" were below 95 %; after the second, "sort" still was, at 94.6 %;
metrics.json adds up the steps, time and history of the stages):

    .venv/bin/python data/checkpoints/tiny-t5/train.py --out /tmp/tiny-t5-stage1
    .venv/bin/python data/checkpoints/tiny-t5/train.py --init-from /tmp/tiny-t5-stage1 --lr 1e-3 --warmup 100 \\
        --out /tmp/tiny-t5-stage2
    .venv/bin/python data/checkpoints/tiny-t5/train.py --init-from /tmp/tiny-t5-stage2 --lr 5e-4 --warmup 100

(Every stage draws its training pairs with the same seed, so later stages see the first stage's stream of pairs
again.) The previous checkpoint used a 400-piece tokenizer learned with the `tokenizers` library from the task
sentences alone: it cut `translate` into letters (the Unigram algorithm, in both libraries, kept it whole only once
general text was added), and two stages were enough for it. `--device cuda` trains on a GPU; the shipped checkpoint
did not use one.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import time
from pathlib import Path

os.environ.setdefault("MKL_CBWR", "AUTO")  # training speed: MKL's fast path, not the lectures' pinned one
import scratch  # noqa: E402, F401  (before torch: the offline environment and the rest of the numeric path)

# isort: split
import torch  # noqa: E402

from scratch.tasks import TEXT_TO_TEXT_TASKS, text_to_text_accuracy, text_to_text_dataset  # noqa: E402
from scratch.tasks import text_to_text_example  # noqa: E402

HERE = Path(__file__).resolve().parent


def train_tokenizer(vocab_size: int, seed: int, max_number: int):
    """A Unigram vocabulary, learned by SentencePiece (T5's own tool), as a T5Tokenizer.

    The text: 20,000 generated (source, target) pairs and the sentences of Moby-Dick's training chapters (T5 learned
    its vocabulary from general text, C4, before any task; the task text alone is too small and repetitive for the
    Unigram algorithm to keep even `translate` whole). Digits are always single pieces (split_digits), so a number
    is spelled digit by digit, as in the course's earlier tokenizer.
    """
    import io
    import re

    import sentencepiece as spm
    from transformers import T5Tokenizer

    from scratch import assets
    from scratch.mlm import heldout_chapters

    rng = random.Random(seed)
    corpus = []
    for _ in range(5000):
        for task in TEXT_TO_TEXT_TASKS:
            corpus += text_to_text_example(task, rng, "train", max_number)
    train_chapters, _ = heldout_chapters(assets.moby_dick_chapters())
    for chapter in train_chapters:
        corpus += [s for s in re.split(r"(?<=[.!?])\s+", " ".join(chapter["text"].split())) if s]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=model, vocab_size=vocab_size, model_type="unigram",
        character_coverage=1.0, split_digits=True, pad_id=0, eos_id=1, unk_id=2, bos_id=-1, num_threads=1,
        minloglevel=2)
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    vocab = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    t5_tokenizer = T5Tokenizer(vocab=vocab, extra_ids=0)
    assert (t5_tokenizer.pad_token_id, t5_tokenizer.eos_token_id, t5_tokenizer.unk_token_id) == (0, 1, 2)
    for text in corpus[:2000:7]:  # the wrapped tokenizer splits as SentencePiece does
        assert t5_tokenizer.tokenize(text) == sp.encode(text, out_type=str), text
    return t5_tokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--steps", type=int, default=2500)
    parser.add_argument("--batch-size", type=int, default=64, help="pairs per step, spread over the tasks")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--vocab-size", type=int, default=1000)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--d-ff", type=int, default=512)
    parser.add_argument("--layers", type=int, default=3, help="encoder layers = decoder layers")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--n-eval", type=int, default=1000, help="held-out inputs per task, final evaluation")
    parser.add_argument("--max-number", type=int, default=99_999, help="translate numbers 0..max-number")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--init-from", type=Path, default=None,
                        help="continue training the model and tokenizer in this folder instead of starting afresh")
    args = parser.parse_args()

    from transformers import GenerationConfig, T5Config, T5ForConditionalGeneration

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    start = time.time()
    if args.init_from:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.init_from)
    else:
        tokenizer = train_tokenizer(args.vocab_size, args.seed, args.max_number)
    print(f"tokenizer: {len(tokenizer)} pieces ({time.time() - start:.1f} s)", flush=True)

    config = T5Config(vocab_size=len(tokenizer), d_model=args.d_model, d_kv=args.d_model // args.heads,
                      d_ff=args.d_ff, num_layers=args.layers, num_decoder_layers=args.layers,
                      num_heads=args.heads, relative_attention_num_buckets=32, relative_attention_max_distance=128,
                      dropout_rate=0.0, feed_forward_proj="relu", tie_word_embeddings=True,
                      pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    if args.init_from:
        model = T5ForConditionalGeneration.from_pretrained(args.init_from, use_safetensors=True).to(args.device)
        config = model.config
    else:
        model = T5ForConditionalGeneration(config).to(args.device)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params:,} parameters", flush=True)

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min((s + 1) / args.warmup, 1.0) * 0.5 * (
        1 + math.cos(math.pi * min(s / args.steps, 1.0))))
    previous = {}  # when continuing: the earlier stages' metrics, so steps and time add up
    if args.init_from and (args.init_from / "metrics.json").is_file():
        previous = json.loads((args.init_from / "metrics.json").read_text())
    steps_before = previous.get("steps", 0)
    quick_eval = text_to_text_dataset(100, "val", seed=args.seed + 1, max_number=args.max_number)
    per_task = args.batch_size // len(TEXT_TO_TEXT_TASKS)
    history = []
    train_start = time.time()
    for step in range(1, args.steps + 1):
        model.train()
        pairs = [text_to_text_example(task, rng, "train", args.max_number)
                 for task in TEXT_TO_TEXT_TASKS for _ in range(per_task)]
        batch = tokenizer([s for s, _ in pairs], text_target=[t for _, t in pairs], return_tensors="pt",
                          padding=True)
        batch["labels"][batch["labels"] == tokenizer.pad_token_id] = -100  # no loss on padding
        loss = model(**{k: v.to(args.device) for k, v in batch.items()}).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        if step % 50 == 0:
            print(f"step {step:5d}  loss {loss.item():.4f}  {step / (time.time() - train_start):.2f} steps/s",
                  flush=True)
        if step % args.eval_every == 0 or step == args.steps:
            model.eval()
            accuracy = text_to_text_accuracy(model.cpu(), tokenizer, quick_eval)
            model.to(args.device)
            history.append({"step": steps_before + step, "loss": round(loss.item(), 4),
                            **{task: round(a, 4) for task, a in accuracy.items()}})
            print("   held-out exact match:", {t: f"{a:.3f}" for t, a in accuracy.items()}, flush=True)
    train_seconds = time.time() - train_start

    model = model.cpu().eval()
    final_eval = text_to_text_dataset(args.n_eval, "val", seed=args.seed + 2, max_number=args.max_number)
    accuracy = text_to_text_accuracy(model, tokenizer, final_eval)
    print("final held-out exact match:", {t: f"{a:.4f}" for t, a in accuracy.items()}, flush=True)

    args.out.mkdir(parents=True, exist_ok=True)
    model.generation_config = GenerationConfig(decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
                                               do_sample=False, num_beams=1, max_new_tokens=48)
    model.save_pretrained(args.out, safe_serialization=True)
    tokenizer.save_pretrained(args.out)
    size = (args.out / "model.safetensors").stat().st_size
    metrics = {
        "exact_match": {task: round(a, 4) for task, a in accuracy.items()},
        "eval": f"greedy decoding, {args.n_eval} held-out inputs per task "
                f"(scratch.tasks.text_to_text_dataset({args.n_eval}, 'val', seed={args.seed + 2}, "
                f"max_number={args.max_number}))",
        "max_number": args.max_number,
        "parameters": n_params, "model_safetensors_bytes": size, "vocab_size": len(tokenizer),
        "steps": steps_before + args.steps, "batch_size": args.batch_size,
        "pairs_seen": previous.get("pairs_seen", 0) + args.steps * per_task * len(TEXT_TO_TEXT_TASKS),
        "train_seconds": round(previous.get("train_seconds", 0) + train_seconds, 1), "device": args.device,
        "threads": args.threads, "mkl_cbwr": os.environ["MKL_CBWR"], "torch": torch.__version__,
        "stages": previous.get("stages", [previous["args"]] if "args" in previous else []) + [
            {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "out"}],
        "history": previous.get("history", []) + history,
    }
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out} ({size / 1e6:.1f} MB weights), {train_seconds / 60:.1f} min of training", flush=True)


if __name__ == "__main__":
    main()
