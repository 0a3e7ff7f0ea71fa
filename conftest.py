"""nbval's comparison per machine, how `make test` shares the tests between its workers, and how long each notebook
took, so the cost of the series stays visible."""

import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

import course
from course import numerics

course.prepare_process()  # offline, and the pinned numeric path before any test imports torch

_notebook_seconds = defaultdict(float)


def _relaxed_cells(path: Path, here: dict) -> tuple[dict | None, list[int]]:
    notebook = json.loads(path.read_text())
    return numerics.outputs_made_on(notebook), numerics.cells_checked_by_claims(notebook, here)


def pytest_report_header(config):
    """Which CPU each lecture's outputs came from, and which cells are therefore checked by their claims only."""
    if config.getoption("nbval_lax", default=False) or not config.getoption("nbval", default=False):
        return []
    here = numerics.this_machine()
    lines = [
        f"this machine: {here['cpu_vendor'] or 'unknown vendor'} ({here['cpu_model']}), {here['numeric_path']} path"
    ]
    for path in sorted(Path(config.rootpath, "notebooks").glob("[0-9]*.ipynb")):
        made_on, relaxed = _relaxed_cells(path, here)
        if relaxed:
            source = f"{made_on['cpu_vendor']} ({made_on['cpu_model']})" if made_on else "an unrecorded machine"
            lines.append(
                f"{path.name}: outputs made on {source}; its {len(relaxed)} cpu-sensitive cell(s) {relaxed} "
                "are checked by their claims, not digit for digit"
            )
    if len(lines) == 1:
        lines.append("every notebook's outputs were made on this CPU vendor: every cell is compared digit for digit")
    return lines


# The exercise tests' parameters start with the exercise notebook's name: test_structure[03_attention.ipynb],
# test_wrong_and_borrowed_solutions_fail_their_checks[03_attention-ex2-...].
EXERCISE_NOTEBOOK = re.compile(r"\[(\d\d[a-z]?_[a-z_]+)")


def worker_group(nodeid: str) -> str:
    """The unit `make test` hands to one worker (pytest -n, --dist loadfile): a file, as loadfile does (a notebook's
    cells share one kernel; a test file's module fixtures load once), except the exercise tests, which go notebook by
    notebook: each exercise notebook's set-up then loads once, on the worker that takes it, and the exercises no
    longer queue on a single worker."""
    file = nodeid.split("::")[0]
    if file.endswith("test_exercises.py") and (notebook := EXERCISE_NOTEBOOK.search(nodeid)):
        return f"{file}:{notebook[1]}"
    return file


@pytest.hookimpl(optionalhook=True)  # a pytest without xdist (-p no:xdist) has no such hook
def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile with worker_group as the unit."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling  # imported here: only pytest -n has xdist's controller loaded

    class ByNotebookScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    return ByNotebookScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """The notebooks first; and on a CPU of another vendor than the one that made a notebook's outputs, its
    cpu-sensitive cells still run (their claims must hold) but nbval does not compare their printed digits
    (numerics.cells_checked_by_claims)."""
    # The notebooks are the longest units: workers that finish them then share the many short ones.
    items.sort(key=lambda item: not item.nodeid.split("::")[0].endswith(".ipynb"))  # stable: cells stay in order
    here, relaxed = numerics.this_machine(), {}
    for item in items:
        cell_num, options = getattr(item, "cell_num", None), getattr(item, "options", None)
        if cell_num is None or options is None or not str(item.fspath).endswith(".ipynb"):
            continue
        path = Path(str(item.fspath))
        if path not in relaxed:
            relaxed[path] = set(_relaxed_cells(path, here)[1])
        if cell_num in relaxed[path]:
            options["check"] = False


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _notebook_seconds[path] += report.duration


def pytest_terminal_summary(terminalreporter):
    if not _notebook_seconds:
        return
    terminalreporter.section("notebook run times")
    for path, seconds in sorted(_notebook_seconds.items()):
        terminalreporter.write_line(f"{seconds:7.1f} s  {path}")
    terminalreporter.write_line(f"{sum(_notebook_seconds.values()):7.1f} s  in total")
