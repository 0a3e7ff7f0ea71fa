"""Print how long each notebook took under nbval, so the cost of the series stays visible."""

from collections import defaultdict

import scratch  # noqa: F401  (pins the numeric path before any test imports torch)

_notebook_seconds = defaultdict(float)


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
