"""The tamper report of `make autograde` (tools/tamper.py): what a submission's own cells do to the checking machinery.

`findings(source)` must flag every stored hostile counterexample (tests/exercise_counterexamples/NN_topic.py, those
whose description starts with "hostile" or "(e)", the kind that tampers: they switch a check off from the solution
cell) under "machinery" or "operators", every stored counterexample whose code reaches a private or another
library's path to the computation under "other implementation", no honest wrong answer (neither hostile, borrowed
nor kind (d)) under "machinery" or "operators", and no correct solution of exercises/*.ipynb at all. Synthetic
cells cover each rule, aliases included. `report` is tested on a course folder written here, and once through
nbgrader itself: lecture 3 graded by tools/grading.py's commands, a submission with the `forbid = lambda ...` trick
flagged in the report and in its feedback, a correct one not.
"""

import csv
import functools
import html
import importlib.util
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest
from test_exercises import (
    GRADED,
    NOTEBOOK_DIR,
    NOTEBOOKS,
    exercise_section,
    grading,
    kind,
    submission,
    wrong_solutions,
)

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("tamper", ROOT / "tools" / "tamper.py")
tamper = importlib.util.module_from_spec(spec)
sys.modules.setdefault("tamper", tamper)
spec.loader.exec_module(tamper)

TAMPERS = ("machinery", "operators")
# What a plain text search finds of another path to a computation: findings() must find it too (and more: aliases).
OTHER_PATH = re.compile(
    r"torch\._|torch\.ops\b|_VF\b|\bfrom transformers\b|\bimport transformers\b|\btokenizers\b|dlpack|\bctypes\b"
)


def is_hostile(why):
    """A counterexample that switches its check off from the solution cell: "hostile: ..." or kind (e), tampering."""
    return why.lower().startswith(("hostile", "tamper", "(e)"))


def is_honest(why):
    """A plain mistake: neither hostile, nor borrowed, nor kind (d) (a method rule dodged by another path)."""
    return not is_hostile(why) and not why.startswith(("borrowed", "(d)"))


@functools.cache
def context(path):
    return tamper.context_of(json.loads(path.read_text(encoding="utf-8")))


def counterexamples():
    return [
        (path, k, why, source)
        for path in NOTEBOOKS
        for k, cases in sorted(wrong_solutions(path).items())
        for why, source in cases.items()
    ]


def rules(source, ctx=tamper.DEFAULT):
    return {finding.rule for finding in tamper.findings(source, ctx)}


def test_every_hostile_counterexample_is_flagged():
    hostile = [(path, k, why, source) for path, k, why, source in counterexamples() if is_hostile(why)]
    assert hostile, "no stored hostile counterexample found"
    missed = [
        f"{path.stem} exercise {k}: {why}"
        for path, k, why, source in hostile
        if not rules(source, context(path)) & set(TAMPERS)
    ]
    assert not missed, "hostile submissions the tamper report does not flag:\n" + "\n".join(missed)


def test_counterexamples_through_another_path_are_flagged():
    missed = [
        f"{path.stem} exercise {k}: {why}"
        for path, k, why, source in counterexamples()
        if OTHER_PATH.search(source) and "other implementation" not in rules(source, context(path))
    ]
    assert not missed, "another path to the computation, not flagged:\n" + "\n".join(missed)


def test_honest_wrong_answers_are_not_reported_as_tampering():
    # A wrong answer is the checks' business; the report must not accuse a student who only made a mistake.
    accused = []
    for path, k, why, source in counterexamples():
        if not is_honest(why):
            continue
        found = [f for f in tamper.findings(source, context(path)) if f.rule in TAMPERS]
        if found:
            accused.append(f"{path.stem} exercise {k}: {why}: {found}")
    assert not accused, "honest wrong answers flagged as tampering:\n" + "\n".join(accused)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_correct_solutions_are_not_flagged(path):
    _, exercises = exercise_section(path)
    ctx = context(path)
    flagged = {k: tamper.findings(s.source, ctx) for k, (_, s, _) in enumerate(exercises, start=1)}
    assert not any(flagged.values()), f"{path.name}: correct solutions flagged: {flagged}"


# One cell per way in; each must be flagged under the rule named. Aliases, augmented and indirect forms included.
SYNTHETIC = {
    "machinery": [
        "import torch as t\nt.allclose = lambda *a, **k: True",
        "from course import exercises as e\ne.forbid = lambda *names, hint: None",
        "import course.exercises\ncourse.exercises.forbid = None",
        "import math\nmath.isclose = lambda *a, **k: True",
        "import builtins\nbuiltins.abs = lambda x: 0",
        "import builtins as b\nshort = b\nshort.all = lambda xs: True",
        "import numpy\nnumpy.allclose = None",
        "torch.equal = lambda *a: True",  # torch as the set-up imported it
        "torch.nn.functional.softmax += 0",
        "del torch.allclose",
        "m = torch\nn = m\nn.allclose = None",
        "for module in (torch, math):\n    module.isclose = None",
        "def cheat(t=torch):\n    t.allclose = None",
        "import sys\nsys.modules['torch'].allclose = None",
        "import sys\nsys.modules['torch'] = object()",
        "import sys as s\nmodules = s.modules\nmodules['torch'] = 0",
        "import importlib\nimportlib.import_module('torch').equal = None",
        "getattr(torch, 'nn').functional = None",
        "setattr(torch, 'allclose', lambda *a: True)",
        "delattr(math, 'isclose')",
        "object.__setattr__(torch, 'equal', None)",
        "import importlib\nimportlib.reload(torch)",
        "from importlib import reload\nreload(torch)",
        "__builtins__.abs = None",
        "__builtins__['abs'] = None",
        "globals()['forbid'] = lambda *a, **k: None",
        "g = globals()\ng['torch'] = None",
        "globals().update(forbid=None)",
        "vars(torch)['allclose'] = None",
        "torch.__dict__['allclose'] = None",
        "import contextlib\n\n@contextlib.contextmanager\ndef forbid(*names, hint):\n    yield",
        "forbid = lambda *names, hint: None",
        "def cheat():\n    global forbid\n    forbid = None",
        "abs = lambda x: 0",
        "class LookupOnly:\n    pass",
        "import numpy as torch",
        "from numpy import *",
        "forbid.__code__ = (lambda *a, **k: None).__code__",
        "def f(x):\n    x.__class__ = float\n    return x",
        "inner = forbid.__globals__",
        "from unittest import mock\nmock.patch.object(torch, 'allclose')",
        "import gc\ngc.get_referrers(forbid)",
        "import sys\nframe = sys._getframe(1)",
        "import inspect\ncaller = inspect.currentframe().f_back",
        "exec('torch.allclose = lambda *a, **k: True')",
        "%run cheat.py",
        "!python cheat.py",
        "from course.checks import support\nsupport.torch = None",
        "x = (",
    ],
    "operators": [
        "class Yes(float):\n    def __eq__(self, other):\n        return True",
        "class Zero(int):\n    pass",
        "class Rows(list):\n    pass",
        "class T(torch.Tensor):\n    pass",
        "from torch import Tensor as Base\nclass T(Base):\n    pass",
        "class Any:\n    __eq__ = lambda self, other: True",
        "class Same:\n    def __ne__(self, other):\n        return False",
        "class Close:\n    def __sub__(self, other):\n        return 0.0",
        "class Small:\n    def __abs__(self):\n        return 0.0",
        "class Truthy:\n    def __bool__(self):\n        return True",
        "class Less:\n    def __lt__(self, other):\n        return True",
        "class M:\n    @classmethod\n    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        return True",
        "class M:\n    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):\n        return True",
        "Yes = type('Yes', (float,), {'__eq__': lambda s, o: True})",
        "def f(x):\n    return x.as_subclass(Fake)",
    ],
    "other implementation": [
        "y = torch.ops.aten._softmax(x, -1, False)",
        "y = torch._C._nn.gelu(x)",
        "y = torch._VF.norm(x)",
        "from torch import _VF\ny = _VF.norm(x)",
        "import torch._C as C\ny = C._nn.gelu(x)",
        "aten = torch.ops.aten\ny = aten.cumsum(x, 0)",
        "y = torch._softmax(x, -1, False)",
        "from tokenizers import Tokenizer",
        "from transformers import GPT2LMHeadModel",
        "import transformers\nmodel = transformers.BertModel",
        "from transformers.models.llama import modeling_llama\nrotate = modeling_llama.rotate_half",
        "from torch.utils.dlpack import from_dlpack",
        "y = torch.from_dlpack(x.numpy())",
        "import ctypes",
        "import torch.library\nlibrary = torch.library.Library('aten', 'IMPL')",
    ],
}


@pytest.mark.parametrize(
    "rule, source", [(rule, source) for rule, cases in SYNTHETIC.items() for source in cases], ids=repr
)
def test_each_rule_flags_its_synthetic_cell(rule, source):
    found = tamper.findings(source)
    assert rule in {f.rule for f in found}, f"not flagged as {rule}: {source!r} ({found})"
    assert all(f.line >= 1 and f.what for f in found)


CLEAN = [
    "def softmax(scores):\n    exp = (scores - scores.max(dim=-1, keepdim=True).values).exp()\n"
    "    return exp / exp.sum(dim=-1, keepdim=True)",
    "import math\nfrom torch import nn\n\nclass Block(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.w = nn.Linear(2, 2)\n\n"
    "    def forward(self, x):\n        return self.w(x)",
    "def step(block, cache):\n    cache['k'] = block.w_k\n    return cache",
    "x = torch.randn(3)\nx.requires_grad = True",
    "import numpy as np\n\ndef f(x):\n    return np.asarray(x)",
    "from collections import Counter\ncounts = Counter()\ncounts['a'] += 1",
    "def f(F):\n    F.x = 1",  # a parameter, not the module F
    "dtype = torch.float64\nx = torch.zeros(2, dtype=dtype)",
    "import torch\nimport math\nfrom course.exercises import forbid",  # the same objects the checks import
    "print(softmax(torch.tensor([1.0, 2.0])))",
]


@pytest.mark.parametrize("source", CLEAN, ids=repr)
def test_ordinary_code_is_not_flagged(source):
    assert tamper.findings(source) == []


def test_findings_name_the_line_and_what_it_touches():
    source = "import contextlib\nimport course.exercises as tools\n\ntools.forbid = lambda *n, hint: None\n"
    assert tamper.findings(source) == [
        tamper.Finding(4, "machinery", "sets course.exercises.forbid", "tools.forbid = lambda *n, hint: None")
    ]


def notebook(cells):
    """A minimal nbformat-4 notebook of (cell_type, nbgrader metadata or None, source)."""
    made = []
    for cell_type, meta, source in cells:
        cell = {"cell_type": cell_type, "metadata": {"nbgrader": meta} if meta else {}, "source": source}
        if cell_type == "code":
            cell |= {"outputs": [], "execution_count": None}
        made.append(cell)
    return {"cells": made, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def locked(grade_id, **more):
    return {"grade_id": grade_id, "locked": True, "solution": False, "grade": False, **more}


def solution(grade_id):
    return {"grade_id": grade_id, "locked": False, "solution": True, "grade": False}


def test_report_lists_the_students_own_cells_and_notes_them(tmp_path):
    check = "# Check exercise 1\nfrom course.exercises import forbid\nassert softmax is not None, 'hint: ...'"
    source = notebook(
        [
            ("markdown", locked("title"), "# Exercises"),
            ("code", locked("setup"), "import torch\nfrom course.exercises import forbid\nscores = torch.ones(2)"),
            ("code", solution("exercise1"), "def softmax(s):\n    return s"),
            ("code", locked("exercise1_check", grade=True, points=1), check),
        ]
    )
    (tmp_path / "source" / "01_x").mkdir(parents=True)
    (tmp_path / "source" / "01_x" / "01_x.ipynb").write_text(json.dumps(source))
    cheat = notebook(
        [
            ("markdown", locked("title"), "# Exercises"),
            ("code", locked("setup"), source["cells"][1]["source"]),
            ("code", None, "scores.zero_()\nimport torch as t\nt.allclose = lambda *a, **k: True"),  # an added cell
            ("code", solution("exercise1"), "from course import exercises\nexercises.forbid = None\ndef softmax(s):"),
            ("code", locked("exercise1_check", grade=True, points=1), check),  # as nbgrader restored it
        ]
    )
    cheat["cells"][3]["source"] += "\n    return s"
    honest = notebook([(c["cell_type"], c["metadata"].get("nbgrader"), c["source"]) for c in source["cells"]])
    for student, nb in (("mallory", cheat), ("alice", honest)):
        folder = tmp_path / "autograded" / student / "01_x"
        folder.mkdir(parents=True)
        (folder / "01_x.ipynb").write_text(json.dumps(nb))
        (folder / "01_x.ipynb").chmod(0o444)  # as nbgrader leaves them
    (tmp_path / "tamper_report.csv").write_text(
        "student,assignment,exercise,cell,line,rule,what,code\nbob,00_y,exercise 2,exercise2,1,machinery,x,y\n"
    )

    path, rows = tamper.report("01_x", tmp_path)

    assert path == tmp_path / "tamper_report.csv"
    table = list(csv.DictReader(path.open()))
    assert [(r["student"], r["exercise"], r["cell"], r["line"], r["what"]) for r in table] == [
        ("bob", "exercise 2", "exercise2", "1", "x"),  # another assignment's rows are kept
        ("mallory", "exercise 1", "added cell 3", "3", "sets torch.allclose"),
        ("mallory", "exercise 1", "exercise1", "2", "sets course.exercises.forbid"),
    ]
    assert len(rows) == 2 and table[1]["code"] == "t.allclose = lambda *a, **k: True"
    graded = json.loads((tmp_path / "autograded" / "mallory" / "01_x" / "01_x.ipynb").read_text())
    note = graded["cells"][1]
    assert note["metadata"]["tags"] == [tamper.NOTE_TAG] and "sets course.exercises.forbid" in note["source"]
    assert "score is as autograded" in note["source"]
    assert (tmp_path / "autograded" / "mallory" / "01_x" / "01_x.ipynb").stat().st_mode & 0o777 == 0o444
    clean = json.loads((tmp_path / "autograded" / "alice" / "01_x" / "01_x.ipynb").read_text())
    assert clean == honest, "a student with nothing flagged gets no note"

    tamper.report("01_x", tmp_path)  # run again (make autograde twice): one note, the same rows
    graded = json.loads((tmp_path / "autograded" / "mallory" / "01_x" / "01_x.ipynb").read_text())
    assert sum(tamper.NOTE_TAG in c["metadata"].get("tags", []) for c in graded["cells"]) == 1
    assert list(csv.DictReader(path.open())) == table


FORBID_TRICK = """
import contextlib

import course.exercises

course.exercises.forbid = lambda *names, hint: contextlib.nullcontext()

def softmax(scores):
    return torch.softmax(scores, dim=-1)
"""


@pytest.mark.slow
def test_autograde_writes_the_tamper_report_and_the_feedback_shows_it(tmp_path):
    """release -> autograde -> feedback on lecture 3 in a course folder of its own: the student whose first
    solution cell sets course.exercises.forbid to a no-op is in tamper_report.csv and their feedback opens with the
    note; the one with exercise 1's correct solution is in neither. Scores are nbgrader's."""
    root = tmp_path / "grading"
    (released,) = grading.release([GRADED], root)
    student_edition = nbformat.read(released, as_version=4)
    _, exercises = exercise_section(NOTEBOOK_DIR / f"{GRADED}.ipynb")
    correct = {1: exercises[0][1].source}  # exercise 1 only: the other checks fail at once on their stubs
    # where `make collect` puts them (tests/test_exercises.py runs collect itself; one nbgrader run less here)
    for student, answers in (("alice", correct), ("mallory", {1: FORBID_TRICK})):
        folder = root / "submitted" / student / GRADED
        folder.mkdir(parents=True)
        nbformat.write(submission(student_edition, answers), folder / f"{GRADED}.ipynb")

    report = grading.autograde(GRADED, root)
    grades = grading.feedback(GRADED, root)

    assert report == root / "tamper_report.csv"
    rows = list(csv.DictReader(report.open()))
    assert {row["student"] for row in rows} == {"mallory"}, rows
    assert any(
        row["exercise"] == "exercise 1" and row["what"] == "sets course.exercises.forbid" and "lambda" in row["code"]
        for row in rows
    ), rows
    scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(grades.open())}
    assert set(scores) == {"alice", "mallory"}
    feedback = {
        student: html.unescape((root / "feedback" / student / GRADED / f"{GRADED}.html").read_text(encoding="utf-8"))
        for student in scores
    }
    assert "grader's tamper check" in feedback["mallory"] and "sets course.exercises.forbid" in feedback["mallory"]
    assert "grader's tamper check" not in feedback["alice"]
    graded = nbformat.read(root / "autograded" / "mallory" / GRADED / f"{GRADED}.ipynb", as_version=4)
    assert [kind(cell) for cell in graded.cells].count(None) == 1, "one note, and no other cell added"
