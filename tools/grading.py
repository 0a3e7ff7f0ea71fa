"""The steps of a term with nbgrader (docs/teaching.md, "Exercises and grading"); the make targets run these.

    python tools/grading.py release [NN_topic ...]      make release (and make student): the student edition
    python tools/grading.py collect NN_topic FOLDER      make collect: the students' notebooks into submitted/
    python tools/grading.py autograde NN_topic           make autograde: run and score every submission
    python tools/grading.py feedback NN_topic            make feedback: HTML feedback and the gradebook as CSV

nbgrader works in a course folder (build/grading, set in nbgrader_config.py; --root DIR for another) with one
assignment per lecture, NN_topic, holding one notebook, NN_topic.ipynb. `release` stages exercises/NN_topic.ipynb
there as source/NN_topic/NN_topic.ipynb, rather than moving the committed files, with its solution cells shown
(the committed notebooks collapse them, so that a reader does not see a solution by accident; in the student
edition they hold the stub to replace), then runs `nbgrader generate_assignment`: release/NN_topic/NN_topic.ipynb
is the student edition (solutions replaced by nbgrader's stub, outputs cleared, checksums of the locked cells
recorded in gradebook.db).

`collect` copies FOLDER's files (notebooks named <student id>_NN_topic.ipynb or <student id>/NN_topic.ipynb,
or .zip archives of them, as a learning platform exports them) to downloaded/NN_topic/archive/ and runs
`nbgrader zip_collect`; on a shared JupyterHub with nbgrader's exchange, `nbgrader collect NN_topic` does the
same. `autograde` runs each submission top to bottom in a fresh kernel with the set-up and check cells restored
from the source (`nbgrader autograde --create`: students not yet in the gradebook are added), then writes the tamper
report (tools/tamper.py): tamper_report.csv in the course folder lists, per student and exercise, each line of the
student's own cells that reaches into the checking machinery or around a method rule, and a note at the top of each
flagged student's autograded notebook carries it into their feedback; scores stay as autograded. `feedback` writes
feedback/<student>/NN_topic/NN_topic.html (each check's output, hints included) and exports every score to
grades.csv in the course folder.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "exercises"
COURSE = ROOT / "build" / "grading"
_spec = importlib.util.spec_from_file_location("tamper", Path(__file__).resolve().parent / "tamper.py")
tamper = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tamper)


def assignments(source: Path = EXERCISES) -> list[str]:
    """NN_topic for every exercises/NN_topic.ipynb."""
    return [path.stem for path in sorted(source.glob("[0-9][0-9]_*.ipynb"))]


def nbgrader(*args: str, root: Path = COURSE) -> None:
    """Run an nbgrader command from the repository (which holds nbgrader_config.py) on the course folder `root`."""
    command = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={root}"]
    print("$", " ".join(command[2:]), flush=True)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])  # nbgrader runs alembic
    subprocess.run(command, cwd=ROOT, check=True, env={**os.environ, "PATH": path})


def stage(assignment: str, root: Path = COURSE, source: Path = EXERCISES) -> Path:
    """Copy exercises/<assignment>.ipynb to root/source/<assignment>/, its solution cells shown; the copy's path."""
    nb = json.loads((source / f"{assignment}.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("solution"):
            jupyter = cell["metadata"].get("jupyter", {})
            jupyter.pop("source_hidden", None)
            if not jupyter:
                cell["metadata"].pop("jupyter", None)
    target = root / "source" / assignment / f"{assignment}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


def release(names: list[str], root: Path = COURSE, source: Path = EXERCISES) -> list[Path]:
    """Stage and generate the student edition of each assignment (default: all); the released notebooks' paths."""
    every = assignments(source)
    names = names or every
    unknown = sorted(set(names) - set(every))
    if unknown:
        raise SystemExit(f"no exercises/{unknown[0]}.ipynb; the assignments are {', '.join(every)}")
    for name in names:
        stage(name, root, source)
    for pattern in ["*"] if set(names) == set(every) else names:  # one nbgrader run for all of them
        nbgrader("generate_assignment", pattern, "--force", root=root)
    return [root / "release" / name / f"{name}.ipynb" for name in names]


def collect(assignment: str, folder: Path, root: Path = COURSE) -> None:
    archive = root / "downloaded" / assignment / "archive"
    if archive.exists():
        shutil.rmtree(archive)
    shutil.copytree(folder, archive)
    nbgrader("zip_collect", assignment, "--force", root=root)


def autograde(assignment: str, root: Path = COURSE) -> Path:
    """Run and score every submission, then write the tamper report; the report's path."""
    nbgrader("autograde", assignment, "--create", "--force", root=root)
    path, rows = tamper.report(assignment, root)
    flagged = sorted({row["student"] for row in rows})
    print(f"tamper report: {len(rows)} line(s) of {len(flagged)} student(s) flagged in {path}", flush=True)
    for student in flagged:
        exercises = sorted({row["exercise"] for row in rows if row["student"] == student})
        print(f"  {student}: {', '.join(exercises)} (scores unchanged: read these lines and decide)", flush=True)
    return path


def feedback(assignment: str, root: Path = COURSE) -> Path:
    nbgrader("generate_feedback", assignment, "--force", root=root)
    grades = root / "grades.csv"
    nbgrader("export", f"--to={grades}", root=root)
    return grades


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=COURSE, help="nbgrader's course folder (default build/grading)")
    steps = parser.add_subparsers(dest="step", required=True)
    steps.add_parser("release").add_argument("assignments", nargs="*", help="NN_topic (default: every lecture)")
    for step in ("collect", "autograde", "feedback"):
        sub = steps.add_parser(step)
        sub.add_argument("assignment", help="NN_topic, e.g. 03_attention")
        if step == "collect":
            sub.add_argument("folder", type=Path, help="the students' notebooks or .zip archives of them")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.step == "release":
        for path in release(args.assignments, root):
            print(f"student edition: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    elif args.step == "collect":
        collect(args.assignment, args.folder.resolve(), root)
    elif args.step == "autograde":
        autograde(args.assignment, root)
    else:
        print(f"gradebook: {feedback(args.assignment, root)}; feedback in {root / 'feedback'}")


if __name__ == "__main__":
    main()
