"""Every lecture ends with exercises, and their solutions and checks are paired.

The exercise section of a notebook is, after the lecture's "## Summary":
a markdown cell "## Exercises"; one code cell tagged `exercise-setup` (imports and objects, nothing from the
lecture, and no reference implementation of any exercise's function); then for each exercise k a markdown cell
"### Exercise k · title (easy|medium|hard, about N min)" with a "**Practises:**" line, a code cell tagged
`solution` (the solution between ### BEGIN / END SOLUTION) and a code cell tagged `check` ("# Check exercise k",
asserts with "hint: ..." messages).

The pairing: with the solutions every check passes; in the student edition (tools/student_edition.py, which
replaces each solution by a `raise NotImplementedError`) every check fails until solved; and every known-wrong or
borrowed solution stored in tests/exercise_counterexamples/NN_topic.py (`WRONG_SOLUTIONS = {k: {"why it is
wrong": "source of a whole solution cell"}}`) fails its check, so a check passes only for a correct solution.
All run the exercise section alone with plain `exec`, as a student's fresh kernel would.
"""

import ast
import copy
import importlib.util
import linecache
import re
import runpy
import symtable
from pathlib import Path

import matplotlib
import nbformat
import pytest

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "exercises"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9]*.ipynb"))
spec = importlib.util.spec_from_file_location("student_edition", ROOT / "tools" / "student_edition.py")
student_edition = importlib.util.module_from_spec(spec)
spec.loader.exec_module(student_edition)
BEGIN, END = student_edition.BEGIN, student_edition.END
TITLE = re.compile(r"^### Exercise (\d+) · .+ \((easy|medium|hard), about (\d+) min\)\s*$", re.MULTILINE)
LEVELS = ["easy", "medium", "hard"]
FAILS = (NotImplementedError, AssertionError, NameError)
by_name = pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
COUNTEREXAMPLES = ROOT / "tests" / "exercise_counterexamples"


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


def exercise_section(path):
    """(setup cell, [(markdown, solution, check) per exercise]) of a notebook; fails with what is missing."""
    cells = nbformat.read(path, as_version=4).cells
    assert cells and cells[0].cell_type == "markdown" and cells[0].source.startswith("# Exercises"), (
        f"{path.name}: starts with a markdown cell '# Exercises · lecture N: topic'"
    )
    section = cells[1:]
    setups = [c for c in section if c.cell_type == "code" and "exercise-setup" in tags(c)]
    assert len(setups) == 1, f"{path.name}: needs exactly one code cell tagged 'exercise-setup' (found {len(setups)})"
    assert section and section[0] is setups[0], f"{path.name}: the 'exercise-setup' cell comes right after the title"
    exercises = []
    for i, cell in enumerate(section[1:], start=1):
        if cell.cell_type == "code":
            assert {"solution", "check"} & set(tags(cell)), (
                f"{path.name}: an untagged code cell in the exercise section (tag it 'solution' or 'check'):\n"
                f"{cell.source[:200]}"
            )
        if cell.cell_type != "code" or "solution" not in tags(cell):
            continue
        k = len(exercises) + 1
        text, check = section[i - 1], section[i + 1] if i + 1 < len(section) else None
        assert text.cell_type == "markdown" and re.search(rf"^### Exercise {k} · ", text.source, re.MULTILINE), (
            f"{path.name}: solution {k} must follow a markdown cell '### Exercise {k} · title (easy|medium|hard)'"
        )
        assert check is not None and check.cell_type == "code" and "check" in tags(check), (
            f"{path.name}: solution {k} must be followed by a code cell tagged 'check'"
        )
        exercises.append((text, cell, check))
    checks = [c for c in section if c.cell_type == "code" and "check" in tags(c)]
    assert len(checks) == len(exercises), f"{path.name}: every 'check' cell directly follows its 'solution' cell"
    return setups[0], exercises


def run(source, namespace, name):
    """exec a cell's source like a notebook kernel would (without IPython); tracebacks show the cell's lines."""
    filename = f"<{name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), namespace)


@pytest.fixture
def in_notebooks(monkeypatch):
    monkeypatch.chdir(NOTEBOOK_DIR)  # where a student's kernel starts


@pytest.fixture
def plain_mpl():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


def test_there_are_lecture_notebooks():
    assert len(NOTEBOOKS) >= 4, "notebooks/NN_*.ipynb not found"


@by_name
def test_structure(path):
    setup, exercises = exercise_section(path)
    assert 3 <= len(exercises) <= 6, f"{path.name}: {len(exercises)} exercises; every lecture needs 3 to 6"
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
        student_edition.strip_solution(solution.source, k)  # balanced markers, at least one region
        assert re.search(r"^\s*def |^\s*class ", solution.source, re.MULTILINE), (
            f"{where}: the solution defines a function"
        )
        assert check.source.splitlines()[0].strip() == f"# Check exercise {k}", (
            f"{where}: the check cell's first line is '# Check exercise {k}'"
        )
        assert re.search(r"\bassert\b", check.source) and re.search(r"[\"']hint: ", check.source), (
            f"{where}: the check needs an assert with a message starting with 'hint: '"
        )
        for cell in (setup, solution, check):
            assert BEGIN not in cell.source or cell is solution, f"{where}: solution markers outside the solution cell"
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


# A redefined print cannot make a failing assert pass: the check's last line prints only after every assert passed.
MAY_BE_LOOKED_UP = {"print"}


@by_name
def test_checks_import_what_they_rely_on(path):
    """A solution cell runs in the same namespace as the checks, so it can rebind any name there (a `forbid` that does
    nothing, a fake `torch`, `all = lambda _: True`). Each check therefore imports what it uses itself: torch,
    `forbid` and the other tools of scratch.exercises, and the built-ins. It looks up only the exercise's answers
    (the names solution cells define) and the set-up's data and model functions (`tiny_lm`, `toy_model(ids)`: a
    solution cell that rebinds them changes its own inputs as well; README, "Using it in class"). The instruments
    that measure a solution (LookupOnly, CountOps, LargestTensor) are classes of scratch.exercises, not set-up."""
    setup, exercises = exercise_section(path)
    data = top_level_names(setup.source, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.FunctionDef)
    answers = set().union(*(top_level_names(s.source, ast.stmt) for _, s, _ in exercises))
    problems = []
    for k, (_, _, check) in enumerate(exercises, start=1):
        body = ast.parse(check.source).body
        first_other = next((i for i, node in enumerate(body) if not isinstance(node, ast.Import | ast.ImportFrom)), 0)
        late = [ast.unparse(node) for node in body[first_other:] if isinstance(node, ast.Import | ast.ImportFrom)]
        if late:
            problems.append(f"check {k}: imports go at the top of the cell, before any use: {late}")
        looked_up = free_globals(check.source) - answers - data - MAY_BE_LOOKED_UP
        if looked_up:
            problems.append(f"check {k} looks up {sorted(looked_up)}: import them in the check itself")
    assert not problems, (
        f"{path.name}: a solution cell could rebind these names and switch the check off "
        "(e.g. `from builtins import len`, `import torch`, `from scratch.exercises import forbid`):\n"
        + "\n".join(problems)
    )


@pytest.mark.slow
@pytest.mark.assets
@by_name
def test_solutions_pass_their_checks(path, in_notebooks, plain_mpl):
    setup, exercises = exercise_section(path)
    namespace = {"__name__": "__main__"}
    run(setup.source, namespace, f"{path.name} exercise setup")
    for k, (_, solution, check) in enumerate(exercises, start=1):
        run(solution.source, namespace, f"{path.name} solution {k}")
        try:
            run(check.source, namespace, f"{path.name} check {k}")
        except Exception as error:
            pytest.fail(f"{path.name}: the solution of exercise {k} fails its check: {type(error).__name__}: {error}")


@pytest.mark.slow
@pytest.mark.assets
@by_name
def test_student_stubs_fail_their_checks(path, in_notebooks, plain_mpl):
    # Each exercise alone: the other solutions stay in, so one exercise's failure cannot hide another's.
    setup, exercises = exercise_section(path)
    after_setup = {"__name__": "__main__"}
    run(setup.source, after_setup, f"{path.name} exercise setup")
    passing = []
    for k, (_, _solution, check) in enumerate(exercises, start=1):
        namespace = copy.copy(after_setup)
        for j, (_, other, _) in enumerate(exercises, start=1):
            source = student_edition.strip_solution(other.source, k) if j == k else other.source
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


@pytest.mark.slow
@pytest.mark.assets
@pytest.mark.parametrize("path, k, why", counterexample_cases())
def test_wrong_and_borrowed_solutions_fail_their_checks(path, k, why, in_notebooks, plain_mpl):
    setup, exercises = exercise_section(path)
    assert 1 <= k <= len(exercises), f"{path.name}: no exercise {k}"
    namespace = {"__name__": "__main__"}
    run(setup.source, namespace, f"{path.name} exercise setup")
    for j, (_, solution, _) in enumerate(exercises, start=1):
        source = wrong_solutions(path)[k][why] if j == k else solution.source
        run(source, namespace, f"{path.name} {'wrong solution' if j == k else 'solution'} {j}")
    with pytest.raises(AssertionError, match="hint: "):
        run(exercises[k - 1][2].source, namespace, f"{path.name} check {k}")


def test_strip_solution_replaces_each_region_at_its_indentation():
    source = f'def f(x):\n    """doc"""\n    {BEGIN}\n    y = x + 1\n    return y\n    {END}\n'
    assert student_edition.strip_solution(source, 3) == (
        'def f(x):\n    """doc"""\n    raise NotImplementedError("Exercise 3: replace this line with your solution")'
    )
    two = f"class A:\n    def f(self):\n        {BEGIN}\n        pass\n        {END}\n{BEGIN}\nx = 1\n{END}"
    assert student_edition.strip_solution(two, 1).splitlines() == [
        "class A:",
        "    def f(self):",
        "        " + student_edition.stub(1),
        student_edition.stub(1),
    ]


@pytest.mark.parametrize(
    "source, problem",
    [
        ("def f():\n    return 1", "without ### BEGIN SOLUTION / ### END SOLUTION markers"),
        (f"def f():\n    {BEGIN}\n    return 1", "without an ### END SOLUTION"),
        (f"def f():\n    return 1\n    {END}", "without a ### BEGIN SOLUTION"),
        (f"def f():\n    {BEGIN}\n    {BEGIN}\n    {END}\n    {END}", "inside another solution region"),
        (f"def f():\n    {BEGIN} here\n    {END}", "alone on its line"),
    ],
)
def test_strip_solution_rejects_bad_markers(source, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        student_edition.strip_solution(source, 1)


def test_markers_outside_solution_cells_are_an_error():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"{BEGIN}\nx = 1\n{END}")])
    with pytest.raises(ValueError, match="not tagged 'solution'"):
        student_edition.student_notebook(nb)


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    written = student_edition.main(NOTEBOOK_DIR, out)
    assert sorted(p.name for p in written) == [p.name for p in NOTEBOOKS]
    return out


@by_name
def test_student_edition_has_no_outputs_and_no_solutions(path, student_dir):
    original = nbformat.read(path, as_version=4)
    student = nbformat.read(student_dir / path.name, as_version=4)
    assert student.metadata == original.metadata
    assert len(student.cells) == len(original.cells)
    k = 0
    for ours, theirs in zip(original.cells, student.cells):
        assert theirs.cell_type == ours.cell_type and theirs.metadata == ours.metadata
        if theirs.cell_type != "code":
            assert theirs.source == ours.source
            continue
        assert theirs.outputs == [] and theirs.execution_count is None, (
            f"{path.name}: outputs left in the student edition"
        )
        if "solution" not in tags(ours):
            assert theirs.source == ours.source, f"{path.name}: a non-solution cell changed"
            continue
        k += 1
        assert BEGIN not in theirs.source and END not in theirs.source
        assert student_edition.stub(k) in theirs.source
        outside, inside, solution_lines = [], False, []
        for line in ours.source.splitlines():
            if line.strip() in (BEGIN, END):
                inside = line.strip() == BEGIN
            elif line.strip():
                (solution_lines if inside else outside).append(line.strip())
        kept = {line.strip() for line in theirs.source.splitlines()}
        leaked = [line for line in solution_lines if line in kept and line not in outside]
        assert not leaked, f"{path.name}, exercise {k}: solution lines survive in the student edition: {leaked}"
