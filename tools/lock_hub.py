"""Write requirements-hub.lock from requirements-hub.txt: JupyterHub, nbgitpuller and repo2docker, and what they add.

    python tools/lock_hub.py          resolve on PyPI with uv (`pip install uv` first; seconds) and write the lock
    python tools/lock_hub.py --check  offline: exit 1 if the lock is stale or repeats a package of another lock

Resolved as tools/lock_grading.py resolves nbgrader: with every package of requirements.lock and
requirements-grading.lock held at its locked version, for CPython 3.11 on every platform, and only the packages
those two locks do not pin are written, each with its files' SHA-256. Installing it after them
(`pip install --require-hashes --no-deps -r requirements-hub.lock`) changes no pin.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from lock_grading import ENTRY, entries, normalize  # tools/ is this script's folder, so on sys.path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements-hub.txt"
LOCK = ROOT / "requirements-hub.lock"
BASE_LOCKS = [ROOT / "requirements.lock", ROOT / "requirements-grading.lock"]
HEADER = """\
# requirements-hub.lock: JupyterHub, nbgitpuller, repo2docker and the packages they add to requirements.lock and
# requirements-grading.lock, each with its files' hashes. Written by `make lock-hub` (python tools/lock_hub.py) from
# requirements-hub.txt, with every package of those two locks held at its locked version: do not edit by hand.
# Installed after them by `make setup` and by the image: pip install --require-hashes --no-deps -r requirements-hub.lock
"""


def base_entries() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in BASE_LOCKS:
        found.update(entries(path))
    return found


def problems() -> list[str]:
    """Why the lock does not fit requirements-hub.txt and the locks below it (empty if it does)."""
    if not LOCK.exists():
        return [f"{LOCK.name} is missing"]
    locked, base = entries(LOCK), base_entries()
    found = [
        f"{name} pinned {version}, locked {locked.get(name)}"
        for name, version in entries(REQUIREMENTS).items()
        if locked.get(name) != version
    ]
    found += [
        f"{name} is in requirements.lock or requirements-grading.lock already"
        for name in sorted(set(locked) & set(base))
    ]
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
        lines = []
        for path in BASE_LOCKS:
            lines += re.findall(r"^[A-Za-z0-9][^\n\\]*?(?= \\$|$)", path.read_text(encoding="utf-8"), re.MULTILINE)
        constraints.write_text("\n".join(line.strip() for line in lines if "==" in line) + "\n", encoding="utf-8")
        subprocess.run(
            [uv, "pip", "compile", "--quiet", str(REQUIREMENTS), "--constraint", str(constraints), "--universal",
             "--python-version", "3.11", "--generate-hashes", "--no-header", "--no-annotate",
             "--index-url", "https://pypi.org/simple", "--output-file", str(resolved)],
            check=True,
        )  # fmt: skip
        base = base_entries()
        blocks = re.split(r"\n(?=[A-Za-z0-9])", resolved.read_text(encoding="utf-8").strip())
        kept = [block for block in blocks if normalize(ENTRY.match(block)[1]) not in base]
    LOCK.write_text(HEADER + "\n" + "\n".join(kept) + "\n", encoding="utf-8")
    print(f"wrote {LOCK.name}: {', '.join(ENTRY.match(block)[0] for block in kept)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check the lock (offline)")
    if parser.parse_args().check:
        found = problems()
        for problem in found:
            print(f"{LOCK.name}: {problem}; run: make lock-hub", file=sys.stderr)
        return 1 if found else 0
    generate()
    return 1 if problems() else 0


if __name__ == "__main__":
    sys.exit(main())
