"""Build the student edition: every lecture notebook with its exercise solutions replaced by stubs.

    python tools/student_edition.py notebooks build/student/notebooks      (what `make student` runs)

A code cell tagged `solution` holds its solution between two marker lines:

    def scaled_scores(Q, K):
        \"\"\"Q: (N, d_k), K: (M, d_k) -> (N, M).\"\"\"
        ### BEGIN SOLUTION
        return Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5
        ### END SOLUTION

The student edition replaces each such region, markers included, by one line at the marker's indentation:
`raise NotImplementedError("Exercise k: replace this line with your solution")`. Everything else (the lecture,
the `check` cells that test the exercises) is kept; all outputs are cleared, so the hints are not given away.
The format of the exercise section is described in tests/test_exercises.py, which proves the pairing.
"""

import copy
import sys
from pathlib import Path

import nbformat

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def stub(exercise: int) -> str:
    return f'raise NotImplementedError("Exercise {exercise}: replace this line with your solution")'


def strip_solution(source: str, exercise: int) -> str:
    """The source of a `solution` cell with every BEGIN..END region (markers included) replaced by the stub."""
    lines, inside, regions = [], False, 0
    for number, line in enumerate(source.splitlines(), start=1):
        text = line.strip()
        if BEGIN in text or END in text:
            if text not in (BEGIN, END):
                raise ValueError(f"exercise {exercise}, line {number}: {text!r}: put the marker alone on its line")
            if text == BEGIN:
                if inside:
                    raise ValueError(f"exercise {exercise}, line {number}: {BEGIN} inside another solution region")
                inside, regions = True, regions + 1
                lines.append(line[: len(line) - len(line.lstrip())] + stub(exercise))
            else:
                if not inside:
                    raise ValueError(f"exercise {exercise}, line {number}: {END} without a {BEGIN} before it")
                inside = False
        elif not inside:
            lines.append(line)
    if inside:
        raise ValueError(f"exercise {exercise}: {BEGIN} without an {END} after it")
    if not regions:
        raise ValueError(f"exercise {exercise}: a solution cell without {BEGIN} / {END} markers")
    return "\n".join(lines)


def tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def student_notebook(nb):
    """A copy of nb with solutions stubbed (the k-th `solution` cell is exercise k) and every output cleared."""
    nb = copy.deepcopy(nb)
    exercise = 0
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if "solution" in tags(cell):
            exercise += 1
            cell.source = strip_solution(cell.source, exercise)
        elif BEGIN in cell.source or END in cell.source:
            raise ValueError(f"cell {index}: solution markers in a cell not tagged 'solution'")
        cell.outputs = []
        cell.execution_count = None
    return nb


def count_exercises(nb) -> int:
    return sum(cell.cell_type == "code" and "solution" in tags(cell) for cell in nb.cells)


def main(src_dir, out_dir) -> list[Path]:
    """Write the student edition of every src_dir/NN_*.ipynb into out_dir; returns the written paths."""
    src_dir, out_dir = Path(src_dir), Path(out_dir)
    notebooks = sorted(src_dir.glob("[0-9]*.ipynb"))
    if not notebooks:
        raise ValueError(f"no lecture notebooks (NN_*.ipynb) in {src_dir}")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        try:
            student = student_notebook(nb)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from error
        target = out_dir / path.name
        nbformat.write(student, target)
        written.append(target)
        exercises = count_exercises(nb)
        print(f"{path.name}: {exercises} exercises" if exercises else f"{path.name}: no exercises (add some!)")
    print(f"student edition of {len(written)} notebooks in {out_dir}")
    return written


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python tools/student_edition.py SOURCE_DIR OUTPUT_DIR")
    try:
        main(sys.argv[1], sys.argv[2])
    except ValueError as error:
        sys.exit(f"error: {error}")
