"""Claim checks (course.claims): a false claim fails a test run and tells a student, a true one prints nothing.

The lectures' collapsed `claims` cells call `claim(holds, sentence, observed)`. Under SCRATCH_CLAIMS=strict, which
the Makefile sets for the runs that verify the notebooks, a false claim raises; in a student's session it prints one
note and the notebook runs on.
"""

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from course import claims
from course.claims import claim

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SENTENCE = "the text says x is 3"


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setenv(claims.MODE_VARIABLE, "strict")


@pytest.fixture
def student(monkeypatch):
    monkeypatch.delenv(claims.MODE_VARIABLE, raising=False)


def test_a_student_session_is_the_default_and_note_says_it_too(monkeypatch):
    monkeypatch.delenv(claims.MODE_VARIABLE, raising=False)
    assert claims.mode() == "note"
    monkeypatch.setenv(claims.MODE_VARIABLE, "")
    assert claims.mode() == "note"
    monkeypatch.setenv(claims.MODE_VARIABLE, "note")
    assert claims.mode() == "note"
    monkeypatch.setenv(claims.MODE_VARIABLE, "strict")
    assert claims.mode() == "strict"


def test_an_unknown_mode_is_an_error_not_a_guess(monkeypatch, capsys):
    monkeypatch.setenv(claims.MODE_VARIABLE, "Strict")
    with pytest.raises(ValueError, match="SCRATCH_CLAIMS must be 'strict' or 'note'.*'Strict'"):
        claim(True, SENTENCE, 3)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("mode", ["strict", "note"])
def test_a_claim_that_holds_prints_nothing(monkeypatch, capsys, mode):
    monkeypatch.setenv(claims.MODE_VARIABLE, mode)
    claim(True, SENTENCE, 3)
    claim(torch.tensor(True), SENTENCE, torch.tensor(3.0))
    assert capsys.readouterr() == ("", "")


def test_strict_a_false_claim_raises_naming_the_sentence_and_the_observation(strict, capsys):
    with pytest.raises(AssertionError) as error:
        claim(2 == 3, SENTENCE, 2)
    assert str(error.value) == "the text says x is 3; this run gives 2"
    assert capsys.readouterr() == ("", "")


def test_a_student_gets_one_note_and_runs_on(student, capsys):
    claim(2 == 3, SENTENCE, 2)
    out, err = capsys.readouterr()
    assert out == "Note: the text says x is 3; this run gives 2 — expected if you changed something above.\n"
    assert err == ""


def test_holds_is_read_as_assert_reads_it(student, capsys):
    claim(torch.tensor(False), SENTENCE, 2)
    assert capsys.readouterr().out.startswith("Note: ")
    with pytest.raises(RuntimeError):  # a tensor of several values has no truth value, for assert as here
        claim(torch.tensor([True, False]), SENTENCE, 2)


def test_the_sentence_is_a_real_string():
    with pytest.raises(TypeError, match="sentence"):
        claim(True, "", 2)
    with pytest.raises(TypeError, match="sentence"):
        claim(True, 2, "the text says x is 3")


def test_observations_are_shown_short():
    assert claims.shown(1 / 3) == "0.3333"
    assert claims.shown(torch.tensor(2 / 3)) == "0.6667"
    assert claims.shown(torch.tensor([0.5, 1 / 3])) == "[0.5, 0.3333]"
    assert claims.shown((28, 13)) == "28, 13"
    assert claims.shown(["ch", "uck"]) == "['ch', 'uck']"
    assert claims.shown({"German": 1.8412}) == "{'German': 1.841}"
    assert claims.shown("a log-log slope of 2.15") == "a log-log slope of 2.15"


def test_a_long_observation_is_cut(strict):
    with pytest.raises(AssertionError) as error:
        claim(False, SENTENCE, list(range(1000)))
    observation = str(error.value).split("; this run gives ", 1)[1]
    assert len(observation) == claims.LONGEST_OBSERVATION and observation.endswith("…")


def claims_cells():
    for path in NOTEBOOKS:
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            if "claims" in cell["metadata"].get("tags", []):
                yield f"{path.name} cell {i}", cell


def test_every_claims_cell_checks_through_the_helper():
    """No bare assert: it would crash a student's notebook; claim(...) with the sentence the check protects."""
    cells = dict(claims_cells())
    assert len(cells) > 100
    for where, cell in cells.items():
        tree = ast.parse("".join(cell["source"]))
        asserts = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)]
        assert not asserts, f"{where}: bare assert on line(s) {asserts}; use claim(holds, sentence, observed)"
        imports = [node for node in tree.body if isinstance(node, ast.ImportFrom) and node.module == "course.claims"]
        assert imports, f"{where}: import the helper in the cell itself (from course.claims import claim)"


def test_the_committed_claims_cells_printed_nothing():
    """The notebooks were executed with every claim holding, so no claims cell has an output to compare."""
    for where, cell in claims_cells():
        assert cell["outputs"] == [], f"{where}: a claims cell printed {cell['outputs']}"


def notebook(tmp_path: Path) -> Path:
    """A lecture in miniature: a result, a claims cell whose claim is false, one whose claim holds, a cell after.
    The false claim's stored output is the note a student sees."""
    note = "Note: the text says x is 3; this run gives 2 — expected if you changed something above.\n"

    def code(count, source, outputs=(), claims_cell=False):
        metadata = {"jupyter": {"source_hidden": True}, "tags": ["claims"]} if claims_cell else {}
        return {
            "cell_type": "code",
            "execution_count": count,
            "id": f"cell{count}",
            "metadata": metadata,
            "outputs": [{"name": "stdout", "output_type": "stream", "text": text} for text in outputs],
            "source": source,
        }

    cells = [
        code(1, "x = 2\nprint(x)", ["2\n"]),
        code(2, f"from course.claims import claim\n\nclaim(x == 3, {SENTENCE!r}, x)", [note], claims_cell=True),
        code(3, f"from course.claims import claim\n\nclaim(x == 2, {SENTENCE.replace('3', '2')!r}, x)", [], True),
        code(4, "print('after', x)", ["after 2\n"]),
    ]
    kernelspec = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb = {"cells": cells, "metadata": {"kernelspec": kernelspec}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "claims.ipynb"
    path.write_text(json.dumps(nb, indent=1))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # this folder's own (empty) configuration, not the course's
    return path


def nbval(path: Path, mode: str | None) -> subprocess.CompletedProcess:
    env = {name: value for name, value in os.environ.items() if name != claims.MODE_VARIABLE}
    if mode:
        env[claims.MODE_VARIABLE] = mode
    command = [sys.executable, "-m", "pytest", "--nbval", "-p", "no:cacheprovider", "-p", "no:xdist", path.name]
    done = subprocess.run(command, cwd=path.parent, env=env, capture_output=True, text=True, timeout=300)
    done.stdout = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)  # the kernel's traceback colours
    return done


@pytest.mark.slow
def test_nbval_fails_on_a_false_claim_in_strict_mode_and_a_student_sees_the_note(tmp_path):
    path = notebook(tmp_path)
    strict = nbval(path, "strict")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "AssertionError: the text says x is 3; this run gives 2" in strict.stdout
    assert "1 failed, 3 passed" in strict.stdout, strict.stdout
    # the student's run: every output as stored (the note under the false claim, nothing under the true one)
    student = nbval(path, None)
    assert student.returncode == 0, student.stdout + student.stderr
    assert "4 passed" in student.stdout
