"""Write requirements.lock (and requirements-cuda.lock) from requirements.txt: `make lock`.

    python tools/lock.py            resolve requirements.txt on PyPI and write both lock files (network; ~25 min)
    python tools/lock.py --check    offline: exit 1 if requirements.txt's pins differ from the lock's
    python tools/lock.py --select torch    print one package's entry of the lock (make setup installs torch first)

requirements.txt is the human-edited list of top-level pins; the lock adds every package they pull in, each at
one exact version with the SHA-256 of every file PyPI offers for it for CPython 3.11, so that
`pip install --require-hashes --no-deps -r requirements.lock` installs the same files on every machine.

One lock serves Linux (x86-64, aarch64), macOS (arm64) and Windows (x86-64). pip resolves requirements.txt once
per platform (with that platform's wheel tags and environment markers, for every Python 3.11.x) and the results
are merged: a package that only some platforms need carries a marker, e.g. `colorama ... ; sys_platform == "win32"`.

PyPI's Linux build of torch also needs NVIDIA's CUDA runtime (cuda-toolkit, nvidia-*, triton: several GB).
The CPU-only build of torch needs none of it, and no output of the course depends on it, so it is locked on
its own, in requirements-cuda.lock, which `make setup` installs only where the torch it installed asks for it.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements.txt"
LOCK = ROOT / "requirements.lock"
CUDA_LOCK = ROOT / "requirements-cuda.lock"
PYTHON = "3.11"  # the course's Python (Makefile, pyproject.toml, environment.yml, README say the same)
TOP_LEVEL = "-r requirements.txt"  # the `# via` entry of a package pinned in requirements.txt

# The platforms the lock is resolved for: marker values, and the wheel platform tags pip may use there.
MANYLINUX = [f"manylinux_2_{minor}" for minor in range(28, 16, -1)] + ["manylinux2014"]
TARGETS = {
    "linux-x86_64": (
        {"os_name": "posix", "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64"},
        [f"{tag}_x86_64" for tag in MANYLINUX],
    ),
    "linux-aarch64": (
        {"os_name": "posix", "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64"},
        [f"{tag}_aarch64" for tag in MANYLINUX],
    ),
    "macos-arm64": (
        {"os_name": "posix", "sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64"},
        ["macosx_14_0_arm64"],
    ),  # torch's macOS wheels need 14+
    "windows-amd64": (
        {"os_name": "nt", "sys_platform": "win32", "platform_system": "Windows", "platform_machine": "AMD64"},
        ["win_amd64"],
    ),
}
# Markers hold for every 3.11.x: the lock is resolved as for 3.11.0 (pip's --python-version 3.11).
PYTHON_MARKERS = {
    "python_version": PYTHON,
    "python_full_version": f"{PYTHON}.0",
    "implementation_name": "cpython",
    "implementation_version": f"{PYTHON}.0",
    "platform_python_implementation": "CPython",
    "platform_release": "",
    "platform_version": "",
}

# torch's requirements that hold on Linux only are its CUDA runtime (see the docstring).
CUDA_OWNER = "torch"

# Builds of torch that a machine's own pip configuration may offer instead of PyPI's files: `torch==2.13.0`
# admits a version with a local label, so pip may pick such a build, and its hash must be in the lock too.
# The CI machines' wheel folder holds PyTorch's CPU-only build for Linux x86-64 and CPython 3.11.
LOCAL_TORCH_BUILDS = {
    "2.13.0": ["6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b"],
}

# pip environment variables that point it at other indexes or files; resolution uses PyPI alone.
PIP_SOURCE_VARIABLES = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_NO_INDEX",
    "PIP_CONSTRAINT",
    "PIP_REQUIREMENT",
    "PIP_CONFIG_FILE",
    "PIP_TARGET",
    "PIP_PREFIX",
    "PIP_USER",
)

# Run pip with one platform's environment markers (pip evaluates them for the running machine otherwise).
PIP_WITH_MARKERS = """
import json, sys
import pip._vendor.packaging.markers as markers
target = json.loads(sys.argv[1])
markers.default_environment = lambda: dict(target)
from pip._internal.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ----------------------------------------------------------------------------------------------- reading
@dataclass
class Locked:
    name: str
    version: str
    marker: str = ""
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)


def read_pins(path: Path = REQUIREMENTS) -> dict[str, str]:
    """{normalized name: version} for the `name==version` lines of requirements.txt; anything else is an error."""
    pins = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9_.\-]*)==([^\s;+]+)", line)
        if not match:
            raise ValueError(f"{path.name}:{number}: {line!r} is not an exact pin `name==version` (no local label)")
        pins[normalize(match[1])] = match[2]
    return pins


def read_lock(path: Path = LOCK) -> list[Locked]:
    """The entries of a lock file written by this script (name, version, marker, hashes, via)."""
    entries: list[Locked] = []
    for line in path.read_text().splitlines():
        if not line.strip() or (line.startswith("#") and not line.startswith("    ")):
            continue
        stripped = line.strip()
        if not line.startswith(" "):
            spec = stripped.rstrip("\\").strip()
            requirement, _, marker = spec.partition(";")
            name, sep, version = requirement.strip().partition("==")
            if not sep:
                raise ValueError(f"{path.name}: {spec!r} is not pinned with ==")
            entries.append(Locked(normalize(name), version.strip(), marker.strip()))
        elif stripped.startswith("--hash=sha256:"):
            entries[-1].hashes.append(stripped.removeprefix("--hash=sha256:").rstrip("\\").strip())
        elif stripped.startswith("# via "):
            entries[-1].via = [v.strip() for v in stripped.removeprefix("# via ").split(",")]
    return entries


def select(name: str, path: Path = LOCK) -> str:
    """The lines of one package's entry (or entries) in a lock file, as a requirements file of its own."""
    blocks, current = [], None
    for line in path.read_text().splitlines():
        if line and not line.startswith((" ", "#")):
            current = normalize(re.split(r"[=;\s]", line, maxsplit=1)[0]) == normalize(name)
        if current and line.strip():
            blocks.append(line)
    if not blocks:
        raise SystemExit(f"{path.name} has no entry for {name}")
    return "\n".join(blocks) + "\n"


def stale(requirements: Path = REQUIREMENTS, lock: Path = LOCK) -> list[str]:
    """How the lock's top-level pins differ from requirements.txt's (empty when the lock is current)."""
    pins = read_pins(requirements)
    locked = {e.name: e.version for e in read_lock(lock) if TOP_LEVEL in e.via}
    problems = [
        f"{name}: requirements.txt pins {version}, the lock has {locked.get(name, 'nothing')}"
        for name, version in sorted(pins.items())
        if locked.get(name) != version
    ]
    problems += [
        f"{name}: in the lock as a top-level pin, not in requirements.txt"
        for name in sorted(locked)
        if name not in pins
    ]
    return problems


# ----------------------------------------------------------------------------------------------- resolving
def target_markers(target: str) -> dict[str, str]:
    return {**PYTHON_MARKERS, **TARGETS[target][0]}


def pip_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PIP_SOURCE_VARIABLES}
    env["PIP_CONFIG_FILE"] = os.devnull  # no machine-wide find-links, extra indexes or constraints
    return env


def resolve(target: str, requirements: Path, workdir: Path) -> dict:
    """pip's installation report for requirements.txt on one platform (a dry run: nothing is installed)."""
    platforms = TARGETS[target][1]
    report = workdir / f"{target}.json"
    command = [
        sys.executable,
        "-c",
        PIP_WITH_MARKERS,
        json.dumps(target_markers(target)),
        "install",
        "--dry-run",
        "--quiet",
        "--report",
        str(report),
        "--target",
        str(workdir / target),
        "--only-binary=:all:",
        "--python-version",
        PYTHON,
        "--implementation",
        "cp",
        "--use-feature=fast-deps",
        "--disable-pip-version-check",
        "-r",
        str(requirements),
    ]
    for platform in platforms:
        command += ["--platform", platform]
    result = subprocess.run(command, env=pip_environment(), capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"pip could not resolve requirements.txt for {target}:\n{result.stderr}")
    print(f"resolved {target}", file=sys.stderr)
    return json.loads(report.read_text())


def walk(target: str, items: dict, follow_cuda: bool) -> dict[str, set[str]]:
    """{name: what requires it} for the packages of one platform's report reachable from requirements.txt.

    With follow_cuda=False, torch's requirements that do not hold on every platform (its CUDA runtime) are
    not followed.
    """
    from pip._vendor.packaging.requirements import Requirement

    markers = target_markers(target)
    everywhere = [target_markers(t) for t in TARGETS]

    def holds(requirement: Requirement, env: dict, extras: set[str]) -> bool:
        if requirement.marker is None:
            return True
        return any(requirement.marker.evaluate({**env, "extra": extra}) for extra in {""} | extras)

    extras: dict[str, set[str]] = {name: set() for name, item in items.items() if item["requested"]}
    via: dict[str, set[str]] = {name: {TOP_LEVEL} for name in extras}
    queue = list(extras)
    while queue:
        name = queue.pop()
        for line in items[name]["metadata"].get("requires_dist", []):
            requirement = Requirement(line)
            if not holds(requirement, markers, extras[name]):
                continue
            if (
                name == CUDA_OWNER
                and not follow_cuda
                and not all(holds(requirement, env, extras[name]) for env in everywhere)
            ):
                continue
            dep = normalize(requirement.name)
            via.setdefault(dep, set()).add(name)
            wanted = {normalize(e) for e in requirement.extras}
            if dep not in extras or not wanted <= extras[dep]:
                extras[dep] = extras.get(dep, set()) | wanted
                queue.append(dep)
    missing = set(extras) - set(items)
    assert not missing, f"{target}: pip's report lacks {sorted(missing)}"
    unreached = set(items) - set(extras)
    assert not follow_cuda or not unreached, f"{target}: pip installs {sorted(unreached)}, required by nothing"
    for name in via:
        via[name].discard(name)
    return via


def marker_for(targets: set[str]) -> str:
    """An environment marker that holds on exactly these of TARGETS ('' for all of them)."""
    if targets == set(TARGETS):
        return ""
    by_platform: dict[str, list[str]] = {}
    for target, (markers, _) in TARGETS.items():
        by_platform.setdefault(markers["sys_platform"], []).append(target)
    missing = [p for p, ts in by_platform.items() if not set(ts) <= targets]
    if len(missing) == 1 and not (set(by_platform[missing[0]]) & targets):
        return f'sys_platform != "{missing[0]}"'
    terms = []
    for platform, ts in by_platform.items():
        if set(ts) <= targets:
            terms.append(f'sys_platform == "{platform}"')
        else:
            terms += [
                f'(sys_platform == "{platform}" and platform_machine == "{TARGETS[t][0]["platform_machine"]}")'
                for t in ts
                if t in targets
            ]
    return " or ".join(terms)


# ----------------------------------------------------------------------------------------------- hashes
def cp311_file(filename: str, version: str) -> bool:
    """Whether a file of PyPI's list is `version` and could install on CPython 3.11 (any platform), or an sdist."""
    from pip._vendor.packaging.utils import (
        InvalidSdistFilename,
        InvalidWheelFilename,
        parse_sdist_filename,
        parse_wheel_filename,
    )
    from pip._vendor.packaging.version import InvalidVersion, Version

    if filename.endswith(".whl"):
        try:
            _, wheel_version, _, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename:
            return False
        minor = int(PYTHON.split(".")[1])
        return wheel_version == Version(version) and any(
            tag.interpreter in {"py3", f"py3{minor}", f"cp3{minor}"}
            or (tag.abi == "abi3" and re.fullmatch(r"cp3(\d+)", tag.interpreter) and int(tag.interpreter[3:]) <= minor)
            for tag in tags
        )
    try:
        return parse_sdist_filename(filename)[1] == Version(version)
    except (InvalidSdistFilename, InvalidVersion):
        return False


def index_hashes(name: str, version: str) -> list[str]:
    """SHA-256 of every file of name==version on PyPI that suits CPython 3.11."""
    from pip._internal.models.index import PyPI

    request = urllib.request.Request(
        f"{PyPI.simple_url}/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        files = json.load(response)["files"]
    hashes = sorted({f["hashes"]["sha256"] for f in files if cp311_file(f["filename"], version)})
    if not hashes:
        raise SystemExit(f"PyPI lists no file of {name}=={version} for CPython {PYTHON}")
    return hashes


# ----------------------------------------------------------------------------------------------- writing
HEADER = """\
# {title}
# Written by `make lock` (python tools/lock.py) from requirements.txt: do not edit by hand; edit requirements.txt
# and run `make lock`. Resolved on PyPI for CPython {python} on Linux (x86-64, aarch64), macOS (arm64) and
# Windows (x86-64); every file PyPI offers for CPython {python} is listed by its SHA-256.
# Install: {install}
"""


LOCK_TITLES = {  # file name: (title, how to install it)
    "requirements.lock": (
        "requirements.lock: every package the course installs, at one version, with its files' hashes",
        "make setup; or by hand: pip install --require-hashes --no-deps -r requirements.lock, then\n"
        "#   requirements-cuda.lock the same way where `pip check` says torch needs it, "
        "then pip install --no-deps -e .\n"
        "# torch also lists CPU-only builds that a machine's pip may offer from elsewhere "
        "(LOCAL_TORCH_BUILDS, tools/lock.py).",
    ),
    "requirements-cuda.lock": (
        "requirements-cuda.lock: the CUDA runtime that PyPI's Linux build of torch loads (CPU-only builds need none)",
        "pip install --require-hashes --no-deps -r requirements-cuda.lock (make setup does, where torch asks for it)",
    ),
}


def write_lock(path: Path, title: str, install: str, entries: list[Locked]) -> None:
    lines = [HEADER.format(title=title, python=PYTHON, install=install)]
    for e in sorted(entries, key=lambda e: (e.name, e.version)):
        spec = f"{e.name}=={e.version}" + (f" ; {e.marker}" if e.marker else "")
        lines.append(" \\\n".join([spec] + [f"    --hash=sha256:{h}" for h in e.hashes]))
        lines.append(f"    # via {', '.join(e.via)}")
    path.write_text("\n".join(lines) + "\n")


def merge(parts: dict[str, dict], vias: dict[str, dict[str, set[str]]]) -> list[Locked]:
    """One entry per (name, version) from the per-platform package sets, with the marker of where it is needed."""
    where: dict[tuple[str, str], set[str]] = {}
    via: dict[tuple[str, str], set[str]] = {}
    for target, items in parts.items():
        for name, item in items.items():
            key = (name, item["metadata"]["version"])
            where.setdefault(key, set()).add(target)
            via.setdefault(key, set()).update(vias[target].get(name, set()))
    names = [name for name, _ in where]
    for name in set(names):
        if names.count(name) > 1:  # a version per platform: their markers must not overlap
            print(
                f"note: {name} differs by platform: { {v: sorted(t) for (n, v), t in where.items() if n == name} }",
                file=sys.stderr,
            )
    entries = []
    for (name, version), targets in where.items():
        ordered = sorted(via[(name, version)] - {TOP_LEVEL})
        entries.append(
            Locked(
                name,
                version,
                marker_for(targets),
                via=([TOP_LEVEL] if TOP_LEVEL in via[(name, version)] else []) + ordered,
            )
        )
    return entries


def add_hashes(entries: list[Locked]) -> None:
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        for entry, hashes in zip(entries, pool.map(lambda e: index_hashes(e.name, e.version), entries)):
            entry.hashes = hashes
            if entry.name == CUDA_OWNER:
                if entry.version not in LOCAL_TORCH_BUILDS:
                    print(
                        f"warning: no local build of torch {entry.version} in LOCAL_TORCH_BUILDS: a machine whose "
                        "pip offers one (as the CI machines do) will reject it",
                        file=sys.stderr,
                    )
                entry.hashes = sorted(set(hashes) | set(LOCAL_TORCH_BUILDS.get(entry.version, [])))


def generate() -> None:
    pins = read_pins()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        with concurrent.futures.ThreadPoolExecutor(len(TARGETS)) as pool:
            reports = dict(zip(TARGETS, pool.map(lambda t: resolve(t, REQUIREMENTS, workdir), TARGETS)))
    course, cuda, vias = {}, {}, {}
    for target, report in reports.items():
        items = {normalize(i["metadata"]["name"]): i for i in report["install"]}
        needed = walk(target, items, follow_cuda=False)
        vias[target] = walk(target, items, follow_cuda=True)
        course[target] = {n: i for n, i in items.items() if n in needed}
        cuda[target] = {n: i for n, i in items.items() if n not in needed}
        if cuda[target] and TARGETS[target][0]["sys_platform"] != "linux":
            raise SystemExit(f"{target}: torch's Linux-only requirements pulled in {sorted(cuda[target])}")
    entries = merge(course, vias)
    cuda_entries = merge({t: items for t, items in cuda.items() if items}, vias)
    cuda_targets = {t for t, items in cuda.items() if items}
    for entry in cuda_entries:  # needed only where torch's Linux build is: say so even if every Linux needs it
        entry.marker = entry.marker or marker_for(cuda_targets)
    locked = {e.name: e.version for e in entries}
    wrong = {n: (v, locked.get(n)) for n, v in pins.items() if locked.get(n) != v}
    if wrong:
        raise SystemExit(f"the resolution does not keep requirements.txt's pins: {wrong}")
    add_hashes(entries + cuda_entries)
    write_lock(LOCK, *LOCK_TITLES[LOCK.name], entries)
    write_lock(CUDA_LOCK, *LOCK_TITLES[CUDA_LOCK.name], cuda_entries)
    print(f"wrote {LOCK.name} ({len(entries)} packages) and {CUDA_LOCK.name} ({len(cuda_entries)} packages)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only check that the lock matches requirements.txt")
    parser.add_argument("--select", metavar="NAME", help="print one package's entry of requirements.lock")
    args = parser.parse_args()
    if args.select:
        print(select(args.select), end="")
        return 0
    if args.check:
        problems = stale()
        for problem in problems:
            print(f"requirements.lock is stale: {problem}", file=sys.stderr)
        if problems:
            print("run `make lock` to regenerate it from requirements.txt", file=sys.stderr)
        return 1 if problems else 0
    generate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
