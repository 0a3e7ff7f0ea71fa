"""The committed notebooks are what nbval needs: executed top to bottom in one kernel, clean, offline."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
HUB_ID = re.compile(r"from_pretrained\(\s*[\"'](?!\.|/)[\w.-]+/?[\w.-]*[\"']")


def code_cells(path):
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def test_there_are_notebooks_and_they_are_numbered():
    assert NOTEBOOKS, "no notebooks found"
    for path in NOTEBOOKS:
        assert re.fullmatch(r"\d\d[a-z]?_[a-z0-9_]+\.ipynb", path.name), (
            f"{path.name}: name it NN_topic.ipynb (an optional notebook beside lecture NN: NNb_topic.ipynb)"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_executed_in_order(path):
    counts = [c["execution_count"] for c in code_cells(path) if "".join(c["source"]).strip()]
    assert None not in counts, f"{path.name}: unexecuted cells; run `make outputs NB={path.relative_to(ROOT)}`"
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.name}: cells not executed top to bottom in one kernel; run `make outputs`"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_clean_outputs(path):
    nb = json.loads(path.read_text())
    assert "widgets" not in nb["metadata"], f"{path.name}: widget state stored; run `make outputs`"
    assert path.stat().st_size < 3_000_000, f"{path.name}: keep outputs lean"
    for i, cell in enumerate(code_cells(path)):
        source = "".join(cell["source"])
        tags = cell["metadata"].get("tags", [])
        assert "execution" not in cell["metadata"], f"{path.name} cell {i}: timestamps; run `make outputs`"
        # nbval's markers are cell tags (nbval-ignore-output, nbval-skip, raises-exception), not code a student reads
        assert "NBVAL_" not in source, (
            f"{path.name} cell {i}: an nbval marker in the code; give the cell the tag instead (NBVAL_IGNORE_OUTPUT "
            "is the tag nbval-ignore-output)"
        )
        assert not HUB_ID.search(source), f"{path.name} cell {i}: loads from the hub; use course.assets"
        # under nbval a trailing ';' does not hide the value, so the stored and fresh outputs differ
        assert not source.rstrip().endswith(";"), f"{path.name} cell {i}: end plot cells with plt.show()"
        for output in cell["outputs"]:
            if output["output_type"] == "error":
                assert "raises-exception" in tags, f"{path.name} cell {i}: stored error {output['ename']}"
