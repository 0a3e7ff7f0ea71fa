"""`make sizing`: what one student needs per lecture, for the hub operator's table (docs/teaching.md, "Sizing: what
one student needs").

Each notebook runs top to bottom through nbconvert (outputs go to a scratch folder; the committed notebook is not
touched) pinned to one core (`taskset -c CORE`), under `/usr/bin/time -v`, first in the course's pinned kernel, then
in the fast kernel (which, given one core, runs native kernels on one thread). Per run: peak memory (the largest
process's resident set: the kernel), CPU time (user + system of nbconvert and the kernel) and wall time. On a
shared machine wall time grows with the load while CPU time barely does: quote CPU time.

    python tools/sizing.py [--core 0] [--kernels scratch scratch-fast] [notebooks/NN_topic.ipynb ...]

Results: build/sizing/results.json (one record per notebook and kernel: a new run replaces that pair's record and keeps
the others, so lectures can be measured one at a time) and build/sizing/table.md (every record). Each record names
the commit it measured, with "+" where the notebook differed from that commit.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "sizing"
JUPYTER = Path(sys.executable).parent / "jupyter"
TIME_FIELDS = {
    "user": r"User time \(seconds\): ([\d.]+)",
    "system": r"System time \(seconds\): ([\d.]+)",
    "wall": r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)",
    "peak_kb": r"Maximum resident set size \(kbytes\): (\d+)",
}


def seconds(clock: str) -> float:
    total = 0.0
    for part in clock.split(":"):
        total = total * 60 + float(part)
    return total


def commit_of(notebook: Path) -> str:
    """The commit measured: HEAD's short hash, with "+" where the notebook differs from it (or "" outside git)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    if head.returncode != 0:
        return ""
    clean = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", str(notebook)], cwd=ROOT).returncode == 0
    return head.stdout.strip() + ("" if clean else "+")


def merged(old: list[dict], new: list[dict]) -> list[dict]:
    """The earlier records with each (notebook, kernel) measured now replaced by its new record."""
    done = {(r["notebook"], r["kernel"]) for r in new}
    return [r for r in old if (r["notebook"], r["kernel"]) not in done] + new


def measure(notebook: Path, kernel: str, core: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            "taskset", "-c", str(core), "/usr/bin/time", "-v",
            str(JUPYTER), "nbconvert", "--to", "notebook", "--execute", "--output-dir", tmp,
            f"--ExecutePreprocessor.kernel_name={kernel}", "--ExecutePreprocessor.timeout=3600", str(notebook),
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, cwd=notebook.parent)
    found = {name: re.search(pattern, result.stderr) for name, pattern in TIME_FIELDS.items()}
    record = {"notebook": notebook.name, "kernel": kernel, "ok": result.returncode == 0, "commit": commit_of(notebook)}
    if all(found.values()):  # a notebook that failed late still tells its size
        record["cpu_s"] = round(float(found["user"][1]) + float(found["system"][1]), 1)
        record["wall_s"] = round(seconds(found["wall"][1]), 1)
        record["peak_mib"] = round(int(found["peak_kb"][1]) / 1024)
    if result.returncode != 0:
        text = re.sub(r"\x1b\[[0-9;]*m", "", result.stderr)  # the traceback's colours
        errors = re.findall(r"^\w*(?:Error|Exception)\b.*$", text, re.MULTILINE)
        record["error"] = errors[-1] if errors else text[-1500:]
    return record


def table(records: list[dict], kernels: list[str]) -> str:
    by = {(r["notebook"], r["kernel"]): r for r in records}
    head = "| lecture | " + " | ".join(f"{k}: peak memory | {k}: CPU time | {k}: wall" for k in kernels) + " |"
    if len(kernels) == 2:
        head += " speed-up (CPU) |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for notebook in sorted({r["notebook"] for r in records}):
        cells = []
        for kernel in kernels:
            r = by.get((notebook, kernel))
            if r and "cpu_s" in r:
                mark = "" if r["ok"] else " (failed)"  # numbers up to the failing cell
                cells += [f"{r['peak_mib']:,} MiB{mark}", f"{r['cpu_s']:.0f} s{mark}", f"{r['wall_s']:.0f} s{mark}"]
            else:
                cells += ["failed"] * 3
        line = f"| {Path(notebook).stem} | " + " | ".join(cells) + " |"
        if len(kernels) == 2:
            a, b = by.get((notebook, kernels[0])), by.get((notebook, kernels[1]))
            ok = a and b and "cpu_s" in a and "cpu_s" in b
            line += f" {a['cpu_s'] / b['cpu_s']:.2f}× |" if ok else " – |"
        lines.append(line)
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks to measure (default: every lecture)")
    parser.add_argument("--core", type=int, default=0, help="the one core every run is pinned to (default 0)")
    parser.add_argument("--kernels", nargs="+", default=["scratch", "scratch-fast"])
    args = parser.parse_args()
    for tool in ("taskset", "/usr/bin/time"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is needed (Debian/Ubuntu: apt-get install util-linux time)")
    notebooks = [Path(p).resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
    OUT.mkdir(parents=True, exist_ok=True)
    results = OUT / "results.json"
    earlier = json.loads(results.read_text()) if results.exists() else []
    records = []
    for notebook in notebooks:
        for kernel in args.kernels:  # one after the other, so both see the same load
            record = measure(notebook, kernel, args.core)
            records.append(record)
            print(json.dumps(record)[:400], flush=True)
            results.write_text(json.dumps(merged(earlier, records), indent=1) + "\n")
    text = table(merged(earlier, records), args.kernels)
    (OUT / "table.md").write_text(text)
    print(text)
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
