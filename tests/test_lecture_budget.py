"""A lecture is one sitting: its body (the cells before the pointer to its exercises) stays within a reading budget.

Counted the way a student meets the notebook: markdown words; visible code lines (non-blank lines of code cells
that are not collapsed); the longest visible code cell; visible `assert` lines. Claim checks, which keep the prose
true of the outputs, live in collapsed cells tagged `claims` and do not count.
"""

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# every lecture NN_topic and every optional notebook beside one, NNb_topic (02b: a sitting of its own)
LECTURES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted(
    (ROOT / "notebooks").glob("[0-9][0-9][a-z]_*.ipynb")
)

MAX_WORDS = 2600
MAX_CODE_LINES = 350
MAX_CELL_LINES = 30
MAX_ASSERTS = 20


def source(cell):
    return "".join(cell["source"])


def hidden(cell):
    return bool(cell["metadata"].get("jupyter", {}).get("source_hidden"))


def tags(cell):
    return cell["metadata"].get("tags", [])


def body(path):
    """The cells before the '## Exercises' pointer (the whole notebook if it has none)."""
    cells = json.loads(path.read_text())["cells"]
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "markdown" and source(cell).lstrip().startswith("## Exercises"):
            return cells[:i]
    return cells


def measure(path):
    words = code_lines = longest = asserts = 0
    for cell in body(path):
        if cell["cell_type"] == "markdown":
            words += len(source(cell).split())
        elif cell["cell_type"] == "code" and not hidden(cell):
            lines = [line for line in source(cell).splitlines() if line.strip()]
            code_lines += len(lines)
            longest = max(longest, len(lines))
            asserts += sum(1 for line in lines if re.match(r"\s*assert\b", line))
    return {"words": words, "code lines": code_lines, "longest cell": longest, "asserts": asserts}


def over_budget(path):
    m = measure(path)
    limits = {"words": MAX_WORDS, "code lines": MAX_CODE_LINES, "longest cell": MAX_CELL_LINES, "asserts": MAX_ASSERTS}
    return [f"{key} {m[key]} > {limit}" for key, limit in limits.items() if m[key] > limit]


by_lecture = pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)


def test_there_are_lectures():
    assert len(LECTURES) >= 11


@by_lecture
def test_lecture_fits_one_sitting(path):
    problems = over_budget(path)
    assert not problems, (
        f"{path.name} is longer than one sitting: {', '.join(problems)}; cut, move a claim check into a collapsed "
        "cell tagged 'claims', or move a section into an optional notebook"
    )


@by_lecture
def test_claim_checks_are_collapsed_and_say_what_they_protect(path):
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        if "claims" not in tags(cell):
            continue
        where = f"{path.name} cell {i}"
        assert cell["cell_type"] == "code", f"{where}: only code cells carry the 'claims' tag"
        assert hidden(cell), f"{where}: a claim check is collapsed (metadata.jupyter.source_hidden = true)"
        calls = [
            node
            for node in ast.walk(ast.parse(source(cell)))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "claim"
        ]
        assert calls, f"{where}: a claim check checks something (course.claims.claim)"
        for node in calls:
            sentence = node.args[1] if len(node.args) > 1 else None
            assert isinstance(sentence, ast.Constant | ast.JoinedStr), (
                f"{where}, line {node.lineno}: say in claim's sentence which sentence of the text it protects"
            )
