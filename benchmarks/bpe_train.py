"""How fast is scratch's BPE trainer? Against tiktoken's naive one and Hugging Face's Rust one.

    .venv/bin/python benchmarks/bpe_train.py                      # full Moby-Dick, vocab 1,024 and 4,096
    .venv/bin/python benchmarks/bpe_train.py --skip-naive         # the naive trainer takes minutes
    .venv/bin/python benchmarks/bpe_train.py --naive-chars 100000 # naive (and scratch again) on a prefix

All three learn byte-level BPE with GPT-2's pre-tokenizer. The naive trainer recounts every pair of the
whole corpus for every merge; scratch counts once and then updates only the words a merge touches.
Targets: scratch >= 20x faster than naive, and within 5x of Rust. One run each, wall-clock time.
"""

import argparse
import os
import time

from course import corpora
from scratch.l01_tokenization import GPT2_SPLIT_PATTERN, BPETokenizer

TARGET_VS_NAIVE = 20.0  # naive / scratch at least this
TARGET_VS_RUST = 5.0  # scratch / rust at most this


def timed(fn, *args):
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def train_scratch(text, vocab_size):
    BPETokenizer().train(text, vocab_size)


def train_naive(text, vocab_size):
    from tiktoken._educational import bpe_train

    bpe_train(data=text, vocab_size=vocab_size, pat_str=GPT2_SPLIT_PATTERN, visualise=None)


def train_rust(text, vocab_size):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
        special_tokens=[],
    )
    tokenizer.train_from_iterator([text], trainer=trainer)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab-sizes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument(
        "--naive-chars",
        type=int,
        default=None,
        help="train the naive trainer on this many leading characters only (default: all)",
    )
    parser.add_argument("--skip-naive", action="store_true", help="do not run the naive trainer at all")
    args = parser.parse_args()

    text = corpora.moby_dick_text()
    naive_text = text if args.naive_chars is None else text[: args.naive_chars]
    rust_threads = os.environ.get("RAYON_NUM_THREADS") or f"{os.cpu_count()} (RAYON_NUM_THREADS unset: one per CPU)"
    print(f"corpus: Moby-Dick, {len(text):,} characters, {len(text.encode('utf-8')):,} bytes")
    print(f"machine: {os.cpu_count()} CPUs; Rust trainer threads: {rust_threads}; scratch and naive: 1 thread")
    if not args.skip_naive and len(naive_text) < len(text):
        print(
            f"naive trainer runs on the first {len(naive_text):,} characters only; "
            "scratch is timed again on that same prefix so that naive/scratch compares like with like"
        )

    rows = []
    for vocab_size in args.vocab_sizes:
        scratch_s = timed(train_scratch, text, vocab_size)
        rust_s = timed(train_rust, text, vocab_size)
        row = {"vocab": vocab_size, "scratch": scratch_s, "rust": rust_s, "naive": None, "scratch_prefix": None}
        if not args.skip_naive:
            row["naive"] = timed(train_naive, naive_text, vocab_size)
            if len(naive_text) < len(text):
                row["scratch_prefix"] = timed(train_scratch, naive_text, vocab_size)
        rows.append(row)
        print_row(row, header=len(rows) == 1)

    print(f"\ntargets: naive/scratch >= {TARGET_VS_NAIVE:.0f}x, scratch/rust <= {TARGET_VS_RUST:.0f}x")
    for row in rows:
        verdicts = [
            f"scratch/rust {row['scratch'] / row['rust']:.1f}x "
            f"{'OK' if row['scratch'] / row['rust'] <= TARGET_VS_RUST else 'MISSED'}"
        ]
        if row["naive"] is not None:
            ratio = row["naive"] / (row["scratch_prefix"] or row["scratch"])
            verdicts.append(f"naive/scratch {ratio:.1f}x {'OK' if ratio >= TARGET_VS_NAIVE else 'MISSED'}")
        print(f"  vocab {row['vocab']:>6,}: " + ", ".join(verdicts))


def print_row(row, header):
    if header:
        print(
            f"\n{'vocab':>6} {'scratch s':>10} {'rust s':>8} {'scratch/rust':>13} "
            f"{'naive s':>9} {'scratch s (prefix)':>19} {'naive/scratch':>14}"
        )
    naive = "-" if row["naive"] is None else f"{row['naive']:.2f}"
    prefix = "-" if row["scratch_prefix"] is None else f"{row['scratch_prefix']:.2f}"
    speedup = "-" if row["naive"] is None else f"{row['naive'] / (row['scratch_prefix'] or row['scratch']):.1f}x"
    print(
        f"{row['vocab']:>6,} {row['scratch']:>10.2f} {row['rust']:>8.2f} {row['scratch'] / row['rust']:>12.1f}x "
        f"{naive:>9} {prefix:>19} {speedup:>14}",
        flush=True,
    )


if __name__ == "__main__":
    main()
