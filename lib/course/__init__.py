"""The course's machinery, beside the teaching package `scratch`: what the notebooks use but do not teach.

    numerics       one numeric path on every x86-64 machine (the course kernel's pinned CPU kernels and threads)
    kernel         the course's Jupyter kernel, which pins that path
    claims         the lectures' claim checks: a false claim fails a test run and prints a note for a student
    assets         where the pretrained models and the data live: fetched from registries, verified
    rdata          R's serialization format, read without R (Jane Austen's novels)
    corpora        the texts (Moby-Dick, Austen, e-mails), their fixed splits, sentences, words, characters
    number_words   English and German number words: lecture 6's translation task, lecture 8's digits task
    bert_tasks     lecture 7's task data: fill-mask test words, next-sentence pairs, gazetteer tags
    text_to_text   T5's text-to-text tasks, their batches, greedy answers and fine-tune (lecture 9)
    metrics        exact match, BIO spans and span scores, fill-mask accuracy, distinct-n and repetition
    pretrained     Hugging Face weights in the course's models (Llama/SmolLM2, BERT/MiniLM)
    checkpoints    the course's own checkpoints (tiny T5s, MiniLM's fine-tunes), as models or plain folders
    viz            attention heatmaps and positional-encoding plots, bertviz offline
    diagrams       the figures the lectures draw: the architecture, its parts and the data flowing through them
    exercises      forbid(...): exercise checks that refuse the library's shortcuts
    checks         the exercises' graded checks, one module per lecture
    check          is this machine ready? OK/FAIL per package and asset (`python -m course.check`)

It may import anything, `scratch` included; `scratch` never imports it. Importing course sets the offline
environment (OFFLINE_ENV) and, where torch has not loaded yet, the pinned numeric path (course.numerics).
"""

import os
import sys
import warnings

from course import numerics

# Before torch loads, so that a Python started without the course kernel computes the same bits too.
if "torch" not in sys.modules:
    numerics.pin_environment()
elif numerics.cpu_supports_pinned_path() and numerics.problems():
    warnings.warn(
        "torch was imported before course, outside the course's Jupyter kernel, so it runs off the pinned "
        f"numeric path ({'; '.join(numerics.problems())}). Results can differ from the stored outputs in the "
        "last digits. Choose the kernel 'Transformers from Scratch' (installed by `make setup`), "
        "or import course before torch.",
        stacklevel=2,
    )

# Models load from local paths only; with these set, a mistaken hub id fails at once instead of hanging.
# Loading progress bars print speeds (it/s) that change every run; nbval would see them as changed output.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
for _name, _value in OFFLINE_ENV.items():
    os.environ.setdefault(_name, _value)
if "huggingface_hub" in sys.modules:  # imported before course: it read the variables above too early
    sys.modules["huggingface_hub"].constants.HF_HUB_OFFLINE = os.environ["HF_HUB_OFFLINE"] == "1"
if "transformers" in sys.modules:
    sys.modules["transformers"].utils.logging.disable_progress_bar()
