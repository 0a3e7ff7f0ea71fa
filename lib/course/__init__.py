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

It may import anything, `scratch` included; `scratch` never imports it. Importing it changes nothing outside it: the
course's Jupyter kernel (course.kernel) starts every notebook with the offline environment (OFFLINE_ENV) and the
pinned numeric path (course.numerics), and a script, a recipe or the tests ask for both with prepare_process()
before torch loads.
"""

import os
import sys
import warnings

from course import numerics

# Models load from local paths only; with these set, a mistaken hub id fails at once instead of hanging.
# Loading progress bars print speeds (it/s) that change every run; nbval would see them as changed output.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def prepare_process(environ=os.environ) -> None:
    """What the course's kernel gives a notebook, for a process started otherwise (a script, a recipe, pytest): the
    offline environment, and the pinned numeric path where torch has not loaded yet (else a warning that it runs off
    it). Call it before importing torch; a variable already set is left as it is."""
    for name, value in OFFLINE_ENV.items():
        environ.setdefault(name, value)
    if "huggingface_hub" in sys.modules:  # imported already: it read the variables above too early
        sys.modules["huggingface_hub"].constants.HF_HUB_OFFLINE = environ["HF_HUB_OFFLINE"] == "1"
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()
    if "torch" not in sys.modules:
        numerics.pin_environment(environ)
    elif numerics.cpu_supports_pinned_path() and numerics.problems():
        warnings.warn(
            "torch was imported before course.prepare_process(), outside the course's Jupyter kernel, so it runs "
            f"off the pinned numeric path ({'; '.join(numerics.problems())}). Results can differ from the stored "
            "outputs in the last digits. Choose the kernel 'Transformers from Scratch' (installed by `make "
            "setup`), or call course.prepare_process() before importing torch.",
            stacklevel=2,
        )
