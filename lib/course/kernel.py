"""The course's Jupyter kernel: this environment's Python with the pinned numeric path (`course.numerics`).

Every notebook names this kernel (`"kernelspec": {"name": "scratch"}`), so JupyterLab, nbval, `make outputs`
and `make book` all start it, and a kernel spec's `env` block is set before the first line of the notebook
runs, before torch loads. `make setup` installs it; so does this, in any environment (conda, VS Code):

    python -m course.kernel install    install both kernels into this environment (sys.prefix)
    python -m course.kernel status     is this process on the pinned numeric path?
    python -m course.kernel mode       strict or lax: how `make test` compares notebook outputs here

A second kernel, "Transformers from Scratch (fast)" (`scratch-fast`), is for students who do not need the
stored digits: the CPU's native kernels on every core this process may use (`numerics.native_environment`).
No notebook names it; a student picks it in JupyterLab (Kernel > Change Kernel). Its spec starts
`python -m course.kernel run-fast`, which removes the pinned variables (even ones inherited from a process that
imported course) before ipykernel, and so torch, loads.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

from course import OFFLINE_ENV, numerics

KERNEL_NAME = "scratch"
KERNEL_DISPLAY_NAME = "Transformers from Scratch (Python 3.11)"
FAST_KERNEL_NAME = "scratch-fast"
FAST_KERNEL_DISPLAY_NAME = "Transformers from Scratch (fast)"


def kernel_spec(fast: bool = False) -> dict:
    """The course's Jupyter kernel: this environment's Python, offline (OFFLINE_ENV), with the pinned variables on
    supported CPUs; with fast=True the fast kernel, which starts through `run-fast` on the native path."""
    if fast:
        return {
            "argv": [sys.executable, "-m", "course.kernel", "run-fast", "-f", "{connection_file}"],
            "display_name": FAST_KERNEL_DISPLAY_NAME,
            "language": "python",
            "metadata": {"debugger": True},
            "env": {numerics.NATIVE_VARIABLE: "native", **OFFLINE_ENV},
        }
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": KERNEL_DISPLAY_NAME,
        "language": "python",
        "metadata": {"debugger": True},
    }
    spec["env"] = {**(numerics.PINNED_ENV if numerics.cpu_supports_pinned_path() else {}), **OFFLINE_ENV}
    return spec


def install(prefix: str | os.PathLike = sys.prefix, fast: bool = False) -> Path:
    """Write the kernel spec to <prefix>/share/jupyter/kernels/<name>/kernel.json (this environment only):
    the course kernel `scratch`, or with fast=True `scratch-fast`."""
    folder = Path(prefix) / "share" / "jupyter" / "kernels" / (FAST_KERNEL_NAME if fast else KERNEL_NAME)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "kernel.json"
    path.write_text(json.dumps(kernel_spec(fast), indent=1) + "\n")
    return path


def run_fast(argv: list[str]) -> None:
    """Start an IPython kernel on the native path (what the fast kernel's spec runs), with ipykernel's arguments."""
    native = numerics.native_environment(dict(os.environ))  # read before the clear below, which would empty it
    os.environ.clear()
    os.environ.update(native)
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # as ipykernel_launcher does; IPython puts the notebook's folder back
    from ipykernel import kernelapp  # imported here: only after the environment above is set for the native path

    kernelapp.launch_new_instance(argv=argv)


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "status"
    if command == "install":
        path = install()
        pinned = (
            "with the pinned numeric path" if numerics.cpu_supports_pinned_path() else "unpinned (this CPU has no AVX2)"
        )
        print(f"installed the Jupyter kernel {KERNEL_NAME!r}, {pinned}: {path}")
        path = install(fast=True)
        print(f"installed the Jupyter kernel {FAST_KERNEL_NAME!r}, native kernels on every usable core: {path}")
        return 0
    if command == "run-fast":
        run_fast(argv[1:])
        return 0
    if command == "mode":
        print(numerics.nbval_mode())
        return 0
    if command == "status" and numerics.native_requested():
        import torch  # imported here: torch reads the numeric variables once, when it loads

        capability, threads = torch.backends.cpu.get_cpu_capability(), torch.get_num_threads()
        print(f"on the native numeric path (the fast kernel): {capability} kernels, {threads} threads")
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
