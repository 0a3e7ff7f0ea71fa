"""Write an add-on lock: what nbgrader (grading) or JupyterHub (hub) adds to the locks below it, with hashes.

    python tools/lock_addon.py grading        resolve on PyPI with uv (`pip install uv` first; seconds), write the lock
    python tools/lock_addon.py hub --check    offline: exit 1 if the lock is stale or repeats a pin of a lock below

Grading (make release / collect / autograde / feedback, and the grading test of `make test`) needs nbgrader on top of
the course's packages; a class's hub needs jupyterhub, nbgitpuller and repo2docker on top of both. Each add-on is
resolved with every package of the locks below it held at its locked version (a constraint), for CPython 3.11 on
every platform (`uv pip compile --universal --generate-hashes`), and only the packages those locks do not already pin
are written, each with the SHA-256 of its files. So installing it after them (`pip install --require-hashes
--no-deps -r requirements-<name>.lock`) changes no pin.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", re.MULTILINE)


@dataclass(frozen=True)
class Addon:
    name: str  # grading or hub: requirements-<name>.txt -> requirements-<name>.lock, `make lock-<name>`
    below: tuple[str, ...]  # the locks it is installed after, whose pins it must keep
    what: str  # what it holds, for the lock's header

    @property
    def requirements(self) -> Path:
        return ROOT / f"requirements-{self.name}.txt"

    @property
    def lock(self) -> Path:
        return ROOT / f"requirements-{self.name}.lock"

    def header(self) -> str:
        below = " and ".join(self.below)
        text = (
            f"{self.lock.name}: {self.what}, and what they need beyond {below}, each with its files' hashes. "
            f"Written by `make lock-{self.name}` (python tools/lock_addon.py {self.name}) "
            f"from {self.requirements.name}, "
            f"with every package of {below} held at its locked version: do not edit by hand. Installed after them by "
            f"`make setup`: pip install --require-hashes --no-deps -r {self.lock.name}"
        )
        return textwrap.fill(text, 118, initial_indent="# ", subsequent_indent="# ", break_on_hyphens=False) + "\n"


ADDONS = {
    "grading": Addon("grading", ("requirements.lock",), "nbgrader"),
    "hub": Addon("hub", ("requirements.lock", "requirements-grading.lock"), "JupyterHub, nbgitpuller, repo2docker"),
}


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def entries(path: Path) -> dict[str, str]:
    """{normalized name: version} of every `name==version` line of a requirements or lock file."""
    return {normalize(name): version for name, version in ENTRY.findall(path.read_text(encoding="utf-8"))}


def pinned_below(addon: Addon) -> dict[str, str]:
    found: dict[str, str] = {}
    for name in addon.below:
        found.update(entries(ROOT / name))
    return found


def problems(addon: Addon) -> list[str]:
    """Why the add-on's lock does not fit its requirements and the locks below it (empty if it does)."""
    if not addon.lock.exists():
        return [f"{addon.lock.name} is missing"]
    locked, below = entries(addon.lock), pinned_below(addon)
    found = [
        f"{name} pinned {version}, locked {locked.get(name)}"
        for name, version in entries(addon.requirements).items()
        if locked.get(name) != version
    ]
    found += [f"{name} is in {' or '.join(addon.below)} already" for name in sorted(set(locked) & set(below))]
    text = addon.lock.read_text(encoding="utf-8")
    found += [
        f"{name} has no hash"
        for name in locked
        if not re.search(rf"^{re.escape(name)}==\S+.*\n(\s+--hash=sha256:\w+.*\n)+", text, re.MULTILINE | re.IGNORECASE)
    ]
    return found


def generate(addon: Addon) -> None:
    uv = shutil.which("uv") or sys.exit("uv is needed to resolve the lock: pip install uv")
    with tempfile.TemporaryDirectory() as tmp:
        constraints, resolved = Path(tmp) / "constraints.txt", Path(tmp) / "resolved.lock"
        lines = []  # each locked requirement line as written, environment markers included
        for name in addon.below:
            text = (ROOT / name).read_text(encoding="utf-8")
            lines += re.findall(r"^[A-Za-z0-9][^\n\\]*?(?= \\$|$)", text, re.MULTILINE)
        constraints.write_text("\n".join(line.strip() for line in lines if "==" in line) + "\n", encoding="utf-8")
        subprocess.run(
            [uv, "pip", "compile", "--quiet", str(addon.requirements), "--constraint", str(constraints), "--universal",
             "--python-version", "3.11", "--generate-hashes", "--no-header", "--no-annotate",
             "--index-url", "https://pypi.org/simple", "--output-file", str(resolved)],
            check=True,
        )  # fmt: skip
        below = pinned_below(addon)
        blocks = re.split(r"\n(?=[A-Za-z0-9])", resolved.read_text(encoding="utf-8").strip())
        kept = [block for block in blocks if normalize(ENTRY.match(block)[1]) not in below]
    addon.lock.write_text(addon.header() + "\n" + "\n".join(kept) + "\n", encoding="utf-8")
    print(f"wrote {addon.lock.name}: {', '.join(ENTRY.match(block)[0] for block in kept)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("addon", choices=sorted(ADDONS), help="which add-on lock")
    parser.add_argument("--check", action="store_true", help="only check the lock (offline)")
    args = parser.parse_args()
    addon = ADDONS[args.addon]
    if args.check:
        found = problems(addon)
        for problem in found:
            print(f"{addon.lock.name}: {problem}; run: make lock-{addon.name}", file=sys.stderr)
        return 1 if found else 0
    generate(addon)
    return 1 if problems(addon) else 0


if __name__ == "__main__":
    sys.exit(main())
