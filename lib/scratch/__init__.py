"""Transformers from Scratch: the course's own package, one module per idea, in lecture order.

    tokenization   characters, words and byte-level BPE (lecture 1)
    embeddings     sinusoidal, learned, relative and rotary positions (lecture 2)
    attention      scaled dot-product attention, masks, multi-head attention (lectures 3-4)
    blocks         LayerNorm, feed-forward, encoder and decoder blocks (lecture 5)
    models         Transformer (encoder-decoder), GPT (decoder-only), Encoder (BERT) (lectures 6-9)
    mlm            masked-LM pre-training: the 80/10/10 masking rule, fill-mask accuracy, MiniLM + MLM head (lecture 7)
    span_corruption  T5's pre-training objective: noise spans -> sentinels; the shifted decoder input (lecture 9)
    training       the training loop every lecture that trains uses
    sampling       greedy, beam search, top-k, top-p, temperature; KV-cached generation (lecture 10)
    tasks          toy data: numbers English -> German, characters of Moby-Dick; T5's text-to-text tasks, e-mails
                   classified as text (lecture 9)
    viz            attention heatmaps and positional-encoding plots
    assets         where the pretrained models and the data live: fetched from registries, verified
    check          is this machine ready? OK/FAIL per package and asset (`python -m scratch.check`)
    numerics       one numeric path on every x86-64 machine (the course kernel's pinned CPU kernels and threads)
"""
import os
import sys
import warnings

from scratch import numerics

# Before torch loads, so that a Python started without the course kernel computes the same bits too.
if "torch" not in sys.modules:
    numerics.pin_environment()
elif numerics.cpu_supports_pinned_path() and numerics.problems():
    warnings.warn(
        "torch was imported before scratch, outside the course's Jupyter kernel, so it runs off the pinned "
        f"numeric path ({'; '.join(numerics.problems())}). Results can differ from the stored outputs in the "
        "last digits. Choose the kernel 'Transformers from Scratch' (installed by `make setup`), "
        "or import scratch before torch.", stacklevel=2)

# Models load from local paths only; with these set, a mistaken hub id fails at once instead of hanging.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Loading progress bars print speeds (it/s) that change every run; nbval would see them as changed output.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
if "transformers" in sys.modules:  # imported before scratch: the variable above came too late
    sys.modules["transformers"].utils.logging.disable_progress_bar()


def seed_everything(seed: int = 0) -> None:
    """Fix every random seed the notebooks use and print tensors with 4 decimals."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_printoptions(precision=4, sci_mode=False)
    np.set_printoptions(precision=4, suppress=True)
