"""Claim checks: the collapsed cells tagged `claims` under a lecture's outputs, one `claim(...)` per sentence.

A lecture's text quotes the results of the run above it ("BPE needs under 1.3 tokens per word"). Each such
sentence is checked right after the output it describes:

    claim(tokens_per_word["BPE"] < 1.3, "the text says BPE needs under 1.3 tokens per word", tokens_per_word["BPE"])

What a false claim does depends on who runs the notebook, and the environment variable SCRATCH_CLAIMS says which:

    SCRATCH_CLAIMS=strict    the runs that verify the notebooks (`make test`, `make test-fast`, `make outputs`,
                             `make test-latest`, which the Makefile sets it for): the cell fails with an
                             AssertionError naming the sentence and what this run gives
    unset (or =note)         a student's session (`make lab`): one short note is printed and the notebook runs on;
                             a student who changed a seed or a step count above has learnt something, not broken it

A claim that holds prints nothing in either mode, so a claims cell leaves no output.
"""

from __future__ import annotations

import os

MODE_VARIABLE = "SCRATCH_CLAIMS"
MODES = ("strict", "note")
LONGEST_OBSERVATION = 200  # characters of what a run gives, in a note or an error


def mode() -> str:
    """'strict' or 'note', as SCRATCH_CLAIMS says ('note' where it is unset or empty)."""
    chosen = os.environ.get(MODE_VARIABLE, "") or "note"
    if chosen not in MODES:
        raise ValueError(f"{MODE_VARIABLE} must be 'strict' or 'note' (or unset, which means 'note'), not {chosen!r}")
    return chosen


def shown(observed: object) -> str:
    """What a run gives, short: a string as it is, numbers with 4 significant digits, tensors and arrays as lists,
    a tuple as its values joined by ', '."""
    if isinstance(observed, str):
        return observed
    if isinstance(observed, tuple):
        return ", ".join(shown(value) for value in observed)
    return _value(observed)


def _value(value: object) -> str:
    if hasattr(value, "tolist") and not isinstance(value, list | tuple | str):  # a tensor, an array, a NumPy number
        value = value.tolist()
    if isinstance(value, bool | int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key!r}: {_value(item)}" for key, item in value.items()) + "}"
    return repr(value)


def claim(holds: object, sentence: str, observed: object) -> None:
    """Check one claim of the text: `holds` is the check, `sentence` what the text says ("the text says ..."),
    `observed` what this run gives (a value, a tuple of values, or a string that describes them).

    Holding, it does nothing. False, it raises AssertionError under SCRATCH_CLAIMS=strict and otherwise prints one
    note. `holds` is read with bool(), as `assert` reads it (a one-element tensor works; a larger one raises)."""
    if not isinstance(sentence, str) or not sentence.strip():
        raise TypeError(f"claim's sentence must say what the text claims, as a non-empty string; got {sentence!r}")
    strict = mode() == "strict"
    if bool(holds):
        return
    observation = shown(observed)
    if len(observation) > LONGEST_OBSERVATION:
        observation = observation[: LONGEST_OBSERVATION - 1] + "…"
    if strict:
        raise AssertionError(f"{sentence}; this run gives {observation}")
    print(f"Note: {sentence}; this run gives {observation} — expected if you changed something above.")
