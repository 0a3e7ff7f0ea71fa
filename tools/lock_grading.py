"""Write requirements-grading.lock from requirements-grading.txt: nbgrader and what it adds to the course's lock.

    python tools/lock_grading.py          resolve on PyPI with uv (`pip install uv` first; seconds) and write the lock
    python tools/lock_grading.py --check  offline: exit 1 if the lock is stale or repeats a package of requirements.lock

Grading (make release / collect / autograde / feedback, and the grading test of `make test`) needs nbgrader on top
of the course's packages. It is resolved with every package of requirements.lock held at its locked version
(a constraint), for CPython 3.11 on every platform (`uv pip compile --universal --generate-hashes`), and only the
packages requirements.lock does not already pin are written, each with the SHA-256 of its files. So installing it
(`pip install --require-hashes --no-deps -r requirements-grading.lock`, after requirements.lock) changes no pin.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements-grading.txt"
LOCK = ROOT / "requirements-grading.lock"
MAIN_LOCK = ROOT / "requirements.lock"
ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", re.MULTILINE)
HEADER = """\
# requirements-grading.lock: nbgrader and the packages it adds to requirements.lock, each with its files' hashes.
# Written by `make lock-grading` (python tools/lock_grading.py) from requirements-grading.txt, with every package of
# requirements.lock held at its locked version: do not edit by hand. Installed after requirements.lock by
# `make setup`: pip install --require-hashes --no-deps -r requirements-grading.lock
"""


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def entries(path: Path) -> dict[str, str]:
    """{normalized name: version} of every `name==version` line of a requirements or lock file."""
    return {normalize(name): version for name, version in ENTRY.findall(path.read_text(encoding="utf-8"))}


def problems() -> list[str]:
    """Why the lock does not fit requirements-grading.txt and requirements.lock (empty if it does)."""
    if not LOCK.exists():
        return [f"{LOCK.name} is missing"]
    locked, main = entries(LOCK), entries(MAIN_LOCK)
    found = [
        f"{name} pinned {version}, locked {locked.get(name)}"
        for name, version in entries(REQUIREMENTS).items()
        if locked.get(name) != version
    ]
    found += [f"{name} is in requirements.lock already" for name in sorted(set(locked) & set(main))]
    text = LOCK.read_text(encoding="utf-8")
    found += [
        f"{name} has no hash"
        for name in locked
        if not re.search(rf"^{re.escape(name)}==\S+.*\n(\s+--hash=sha256:\w+.*\n)+", text, re.MULTILINE | re.IGNORECASE)
    ]
    return found


def generate() -> None:
    uv = shutil.which("uv") or sys.exit("uv is needed to resolve the lock: pip install uv")
    with tempfile.TemporaryDirectory() as tmp:
        constraints, resolved = Path(tmp) / "constraints.txt", Path(tmp) / "resolved.lock"
        lines = re.findall(r"^[A-Za-z0-9][^\n\\]*?(?= \\$|$)", MAIN_LOCK.read_text(encoding="utf-8"), re.MULTILINE)
        constraints.write_text("\n".join(line.strip() for line in lines if "==" in line) + "\n", encoding="utf-8")
        subprocess.run(
            [
                uv,
                "pip",
                "compile",
                "--quiet",
                str(REQUIREMENTS),
                "--constraint",
                str(constraints),
                "--universal",
                "--python-version",
                "3.11",
                "--generate-hashes",
                "--no-header",
                "--no-annotate",
                "--index-url",
                "https://pypi.org/simple",
                "--output-file",
                str(resolved),
            ],
            check=True,
        )
        main = entries(MAIN_LOCK)
        blocks = re.split(r"\n(?=[A-Za-z0-9])", resolved.read_text(encoding="utf-8").strip())
        kept = [block for block in blocks if normalize(ENTRY.match(block)[1]) not in main]
    LOCK.write_text(HEADER + "\n" + "\n".join(kept) + "\n", encoding="utf-8")
    print(f"wrote {LOCK.name}: {', '.join(ENTRY.match(block)[0] for block in kept)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check the lock (offline)")
    if parser.parse_args().check:
        found = problems()
        for problem in found:
            print(f"{LOCK.name}: {problem}; run: make lock-grading", file=sys.stderr)
        return 1 if found else 0
    generate()
    return 1 if problems() else 0


if __name__ == "__main__":
    sys.exit(main())
