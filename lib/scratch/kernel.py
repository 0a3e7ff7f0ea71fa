"""The course's Jupyter kernel: this environment's Python with the pinned numeric path (`scratch.numerics`).

Every notebook names this kernel (`"kernelspec": {"name": "scratch"}`), so JupyterLab, nbval, `make outputs`
and `make book` all start it, and a kernel spec's `env` block is set before the first line of the notebook
runs, before torch loads. `make setup` installs it; so does this, in any environment (conda, VS Code):

    python -m scratch.kernel install    install the kernel into this environment (sys.prefix)
    python -m scratch.kernel status     is this process on the pinned numeric path?
    python -m scratch.kernel mode       strict or lax: how `make test` compares notebook outputs here
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

from scratch import numerics

KERNEL_NAME = "scratch"
KERNEL_DISPLAY_NAME = "Transformers from Scratch (Python 3.11)"


def kernel_spec() -> dict:
    """The course's Jupyter kernel: this environment's Python, with the pinned variables on supported CPUs."""
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": KERNEL_DISPLAY_NAME,
        "language": "python",
        "metadata": {"debugger": True},
    }
    if numerics.cpu_supports_pinned_path():
        spec["env"] = dict(numerics.PINNED_ENV)
    return spec


def install(prefix: str | os.PathLike = sys.prefix) -> Path:
    """Write the kernel spec to <prefix>/share/jupyter/kernels/scratch/kernel.json (this environment only)."""
    folder = Path(prefix) / "share" / "jupyter" / "kernels" / KERNEL_NAME
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "kernel.json"
    path.write_text(json.dumps(kernel_spec(), indent=1) + "\n")
    return path


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "status"
    if command == "install":
        path = install()
        pinned = (
            "with the pinned numeric path" if numerics.cpu_supports_pinned_path() else "unpinned (this CPU has no AVX2)"
        )
        print(f"installed the Jupyter kernel {KERNEL_NAME!r}, {pinned}: {path}")
        return 0
    if command == "mode":
        print(numerics.nbval_mode())
        return 0
    if command == "status":
        if not numerics.cpu_supports_pinned_path():
            print(f"this CPU ({platform.machine()}) has no AVX2: outputs are checked by asserts (make test NBVAL=lax)")
            return 0
        wrong = numerics.problems()
        print("on the pinned numeric path" if not wrong else "off the pinned numeric path: " + "; ".join(wrong))
        return 1 if wrong else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
