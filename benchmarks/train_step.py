"""How fast does scratch's Transformer train? Against torch.nn.Transformer with the same configuration.

    .venv/bin/python benchmarks/train_step.py                  # d_model 256, h 4, N 2 + 2, batch 32, length 32
    .venv/bin/python benchmarks/train_step.py --steps 50 --device cuda

Both models get the same embeddings, sinusoidal positions, tied output layer, masks (source and target
padding, causal target) and AdamW; only the encoder and decoder stacks differ: scratch.l05_transformer_block (built on
scratch.l04_multi_head_attention) versus torch.nn.TransformerEncoderLayer / DecoderLayer. torch.nn.Transformer's two
final LayerNorms are removed so that both compute the same post-LN architecture.
One training step = forward, cross-entropy, backward, AdamW step. Warm-up steps first, then timed steps,
one run each. Throughput = (source + target tokens) per second. Target: scratch >= 0.9x torch.
"""

import argparse
import math
import os
import time

import torch
from torch import nn
from torch.nn import functional as F

from scratch.l02_positions import SinusoidalPositionalEncoding
from scratch.l06_transformer import Transformer

TARGET = 0.9
PAD = 0


class TorchTransformer(nn.Module):
    """torch.nn.Transformer between the same embeddings and tied output layer as scratch's model."""

    def __init__(self, vocab_size, d_model, h, N, d_ff, dropout, max_len):
        super().__init__()
        self.d_model = d_model
        self.src_embed = nn.Embedding(vocab_size, d_model)
        self.tgt_embed = nn.Embedding(vocab_size, d_model)
        self.pos = SinusoidalPositionalEncoding(d_model, max_len, dropout)
        self.core = nn.Transformer(d_model, h, N, N, d_ff, dropout, batch_first=True)
        self.core.encoder.norm = self.core.decoder.norm = None  # the paper's post-LN has no final norms
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.tgt_embed.weight

    def forward(self, src, tgt):
        scale = math.sqrt(self.d_model)
        src_x, tgt_x = self.pos(self.src_embed(src) * scale), self.pos(self.tgt_embed(tgt) * scale)
        causal = torch.ones(tgt.shape[1], tgt.shape[1], dtype=torch.bool, device=tgt.device).triu(1)  # True = hidden
        out = self.core(
            src_x,
            tgt_x,
            tgt_mask=causal,
            src_key_padding_mask=src == PAD,
            memory_key_padding_mask=src == PAD,
            tgt_key_padding_mask=tgt == PAD,
        )
        return self.lm_head(out)


def make_batches(n, batch, length, vocab_size, device, seed=0):
    """n batches (src, tgt_in, tgt_out) of random tokens, each sequence right-padded to `length`."""
    g = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(n):
        ids = torch.randint(3, vocab_size, (batch, 2, length + 1), generator=g)
        lengths = torch.randint(length // 2, length + 1, (batch, 2, 1), generator=g)
        ids = ids.masked_fill(torch.arange(length + 1) >= lengths + 1, PAD)  # padding after each length
        src, tgt = ids[:, 0, :length], ids[:, 1]
        tgt[:, 0] = 1  # BOS
        batches.append(tuple(t.to(device) for t in (src, tgt[:, :-1], tgt[:, 1:])))
    return batches


def step(model, optimizer, batch):
    src, tgt_in, tgt_out = batch
    logits = model(src, tgt_in)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), ignore_index=PAD)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return loss


def tokens_per_second(model, batches, warmup, device):
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for batch in batches[:warmup]:
        step(model, optimizer, batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for batch in batches[warmup:]:
        step(model, optimizer, batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    tokens = sum(b[0].numel() + b[1].numel() for b in batches[warmup:])
    return tokens / seconds, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--layers", type=int, default=2, help="N encoder and N decoder blocks")
    parser.add_argument("--d-ff", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=32, help="source and target length")
    parser.add_argument("--vocab", type=int, default=1000)
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()

    device = torch.device(args.device)
    torch.manual_seed(0)
    config = dict(d_model=args.d_model, h=args.heads, N=args.layers, d_ff=args.d_ff, dropout=args.dropout)
    ours = Transformer(args.vocab, args.vocab, max_len=args.length + 1, **config).to(device)
    theirs = TorchTransformer(args.vocab, max_len=args.length + 1, **config).to(device)
    n_ours = sum(p.numel() for p in ours.parameters())
    n_theirs = sum(p.numel() for p in theirs.parameters())
    assert n_ours == n_theirs, (n_ours, n_theirs)
    batches = make_batches(args.warmup + args.steps, args.batch, args.length, args.vocab, device)

    print(
        f"config: {config}, batch {args.batch}, source/target length {args.length}, vocab {args.vocab}, "
        f"{n_ours:,} parameters each"
    )
    print(
        f"device: {device}; torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"{os.cpu_count()} CPUs; {args.warmup} warm-up + {args.steps} timed steps, one run each"
    )
    results = {}
    for name, model in (("torch.nn.Transformer", theirs), ("scratch Transformer", ours)):
        results[name], seconds = tokens_per_second(model, batches, args.warmup, device)
        print(f"{name:22s} {results[name]:12,.0f} tokens/s   ({seconds / args.steps * 1000:.1f} ms per step)")
    ratio = results["scratch Transformer"] / results["torch.nn.Transformer"]
    print(f"scratch / torch = {ratio:.2f}x (target >= {TARGET}x): {'OK' if ratio >= TARGET else 'BELOW TARGET'}")


if __name__ == "__main__":
    main()
