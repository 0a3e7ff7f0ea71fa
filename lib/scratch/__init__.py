"""Transformers from Scratch: the course's own package, one module per idea, in the course's order.

A module imports only modules above it in this table (tests/test_package.py holds it to that).

    validate       the argument checks the modules share, at the doors: constructors, models' forward, generate
    numerics       one numeric path on every x86-64 machine (the course kernel's pinned CPU kernels and threads)
    kernel         the course's Jupyter kernel, which pins that path
    claims         the lectures' claim checks: a false claim fails a test run and prints a note for a student
    rdata          R's serialization format, read without R (Jane Austen's novels)
    assets         where the pretrained models and the data live: fetched from registries, verified
    tokenization   characters, words and byte-level BPE (lecture 1)
    corpora        the texts (Moby-Dick, Austen, e-mails), their fixed splits, sentences, words, characters
    embeddings     sinusoidal, learned, relative and rotary positions (lecture 2)
    attention      scaled dot-product attention, masks, multi-head attention, the KV cache (lectures 3-4, 10)
    blocks         LayerNorm, RMSNorm, feed-forward (MLP, SwiGLU), encoder and decoder blocks (lecture 5)
    models         Transformer (encoder-decoder), GPTConfig and GPT (decoder-only), BERT (lectures 6-8)
    training       the training loop, a resumable Run for long trainings, eval_mode, the learning-rate schedule
    sampling       greedy, beam search, top-k, top-p, temperature; generate, greedy_decode (lectures 6, 10)
    number_words   English -> German number words, lecture 6's translation task
    objectives     BERT's masking (80/10/10), token-classification labels, T5's span corruption; IGNORE_INDEX
    lora           low-rank adapters: add, merge, the trained tensors (lecture 7)
    sft            supervised fine-tuning of a chat model: conversations, the loss on the answer only (lecture 8)
    metrics        exact match, BIO spans and span scores, fill-mask accuracy, distinct-n and repetition
    bert_tasks     lecture 7's task data: fill-mask test words, next-sentence pairs, gazetteer tags
    text_to_text   T5's text-to-text tasks and their greedy answers (lecture 9)
    pretrained     Hugging Face weights in the course's models (GPT-2, Llama/SmolLM2, BERT/MiniLM)
    checkpoints    the course's own checkpoints (tiny T5s, MiniLM's fine-tunes), as models or plain folders
    viz            attention heatmaps and positional-encoding plots, bertviz offline
    diagrams       the figures the lectures draw: the architecture, its parts and the data flowing through them
    exercises      forbid(...): exercise checks that refuse the library's shortcuts
    check          is this machine ready? OK/FAIL per package and asset (`python -m scratch.check`)

Importing scratch also sets the offline environment (OFFLINE_ENV), here and nowhere else.
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
        "or import scratch before torch.",
        stacklevel=2,
    )

# Models load from local paths only; with these set, a mistaken hub id fails at once instead of hanging.
# Loading progress bars print speeds (it/s) that change every run; nbval would see them as changed output.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
for _name, _value in OFFLINE_ENV.items():
    os.environ.setdefault(_name, _value)
if "huggingface_hub" in sys.modules:  # imported before scratch: it read the variables above too early
    sys.modules["huggingface_hub"].constants.HF_HUB_OFFLINE = os.environ["HF_HUB_OFFLINE"] == "1"
if "transformers" in sys.modules:
    sys.modules["transformers"].utils.logging.disable_progress_bar()


def seed_everything(seed: int = 0) -> None:
    """Fix every random seed (Python's, NumPy's, torch's on every device) and print tensors with 4 decimals."""
    import operator  # imported here, as all below: importing scratch must not load torch before the pin above
    import random  # imported here

    import numpy as np  # imported here
    import torch  # imported here

    seed = operator.index(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_printoptions(precision=4, sci_mode=False)
    np.set_printoptions(precision=4, suppress=True)
