"""The exercise notebooks (exercises/NN_topic.ipynb) are nbgrader assignments whose solutions and checks are paired.

Format, read from each cell's `nbgrader` metadata (nbgrader's source format, schema 3): a locked markdown title
"# Exercises · lecture N: topic"; a locked code cell, the set-up (grade_id `setup`, tagged `exercise-setup`: it uses
nothing from the lecture); then per exercise k a locked markdown statement "### Exercise k · title
(easy|medium|hard, about N min)" with a "**Practises:**" line (grade_id `exerciseK_text`), a solution cell
(`solution: true`, grade_id `exerciseK`, tagged `solution`, collapsed: the solution between ### BEGIN SOLUTION and
### END SOLUTION) and a check cell (`grade: true, locked: true`, grade_id `exerciseK_check`, points 1/2/3 by level,
tagged `check`: "# Check exercise k", then one call into the lecture's check module, course.checks.lecture_NN, which
the set-up imports before any solution runs: `from course.checks import lecture_03` and `lecture_03.softmax(softmax)`;
its failures are AssertionErrors whose messages start with "hint: ").

The pairing: with the solutions every check passes and writes nothing to stderr (nbgrader scores a check that does
0); in the student edition, as nbgrader's generate_assignment writes it for every lecture (tools/grading.py
release), every check fails until its exercise is solved; and every known-wrong, borrowed or hostile solution
stored in tests/exercise_counterexamples/NN_topic.py (`WRONG_SOLUTIONS = {k: {"why it is wrong": "source of a whole
solution cell"}}`) fails its check with a hint, so a check passes only for a correct solution. These run the cells
with plain `exec`, in order, as a student's fresh kernel would (the set-up once per notebook and test process, each
test on a deep copy of what it left). The check modules bind what they rely on when the set-up imports them:
rebinding torch's, math's or the built-ins' functions afterwards, or returning objects whose `==` always agrees,
changes nothing. One lecture is also graded by nbgrader end to end
(collect, autograde, feedback, export) for two submissions built here from its solutions and counterexamples.
"""

import ast
import builtins
import contextlib
import copy
import csv
import functools
import html
import importlib.metadata
import importlib.util
import linecache
import logging
import re
import runpy
import symtable
import sys
import types
import warnings
import zipfile
from pathlib import Path

import matplotlib
import nbformat
import pytest
from traitlets.config.loader import PyFileConfigLoader

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "exercises"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9]*.ipynb"))
spec = importlib.util.spec_from_file_location("grading", ROOT / "tools" / "grading.py")
grading = importlib.util.module_from_spec(spec)
spec.loader.exec_module(grading)
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config().ClearSolutions.code_stub["python"]
TITLE = re.compile(r"^### Exercise (\d+) · .+ \((easy|medium|hard), about (\d+) min\)\s*$", re.MULTILINE)
LEVELS = ["easy", "medium", "hard"]
POINTS = {"easy": 1, "medium": 2, "hard": 3}
FAILS = (NotImplementedError, AssertionError, NameError)
by_name = pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
COUNTEREXAMPLES = ROOT / "tests" / "exercise_counterexamples"
GRADED = "03_attention"  # the lecture graded end to end: its checks need no model, so it runs in seconds
MAX_CHECK_LINES = 3  # a check cell: its "# Check exercise k" line, the import of its module and one call


def check_module(path):
    return f"lecture_{path.stem[:2]}"


@functools.cache
def wrong_solutions(path):
    """{k: {why: source}} stored for a notebook (empty if it has no file yet)."""
    file = COUNTEREXAMPLES / f"{path.stem}.py"
    return runpy.run_path(str(file))["WRONG_SOLUTIONS"] if file.exists() else {}


def counterexample_cases():
    return [
        pytest.param(path, k, why, id=f"{path.stem}-ex{k}-{why[:40]}")
        for path in NOTEBOOKS
        for k, cases in sorted(wrong_solutions(path).items())
        for why in cases
    ]


def tags(cell):
    return cell.metadata.get("tags", [])


def grader(cell):
    """The cell's nbgrader metadata ({} if it has none)."""
    return cell.metadata.get("nbgrader", {})


def kind(cell):
    """'solution', 'check' or 'locked' (set-up and text), as nbgrader sees the cell; None without metadata."""
    meta = grader(cell)
    if not meta:
        return None
    return "solution" if meta.get("solution") else "check" if meta.get("grade") else "locked"


def exercise_section(path):
    """(setup cell, [(markdown, solution, check) per exercise]) of a notebook, by nbgrader's metadata."""
    cells = nbformat.read(path, as_version=4).cells
    assert cells and cells[0].cell_type == "markdown" and cells[0].source.startswith("# Exercises"), (
        f"{path.name}: starts with a markdown cell '# Exercises · lecture N: topic'"
    )
    missing = [i for i, cell in enumerate(cells) if kind(cell) is None]
    assert not missing, f"{path.name}: cells {missing} have no nbgrader metadata"
    setup, section = (cells[1], cells[2:]) if len(cells) > 1 else (None, [])
    assert setup is not None and setup.cell_type == "code" and kind(setup) == "locked", (
        f"{path.name}: the cell after the title is the set-up, a locked code cell"
    )
    exercises = []
    for i, cell in enumerate(section):
        if cell.cell_type == "code":
            assert kind(cell) in ("solution", "check"), (
                f"{path.name}: a code cell after the set-up is neither a solution nor a check:\n{cell.source[:200]}"
            )
        if kind(cell) != "solution":
            continue
        k = len(exercises) + 1
        text, check = section[i - 1] if i else None, section[i + 1] if i + 1 < len(section) else None
        assert (
            text is not None and text.cell_type == "markdown" and re.search(rf"^### Exercise {k} · ", text.source, re.M)
        ), f"{path.name}: solution {k} must follow a markdown cell '### Exercise {k} · title (easy|medium|hard)'"
        assert check is not None and check.cell_type == "code" and kind(check) == "check", (
            f"{path.name}: solution {k} must be followed by its check cell (nbgrader: grade: true)"
        )
        exercises.append((text, cell, check))
    checks = [c for c in section if kind(c) == "check"]
    assert len(checks) == len(exercises), f"{path.name}: every check cell directly follows its solution cell"
    return setup, exercises


def run(source, namespace, name):
    """exec a cell's source like a notebook kernel would (without IPython); tracebacks show the cell's lines."""
    filename = f"<{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), namespace)


@functools.cache
def _setup_namespace(path):
    namespace = {"__name__": "__main__"}
    run(exercise_section(path)[0].source, namespace, f"{path.name} exercise setup")
    return namespace


_shared_models = []  # (models, their state) handed out by after_setup during the current test


def _models_state(models):
    """What an in-place change to a model would change: each tensor's storage and version, each module's mode."""
    return [
        (
            [(name, t.data_ptr(), t._version, t.requires_grad) for name, t in model.state_dict(keep_vars=True).items()],
            [module.training for module in model.modules()],
        )
        for model in models
    ]


def after_setup(path):
    """A namespace as the notebook's set-up cell leaves it. The set-up runs once per notebook and test process; each
    caller gets a deep copy of its data (modules, classes and functions shared). Its models (torch modules) are shared
    too, as a deep copy of SmolLM2 takes longer than loading it: when a test changes one (its weights in place, or its
    train/eval mode), the set-up runs again for the next test (see `_set_up_again_after_a_model_changed`)."""
    import torch

    namespace = _setup_namespace(path)
    shared = {
        id(value): value
        for value in namespace.values()
        if isinstance(value, types.ModuleType | type | torch.nn.Module | types.FunctionType)
    }
    shared[id(namespace["__builtins__"])] = namespace["__builtins__"]
    models = [value for value in namespace.values() if isinstance(value, torch.nn.Module)]
    _shared_models.append((models, _models_state(models)))
    fresh = {}
    for name, value in namespace.items():
        try:
            fresh[name] = copy.deepcopy(value, dict(shared))
        except Exception:  # an object that cannot be copied (none of the set-ups holds one today) is shared
            fresh[name] = value
    return fresh


@pytest.fixture(autouse=True)
def _set_up_again_after_a_model_changed():
    yield
    changed = any(_models_state(models) != state for models, state in _shared_models)
    _shared_models.clear()
    if changed:
        _setup_namespace.cache_clear()


@pytest.fixture
def in_notebooks(monkeypatch):
    monkeypatch.chdir(NOTEBOOK_DIR)  # where a student's kernel starts


@pytest.fixture
def restored_modules():
    """Undo what a hostile solution cell does to shared modules (torch, math, the built-ins, course.exercises, the
    Tensor class) once the test ends: their names come back as they were."""
    import math

    import torch

    import course.exercises

    owners = [builtins, math, torch, torch.Tensor, torch.nn.functional, course.exercises]
    saved = [(owner, dict(vars(owner))) for owner in owners]
    modules = dict(sys.modules)
    yield
    for owner, before in saved:
        now = vars(owner)
        for name in [name for name in now if name not in before]:
            delattr(owner, name)
        for name, value in before.items():
            if now.get(name, value) is not value or name not in now:
                setattr(owner, name, value)
    for name, module in modules.items():
        if sys.modules.get(name) is not module:
            sys.modules[name] = module


@pytest.fixture
def plain_mpl():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture(scope="session")  # once per worker, though a worker takes this file's tests notebook by notebook
def course(tmp_path_factory):
    """An nbgrader course folder, every lecture released by nbgrader generate_assignment as `make release` does."""
    root = tmp_path_factory.mktemp("grading")
    released = grading.release([], root)
    assert [p.name for p in released] == [p.name for p in NOTEBOOKS] and all(p.exists() for p in released)
    return root


def released(course, path):
    return nbformat.read(course / "release" / path.stem / path.name, as_version=4)


def test_there_are_lecture_notebooks():
    assert len(NOTEBOOKS) >= 4, "exercises/NN_*.ipynb not found"


@by_name
def test_structure(path):
    setup, exercises = exercise_section(path)
    assert 3 <= len(exercises) <= 6, f"{path.name}: {len(exercises)} exercises; every lecture needs 3 to 6"
    cells = nbformat.read(path, as_version=4).cells
    ids = [grader(cell).get("grade_id") for cell in cells]
    assert len(set(ids)) == len(ids) and all(ids), f"{path.name}: every cell needs its own nbgrader grade_id"
    assert all(grader(cell).get("schema_version") == 3 for cell in cells), f"{path.name}: nbgrader schema_version 3"
    assert all(grader(cell).get("locked") for cell in cells if cell.cell_type == "markdown"), (
        f"{path.name}: markdown cells are locked"
    )
    assert grader(setup).get("grade_id") == "setup" and "exercise-setup" in tags(setup), (
        f"{path.name}: the set-up cell has grade_id 'setup' and the tag 'exercise-setup'"
    )
    for index, cell in enumerate(cells):
        assert (BEGIN in cell.source or END in cell.source) <= (kind(cell) == "solution"), (
            f"{path.name}, cell {index}: '### BEGIN/END SOLUTION' outside a solution cell (nbgrader refuses it, "
            "in markdown too)"
        )
    levels = []
    for k, (text, solution, check) in enumerate(exercises, start=1):
        where = f"{path.name}, exercise {k}"
        title = TITLE.search(text.source)
        assert title and int(title[1]) == k, (
            f"{where}: title line '### Exercise {k} · title (easy|medium|hard, about N min)'"
        )
        assert 5 <= int(title[3]) <= 90, f"{where}: a time between 5 and 90 minutes"
        levels.append(LEVELS.index(title[2]))
        assert re.search(r"^\*\*Practises:\*\* \S", text.source, re.MULTILINE), (
            f"{where}: add a '**Practises:** ...' line"
        )
        assert grader(text).get("grade_id") == f"exercise{k}_text", f"{where}: the text's grade_id is exercise{k}_text"
        meta = grader(solution)
        assert meta.get("grade_id") == f"exercise{k}" and not meta.get("grade") and not meta.get("locked"), (
            f"{where}: the solution cell: nbgrader solution: true, grade: false, locked: false, grade_id exercise{k}"
        )
        assert "solution" in tags(solution) and solution.metadata.get("jupyter", {}).get("source_hidden"), (
            f"{where}: the solution cell is tagged 'solution' and collapsed (jupyter.source_hidden)"
        )
        markers = [line.strip() for line in solution.source.splitlines() if BEGIN in line or END in line]
        assert markers and markers == [BEGIN, END] * (len(markers) // 2), (
            f"{where}: each '{BEGIN}' alone on its line, closed by an '{END}' before the next one"
        )
        assert re.search(r"^\s*def |^\s*class ", solution.source, re.MULTILINE), (
            f"{where}: the solution defines a function"
        )
        meta = grader(check)
        assert meta.get("grade_id") == f"exercise{k}_check" and meta.get("locked") and not meta.get("solution"), (
            f"{where}: the check cell: nbgrader grade: true, locked: true, grade_id exercise{k}_check"
        )
        assert meta.get("points") == POINTS[title[2]], f"{where}: a {title[2]} exercise is worth {POINTS[title[2]]}"
        assert "check" in tags(check), f"{where}: the check cell is tagged 'check'"
        assert check.source.splitlines()[0].strip() == f"# Check exercise {k}", (
            f"{where}: the check cell's first line is '# Check exercise {k}'"
        )
        module = check_module(path)
        call = rf"{module}\.\w+\({', '.join(sorted(defined_names(solution.source), key=solution.source.index))}\)"
        assert re.fullmatch(rf"# Check exercise {k}\nfrom course\.checks import {module}\n\n{call}", check.source), (
            f"{where}: the check cell is '# Check exercise {k}', 'from course.checks import {module}' and one call "
            f"that hands in what the solution defines, e.g. '{module}.name(name)':\n{check.source}"
        )
        for cell in (setup, solution, check):
            assert not re.search(r"^\s*[%!]", cell.source, re.MULTILINE), (
                f"{where}: no IPython magics in exercise cells"
            )
    assert levels == sorted(levels), f"{path.name}: order the exercises from easy to hard ({levels})"
    assert levels[-1] == 2, f"{path.name}: at least one exercise is 'hard'"


def free_globals(source):
    """The names a cell looks up in the notebook's namespace (or the built-ins) without binding them itself."""
    top = symtable.symtable(source, "<cell>", "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    used, tables = set(), [top]
    while tables:
        table = tables.pop()
        used |= {s.get_name() for s in table.get_symbols() if s.is_referenced() and (table is top or s.is_global())}
        tables += table.get_children()
    return used - bound


def top_level_names(source, kinds):
    return {
        target.id
        for node in ast.parse(source).body
        if isinstance(node, kinds)
        for target in ([node] if isinstance(node, ast.FunctionDef | ast.ClassDef) else ast.walk(node))
        if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store)
    } | {node.name for node in ast.parse(source).body if isinstance(node, kinds) and hasattr(node, "name")}


# A redefined print cannot make a failing check pass: the check prints only after every assert passed.
MAY_BE_LOOKED_UP = {"print"}


@by_name
def test_checks_import_what_they_rely_on(path):
    """A solution cell runs in the same namespace as the checks, so it can rebind any name there (a `forbid` that does
    nothing, a fake `torch`, `lecture_03 = ...`). Each check cell therefore imports its lecture's check module itself
    and looks up nothing else but the answers it hands in (the names solution cells define); the check module brings
    its own data and models, and binds what it relies on when the set-up imports it (see
    test_checks_bind_what_they_rely_on_and_compare_plain_values)."""
    _, exercises = exercise_section(path)
    answers = set().union(*(top_level_names(s.source, ast.stmt) for _, s, _ in exercises))
    problems = []
    for k, (_, _, check) in enumerate(exercises, start=1):
        body = ast.parse(check.source).body
        first_other = next((i for i, node in enumerate(body) if not isinstance(node, ast.Import | ast.ImportFrom)), 0)
        late = [ast.unparse(node) for node in body[first_other:] if isinstance(node, ast.Import | ast.ImportFrom)]
        if late:
            problems.append(f"check {k}: imports go at the top of the cell, before any use: {late}")
        looked_up = free_globals(check.source) - answers - MAY_BE_LOOKED_UP
        if looked_up:
            problems.append(f"check {k} looks up {sorted(looked_up)}: import them in the check itself")
    assert not problems, (
        f"{path.name}: a solution cell could rebind these names and switch the check off "
        "(e.g. `from builtins import len`, `import torch`, `from course.exercises import forbid`):\n"
        + "\n".join(problems)
    )


@by_name
def test_check_cells_are_one_line_calls_and_no_notebook_holds_a_reference(path):
    """A check cell shows at most MAX_CHECK_LINES lines (the check lives in course.checks.lecture_NN, imported by the
    set-up); no locked cell but the set-up defines a function or class (a reference solution in plain view), and
    the set-up imports the lecture's check module."""
    setup, exercises = exercise_section(path)
    module = check_module(path)
    assert re.search(rf"^from course\.checks import {module}$", setup.source, re.M), (
        f"{path.name}: the set-up imports the check module before any solution runs: 'from course.checks import "
        f"{module}'"
    )
    problems = []
    for k, (_, _, check) in enumerate(exercises, start=1):
        lines = [line for line in check.source.splitlines() if line.strip()]
        if len(lines) > MAX_CHECK_LINES:
            problems.append(f"check {k} has {len(lines)} lines")
    cells = nbformat.read(path, as_version=4).cells
    for index, cell in enumerate(cells):
        if cell.cell_type != "code" or kind(cell) == "solution" or cell is cells[1]:
            continue
        defined = [
            node.name if hasattr(node, "name") else "lambda"
            for node in ast.walk(ast.parse(cell.source))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda)
        ]
        if defined:
            problems.append(f"cell {index} defines {defined}: references belong in course.checks.{module}")
    assert not problems, f"{path.name}: " + "; ".join(problems)


class _Agreeing:
    """Comparison and arithmetic that always agree: `==` is True, `!=` False, `-` and abs() give 0, `<` and `>` True."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __sub__(self, other):
        return 0

    __rsub__ = __sub__

    def __abs__(self):
        return 0

    def __lt__(self, other):
        return True

    __le__ = __gt__ = __ge__ = __lt__
    __hash__ = object.__hash__


class AgreeingInt(_Agreeing, int):
    __hash__ = int.__hash__


class AgreeingFloat(_Agreeing, float):
    __hash__ = float.__hash__


class AgreeingList(_Agreeing, list):
    pass


class AgreeingTuple(_Agreeing, tuple):
    __hash__ = tuple.__hash__


def agreeing_tensor():
    import torch

    class AgreeingTensor(torch.Tensor):
        """A tensor whose every comparison, in Python or through torch (allclose, equal, isclose), agrees."""

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            name = getattr(func, "__name__", "")
            if name in ("allclose", "equal", "__eq__", "eq", "isclose", "__ne__", "ne"):
                return name not in ("__ne__", "ne")
            return super().__torch_function__(func, types, args, kwargs)

    return torch.zeros(3).as_subclass(AgreeingTensor)


AGREEING = {
    "int": lambda: AgreeingInt(1),
    "float": lambda: AgreeingFloat(1.0),
    "list": lambda: AgreeingList([1]),
    "tuple": lambda: AgreeingTuple(((1, 2), 1.0)),
    "tensor": agreeing_tensor,
}


@contextlib.contextmanager
def tampered():
    """What a solution cell can do to the names the checks use, after the set-up: comparisons that always agree,
    built-ins that always pass, course.exercises' tools that do nothing. Undone afterwards."""
    import math

    import torch

    import course.exercises

    patches = [
        (torch, "allclose", lambda *args, **kwargs: True),
        (torch, "equal", lambda *args, **kwargs: True),
        (torch.Tensor, "allclose", lambda *args, **kwargs: True),
        (torch.Tensor, "equal", lambda *args, **kwargs: True),
        (math, "isclose", lambda *args, **kwargs: True),
        (math, "isfinite", lambda *args, **kwargs: True),
        (builtins, "abs", lambda x: 0),
        (builtins, "all", lambda iterable: True),
        (course.exercises, "forbid", lambda *names, hint: contextlib.nullcontext()),
    ]
    undo = [(owner, name, vars(owner).get(name)) for owner, name, _ in patches]
    try:
        for owner, name, value in patches:
            setattr(owner, name, value)
        yield
    finally:
        for owner, name, value in undo:
            if value is None:
                delattr(owner, name)
            else:
                setattr(owner, name, value)


@pytest.mark.slow
@pytest.mark.assets
@by_name
def test_checks_bind_what_they_rely_on_and_compare_plain_values(
    path, in_notebooks, plain_mpl, capsys, restored_modules
):  # noqa: E501
    """After the set-up, a solution cell rebinds torch.allclose, torch.equal, math.isclose, builtins.abs and all and
    course.exercises.forbid, and (as the notebook's names) the check module's tools; each exercise's functions
    return an int, float, list, tuple or tensor subclass whose `==`, `!=` and `-` always agree. Every check still fails
    with a hint: the check modules bound their tools when the set-up imported them, and compare plain values."""
    _, exercises = exercise_section(path)
    accepted = []
    for k, (_, _, check) in enumerate(exercises, start=1):
        for kind_name, make in AGREEING.items():
            namespace = after_setup(path)
            for j, (_, solution, _) in enumerate(exercises, start=1):
                if j != k:
                    run(solution.source, namespace, f"{path.name} solution {j}")
            agreeing = make()
            for name in solution_names(path)[k - 1]:
                namespace[name] = lambda *args, _value=agreeing, **kwargs: _value
            for name in ("forbid", "CountOps", "LargestTensor", "LiveTensors", "LookupOnly", "call", "close", "tensor"):
                namespace[name] = lambda *args, **kwargs: contextlib.nullcontext()
            with tampered():
                try:
                    run(check.source, namespace, f"{path.name} check {k}")
                except AssertionError as error:
                    if not str(error).startswith("hint: "):
                        accepted.append(f"exercise {k} ({kind_name}): fails without a hint: {error}")
                    continue
                except Exception as error:
                    accepted.append(f"exercise {k} ({kind_name}): {type(error).__name__} instead of a hint: {error}")
                    continue
            accepted.append(f"exercise {k} accepts a returned {kind_name} subclass whose == always agrees")
    capsys.readouterr()
    assert not accepted, f"{path.name}: " + "; ".join(accepted)


class LoggedWarnings(logging.Handler):
    """Log records of level WARNING and up: in a kernel, each reaches stderr (a library's handler or Python's last
    resort), which makes nbgrader score the check 0."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []
        self.loggers = [logging.getLogger()] + [
            logger
            for logger in logging.root.manager.loggerDict.values()
            if isinstance(logger, logging.Logger) and logger.handlers and not logger.propagate
        ]

    def emit(self, record):
        self.lines.append(f"{record.name}: {record.getMessage()}")

    def __enter__(self):
        for logger in self.loggers:
            logger.addHandler(self)
        return self

    def __exit__(self, *exc):
        for logger in self.loggers:
            logger.removeHandler(self)


def kernel_warning_filters():
    """The warnings a fresh kernel shows: all but other modules' deprecations, each once per place."""
    warnings.simplefilter("default")
    for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
        warnings.filterwarnings("ignore", category=category)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")


@pytest.mark.slow
@pytest.mark.assets
@by_name
def test_solutions_pass_their_checks_and_write_nothing_to_stderr(path, in_notebooks, plain_mpl, capfd):
    _, exercises = exercise_section(path)
    namespace = after_setup(path)
    noisy = []
    for k, (_, solution, check) in enumerate(exercises, start=1):
        run(solution.source, namespace, f"{path.name} solution {k}")
        capfd.readouterr()
        with warnings.catch_warnings(record=True) as caught, LoggedWarnings() as logged:
            kernel_warning_filters()
            try:
                run(check.source, namespace, f"{path.name} check {k}")
            except Exception as error:
                pytest.fail(
                    f"{path.name}: the solution of exercise {k} fails its check: {type(error).__name__}: {error}"
                )
        stderr = [f"{w.category.__name__}: {w.message}" for w in caught] + logged.lines
        stderr += [capfd.readouterr().err.strip()[:300]] if not stderr else []
        if any(stderr):
            noisy.append(f"check {k} writes to stderr: {'; '.join(line for line in stderr if line)}")
    assert not noisy, f"{path.name}: nbgrader scores a check that writes to stderr 0: " + "; ".join(noisy)


@pytest.mark.slow
@by_name
def test_nbgrader_writes_the_student_edition(path, course):
    original, student = nbformat.read(path, as_version=4), released(course, path)
    assert len(student.cells) == len(original.cells) and student.metadata.kernelspec == original.metadata.kernelspec
    k = 0
    for ours, theirs in zip(original.cells, student.cells):
        assert theirs.cell_type == ours.cell_type and grader(theirs)["grade_id"] == grader(ours)["grade_id"]
        if theirs.cell_type == "code":
            assert theirs.outputs == [] and theirs.execution_count is None, (
                f"{path.name}: outputs in the student edition"
            )
        if kind(ours) != "solution":
            assert theirs.source == ours.source, f"{path.name}: nbgrader changed a locked cell"
            continue
        k += 1
        assert STUB in theirs.source and BEGIN not in theirs.source, f"{path.name}, exercise {k}: no stub in place"
        assert not theirs.metadata.get("jupyter", {}).get("source_hidden"), (
            f"{path.name}, exercise {k}: the student edition shows the cell to write in"
        )
        outside, inside, solution_lines = [], False, []
        for line in ours.source.splitlines():
            if line.strip() in (BEGIN, END):
                inside = line.strip() == BEGIN
            elif line.strip():
                (solution_lines if inside else outside).append(line.strip())
        kept = {line.strip() for line in theirs.source.splitlines()}
        leaked = [line for line in solution_lines if line in kept and line not in outside]
        assert not leaked, f"{path.name}, exercise {k}: solution lines survive in the student edition: {leaked}"


@pytest.mark.slow
@pytest.mark.assets
@by_name
def test_student_stubs_fail_their_checks(path, course, in_notebooks, plain_mpl):
    # Each exercise alone, with nbgrader's stub: the other solutions stay in, so one failure cannot hide another's.
    _, exercises = exercise_section(path)
    stubs = [cell for cell in released(course, path).cells if kind(cell) == "solution"]
    passing = []
    for k, (_, _solution, check) in enumerate(exercises, start=1):
        namespace = after_setup(path)
        for j, (_, other, _) in enumerate(exercises, start=1):
            source = stubs[k - 1].source if j == k else other.source
            run(source, namespace, f"{path.name} {'student stub' if j == k else 'solution'} {j}")
        try:
            run(check.source, namespace, f"{path.name} check {k}")
        except FAILS:
            continue
        except Exception as error:
            passing.append(f"exercise {k} raises {type(error).__name__} instead of failing cleanly: {error}")
        else:
            passing.append(f"exercise {k}'s check passes without its solution")
    assert not passing, f"{path.name}: " + "; ".join(passing)


@by_name
def test_every_exercise_has_wrong_solutions_that_its_check_rejects(path):
    _, exercises = exercise_section(path)
    stored = wrong_solutions(path)
    missing = [k for k in range(1, len(exercises) + 1) if not stored.get(k)]
    assert not missing, (
        f"{path.name}: store at least one known-wrong or borrowed solution for exercise(s) {missing} "
        f"in tests/exercise_counterexamples/{path.stem}.py"
    )


def defined_names(source):
    """The functions and classes a cell defines at its top level."""
    return {
        node.name
        for node in ast.parse(source).body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


@functools.cache
def solution_names(path):
    """For each exercise of a lecture, the names its reference solution defines."""
    return [defined_names(solution.source) for _, solution, _ in exercise_section(path)[1]]


@pytest.mark.parametrize("path, k, why", counterexample_cases())
def test_wrong_solutions_are_filed_under_their_exercise(path, k, why):
    # A wrong solution filed under another exercise would still be "rejected": the check's guard turns the missing
    # function's NameError into a hint. So each stored solution defines what its exercise's solution defines.
    names = solution_names(path)
    assert 1 <= k <= len(names), f"{path.name}: no exercise {k}"
    missing = names[k - 1] - defined_names(wrong_solutions(path)[k][why])
    assert not missing, (
        f"{path.name}, exercise {k}, {why!r}: defines none of {sorted(missing)}: filed under the wrong exercise?"
    )


@pytest.mark.slow
@pytest.mark.assets
@pytest.mark.parametrize("path, k, why", counterexample_cases())
def test_wrong_and_borrowed_solutions_fail_their_checks(path, k, why, in_notebooks, plain_mpl, restored_modules):
    _, exercises = exercise_section(path)
    assert 1 <= k <= len(exercises), f"{path.name}: no exercise {k}"
    namespace = after_setup(path)
    for j, (_, solution, _) in enumerate(exercises, start=1):
        source = wrong_solutions(path)[k][why] if j == k else solution.source
        run(source, namespace, f"{path.name} {'wrong solution' if j == k else 'solution'} {j}")
    with pytest.raises(AssertionError, match="hint: "):
        run(exercises[k - 1][2].source, namespace, f"{path.name} check {k}")


def submission(student_edition, answers):
    """The student edition with the solution cells of `answers` ({k: source}) filled in, the others left as stubs."""
    nb = copy.deepcopy(student_edition)
    for k, cell in enumerate((cell for cell in nb.cells if kind(cell) == "solution"), start=1):
        cell.source = answers.get(k, cell.source)
    return nb


@pytest.mark.slow
@pytest.mark.assets
def test_nbgrader_grades_two_submissions_end_to_end(course, tmp_path):
    """collect -> autograde -> feedback -> export, as docs/teaching.md's four commands run them, on one lecture: a
    correct submission gets full marks; one with a hostile borrowed answer (exercise 1), a wrong one (2) and a missing
    one (3) gets the points of exercises 4 and 5, and its feedback shows the hints."""
    path = NOTEBOOK_DIR / f"{GRADED}.ipynb"
    _, exercises = exercise_section(path)
    points = [grader(check)["points"] for _, _, check in exercises]
    stored = wrong_solutions(path)
    hostile = next(source for why, source in stored[1].items() if why.startswith("hostile"))
    student_edition = released(course, path)
    downloads = tmp_path / "downloads"  # as a learning platform exports them: a notebook, and a zip of one
    downloads.mkdir()
    correct = {k: solution.source for k, (_, solution, _) in enumerate(exercises, start=1)}
    nbformat.write(submission(student_edition, correct), downloads / f"alice_{GRADED}.ipynb")
    partial = {1: hostile, 2: next(iter(stored[2].values())), 4: correct[4], 5: correct[5]}
    with zipfile.ZipFile(downloads / f"bob_{GRADED}.zip", "w") as archive:
        archive.writestr(f"bob_{GRADED}.ipynb", nbformat.writes(submission(student_edition, partial)))

    grading.collect(GRADED, downloads, course)
    grading.autograde(GRADED, course)
    grades = grading.feedback(GRADED, course)

    rows = {row["student_id"]: row for row in csv.DictReader(grades.open()) if row["assignment"] == GRADED}
    scores = {student: (float(row["score"]), float(row["max_score"])) for student, row in rows.items()}
    assert scores == {"alice": (sum(points), sum(points)), "bob": (points[3] + points[4], sum(points))}, (
        f"gradebook {scores}; points per exercise {points}"
    )
    graded = nbformat.read(course / "autograded" / "bob" / GRADED / f"{GRADED}.ipynb", as_version=4)
    errors = {
        int(grader(cell)["grade_id"][len("exercise") : -len("_check")]): output.evalue
        for cell in graded.cells
        if kind(cell) == "check"
        for output in cell.outputs
        if output.output_type == "error"
    }
    assert sorted(errors) == [1, 2, 3], f"bob's checks that failed: {sorted(errors)}"
    assert errors[1].startswith("hint: ") and "solved without" in errors[1], f"exercise 1 (hostile): {errors[1]}"
    assert errors[2].startswith("hint: "), f"exercise 2 (wrong): {errors[2]}"
    feedback = html.unescape((course / "feedback" / "bob" / GRADED / f"{GRADED}.html").read_text(encoding="utf-8"))
    for k in (1, 2):
        assert errors[k] in feedback, f"the feedback does not show exercise {k}'s hint: {errors[k]}"
    assert "Exercise 5: OK" in feedback and re.search(
        rf"Score: {points[3] + points[4]}\.0 / {sum(points)}\.0", feedback
    )


@pytest.mark.grading
def test_nbgrader_comes_from_its_own_lock_without_changing_a_pin():
    spec = importlib.util.spec_from_file_location("lock_addon", ROOT / "tools" / "lock_addon.py")
    lock_addon = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = lock_addon  # its dataclass looks its module up there
    spec.loader.exec_module(lock_addon)
    grading = lock_addon.ADDONS["grading"]
    assert lock_addon.problems(grading) == [], "requirements-grading.lock does not fit; run: make lock-grading"
    locked = lock_addon.entries(grading.lock)
    for name, version in locked.items():
        installed = importlib.metadata.version(name)
        assert installed == version, f"{name} {installed} installed, {version} locked; run: make setup"
