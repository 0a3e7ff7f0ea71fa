"""Find the cells whose stored outputs depend on every bit of a training run, and tag them `cpu-sensitive`.

Runs the notebooks under strict nbval in the course's kernel with one thing changed: MKL's code branch (MKL_CBWR=AVX2
instead of COMPATIBLE), which changes the last bits of every matrix product (and MKL's sqrt), as another CPU vendor
does. A cell whose printed output then differs is one whose digits another vendor cannot reproduce; one whose claims
fail is a sentence that does not hold off this machine's exact path (fix the sentence). Each takes as long as the
notebook's own run.

    .venv/bin/python tools/sensitive_cells.py NB...          report
    .venv/bin/python tools/sensitive_cells.py --tag NB...    and add the tag to every cell whose output differed

Tags are only added: one perturbed run is one sample of another machine, so a cell tagged once stays tagged.
`make test` compares a tagged cell digit for digit only on the CPU vendor that made the outputs
(course.numerics.cells_checked_by_claims).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat

from course import kernel, numerics

ROOT = Path(__file__).resolve().parents[1]
# course warns in a kernel off the pinned path; here that is the point, and the warning is not the cell's output
PERTURBATION = {"MKL_CBWR": "AVX2", "PYTHONWARNINGS": "ignore:torch was imported before course"}


def perturbed_kernel(folder: Path) -> Path:
    """A kernel named like the course's, with the perturbation, in a Jupyter data folder that shadows the real one."""
    spec = kernel.kernel_spec()
    spec["env"] = {**spec.get("env", {}), **PERTURBATION}
    path = folder / "kernels" / kernel.KERNEL_NAME / "kernel.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(spec, indent=1))
    return folder


def failures(notebooks: list[Path]) -> dict[Path, dict[int, str]]:
    """{notebook: {code cell (nbval's numbering): 'outputs differ' or the error}} under the perturbed kernel."""
    with tempfile.TemporaryDirectory() as tmp:
        data, report = perturbed_kernel(Path(tmp) / "jupyter"), Path(tmp) / "report.xml"
        env = {**os.environ, "JUPYTER_PATH": str(data), "SCRATCH_CLAIMS": "strict"}
        command = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", f"--junitxml={report}", *map(str, notebooks)]
        subprocess.run(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
        found: dict[Path, dict[int, str]] = {path: {} for path in notebooks}
        for case in ET.parse(report).iter("testcase"):
            problem = case.find("failure")
            if problem is None:
                continue
            number = int(case.get("name").rsplit(" ", 1)[-1])
            path = next(p for p in notebooks if p.stem in (case.get("classname") or "").replace(".", "/"))
            text = (problem.get("message") or "") + (problem.text or "")
            error = [line for line in text.splitlines() if "Error" in line]  # the exception's own line, at the end
            found[path][number] = "outputs differ" if "Cell outputs differ" in text else (error or [text])[-1].strip()
    return found


def tag(path: Path, cells: list[int]) -> None:
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for number in cells:
        tags = code[number].metadata.setdefault("tags", [])
        if numerics.SENSITIVE_TAG not in tags:
            tags.append(numerics.SENSITIVE_TAG)
    nbformat.write(notebook, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--tag", action="store_true", help="tag every cell whose output differed")
    args = parser.parse_args()
    paths = [p.resolve() for p in args.notebooks]
    broken_claims = False
    for path, cells in failures(paths).items():
        code = [cell for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"]
        tagged = [i for i, cell in enumerate(code) if numerics.SENSITIVE_TAG in cell.metadata.get("tags", [])]
        differ = sorted(i for i, why in cells.items() if why == "outputs differ")
        errors = {i: why for i, why in cells.items() if why != "outputs differ"}
        print(f"{path.name}: outputs differ in cells {differ}; tagged {tagged}")
        for i, why in sorted(errors.items()):
            broken_claims = True
            print(f"  cell {i} FAILED off the exact path (a claim that does not hold?): {why}")
        if args.tag and differ:
            tag(path, differ)
    return 1 if broken_claims else 0


if __name__ == "__main__":
    sys.exit(main())
