"""The tools behind `make test-latest` and `make sizing` read their runs' records right (no run needed here)."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load(name):
    sys.path.insert(0, str(ROOT / "tools"))  # test_latest imports tools/lock.py
    try:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "tools"))


def test_test_latest_names_the_notebook_the_cell_and_the_error(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(
        """<testsuites><testsuite>
        <testcase classname="notebooks.03_attention.ipynb" name="Cell 0"/>
        <testcase classname="notebooks.03_attention.ipynb" name="Cell 1">
          <failure message="Cell 1 failed">Traceback (most recent call last):
  File "x", line 1
ImportError: cannot import name 'foo' from 'transformers'</failure></testcase>
        <testcase classname="notebooks.10_decoding.ipynb" name="Cell 0"/>
        </testsuite></testsuites>"""
    )
    cells, failed = load("test_latest").failures(junit)
    assert cells == {"03_attention.ipynb": 2, "10_decoding.ipynb": 1}
    assert failed == {"03_attention.ipynb": ["Cell 1: ImportError: cannot import name 'foo' from 'transformers'"]}


def test_sizing_reads_time_v_and_tabulates_both_kernels():
    sizing = load("sizing")
    assert sizing.seconds("1:02:03.5") == 3723.5 and sizing.seconds("2:03.25") == 123.25
    records = [
        {
            "notebook": "03_attention.ipynb",
            "kernel": "scratch",
            "ok": True,
            "cpu_s": 20.0,
            "wall_s": 30.0,
            "peak_mib": 900,
        },
        {
            "notebook": "03_attention.ipynb",
            "kernel": "scratch-fast",
            "ok": True,
            "cpu_s": 10.0,
            "wall_s": 15.0,
            "peak_mib": 950,
        },
        {"notebook": "07_bert.ipynb", "kernel": "scratch", "ok": False, "error": "boom"},
    ]
    table = sizing.table(records, ["scratch", "scratch-fast"])
    assert "| 03_attention | 900 MiB | 20 s | 30 s | 950 MiB | 10 s | 15 s | 2.00× |" in table
    assert "| 07_bert | failed | failed | failed | failed | failed | failed | – |" in table
    records[1].update(ok=False, error="AssertionError: the text says ...")
    assert (
        "| 03_attention | 900 MiB | 20 s | 30 s | 950 MiB (failed) | 10 s (failed) | 15 s (failed) | 2.00× |"
        in sizing.table(records, ["scratch", "scratch-fast"])
    )
