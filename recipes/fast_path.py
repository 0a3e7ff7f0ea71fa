"""Imported first by the recipes whose checkpoints trained on MKL's fast path (MKL_CBWR=AUTO) rather than the
lectures' pinned one: training speed, where the shipped metrics are re-measured on the pinned path by tests/ and the
lectures. It must run before course and torch load; where course is already loaded (the tests), the pinned
settings stay."""

import os

os.environ.setdefault("MKL_CBWR", "AUTO")
os.environ.setdefault("RAYON_NUM_THREADS", "1")  # the tokenizers library: one thread, as torch
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
