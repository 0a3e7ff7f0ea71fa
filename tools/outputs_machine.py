"""Which CPU made each notebook's stored outputs: `make outputs` checks before it regenerates and records after.

    python tools/outputs_machine.py check NB...    warn for each notebook whose outputs came from another CPU vendor
    python tools/outputs_machine.py record NB...   write this machine into each notebook's metadata

The record (`metadata.scratch.outputs_made_on`, course.numerics.this_machine) is what `make test` compares against:
a cell tagged `cpu-sensitive` is compared digit for digit only on a CPU of the same vendor (docs/numerics.md,
"Which machines compare outputs digit for digit"). Regenerating on another vendor moves that promise to the new
vendor for the whole notebook, hence the warning.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

from course import numerics


def describe(made_on: dict | None) -> str:
    if not made_on:
        return "an unrecorded machine"
    vendor = made_on.get("cpu_vendor") or "an unknown vendor"
    return f"{vendor} ({made_on.get('cpu_model', '')}, {made_on.get('numeric_path')} path)"


def warnings_for(paths: list[Path], here: dict) -> list[str]:
    """One line per notebook whose stored outputs came from a CPU whose cpu-sensitive digits differ from this one's."""
    lines = []
    for path in paths:
        made_on = numerics.outputs_made_on(nbformat.read(path, as_version=4))
        if made_on and not numerics.digits_comparable(made_on, here):
            lines.append(
                f"warning: {path}'s outputs were made on {describe(made_on)}; this is {describe(here)}. Regenerating "
                "here makes this machine's vendor the one whose digits make test compares its cpu-sensitive cells with."
            )
    return lines


def record(paths: list[Path], here: dict) -> None:
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        notebook.metadata.setdefault(numerics.METADATA_KEY, {})["outputs_made_on"] = dict(here)
        nbformat.write(notebook, path)


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("check", "record"):
        print(__doc__)
        return 2
    paths, here = [Path(p) for p in argv[1:]], numerics.this_machine()
    if argv[0] == "check":
        for line in warnings_for(paths, here):
            print(line, file=sys.stderr)
    else:
        record(paths, here)
        print(f"recorded {describe(here)} in {len(paths)} notebook(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
