"""Is this machine ready for the course?  `python -m course.check` (or `make check`).

Prints one line per requirement, OK or FAIL, and for every FAIL the command that fixes it:
the Python version, whether requirements.lock still matches requirements.txt, every package pinned in
requirements.txt (installed version against the pin), the other packages of requirements.lock (one line),
nbgrader and the packages requirements-grading.lock adds for it (one line), every asset of `course.assets`
(re-hashed from disk, never downloaded here), the checkpoints the course ships in data/checkpoints/, the course's
Jupyter kernel (which pins the numeric path, `course.numerics`), and the Chromium the book's browser test drives.
Exit code 1 if anything failed.

It runs where packages are missing, the case it exists to report: it imports torch (through course.checkpoints),
packaging and jupyter_client only inside the checks that need them, and a check whose import fails is a FAIL line
naming the missing package, with the fix.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import shutil
import sys
from pathlib import Path

from course import assets, kernel, numerics

REQUIREMENTS = assets.ROOT / "requirements.txt"
LOCK = assets.ROOT / "requirements.lock"
GRADING_LOCK = assets.ROOT / "requirements-grading.lock"
FIX_PACKAGES = "make setup   (or: .venv/bin/python -m pip install --require-hashes --no-deps -r requirements.lock)"
FIX_GRADING = (
    "make setup   (or: .venv/bin/python -m pip install --require-hashes --no-deps -r requirements-grading.lock)"
)
FIX_LOCK = "make lock   (regenerates requirements.lock from requirements.txt), then make setup"
FIX_CHROMIUM = "sudo apt-get install chromium   (Debian/Ubuntu; only `make test`'s book test needs it)"


def pinned_packages(path: Path = REQUIREMENTS) -> dict[str, str]:
    """{name: version} for every `name==version` line of requirements.txt."""
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        match = re.fullmatch(r"([A-Za-z0-9_.\-\[\]]+)==([^\s;]+)", line)
        if match:
            pins[re.sub(r"\[.*\]", "", match[1])] = match[2]
    return pins


def lock_tool():
    """tools/lock.py, which writes requirements.lock and reads it back (one parser for the Makefile and here)."""
    name = "scratch_lock_tool"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, assets.ROOT / "tools" / "lock.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # before running it: its dataclass looks itself up there
        spec.loader.exec_module(module)
    return sys.modules[name]


def locked_packages(path: Path = LOCK) -> dict[str, str]:
    """{name: version} for every entry of requirements.lock that applies to this machine (its marker holds)."""
    from packaging.markers import Marker  # imported here: make check must run where a package is missing

    return {e.name: e.version for e in lock_tool().read_lock(path) if not e.marker or Marker(e.marker).evaluate()}


def check_lock() -> tuple[bool, str, str]:
    problems = lock_tool().stale(REQUIREMENTS, LOCK)
    what = (
        "requirements.lock matches requirements.txt"
        if not problems
        else ("requirements.lock is stale: " + "; ".join(problems[:3]) + (" ..." if len(problems) > 3 else ""))
    )
    return not problems, what, FIX_LOCK


def check_locked_dependencies(pinned: dict[str, str]) -> tuple[bool, str, str]:
    """One line for the packages the lock adds to requirements.txt's pins (the dependencies of the pins)."""
    top = {re.sub(r"[-_.]+", "-", name).lower() for name in pinned}
    others = {name: version for name, version in locked_packages().items() if name not in top}
    wrong = []
    for name, version in sorted(others.items()):
        ok, what, _ = check_package(name, version)
        if not ok:
            wrong.append(what)
    if not wrong:
        return True, f"{len(others)} more packages of requirements.lock at their locked versions", FIX_PACKAGES
    return (
        False,
        f"{len(wrong)} of {len(others)} locked dependencies differ: "
        + "; ".join(wrong[:5])
        + (" ..." if len(wrong) > 5 else ""),
        FIX_PACKAGES,
    )


def check_grading(path: Path = GRADING_LOCK) -> tuple[bool, str, str]:
    """One line for nbgrader, which grades the exercises, and the packages requirements-grading.lock adds with it."""
    locked = locked_packages(path)
    wrong = [
        what for ok, what, _ in (check_package(name, version) for name, version in sorted(locked.items())) if not ok
    ]
    if not wrong:
        return (
            True,
            f"nbgrader {locked.get('nbgrader', '?')} and {len(locked) - 1} more packages of requirements-grading.lock",
            FIX_GRADING,
        )
    return (
        False,
        "grading the exercises (requirements-grading.lock): "
        + "; ".join(wrong[:5])
        + (" ..." if len(wrong) > 5 else ""),
        FIX_GRADING,
    )


def check_python() -> tuple[bool, str, str]:
    found = ".".join(map(str, sys.version_info[:3]))
    return sys.version_info[:2] == (3, 11), f"python {found} (course: 3.11)", "make PYTHON=/path/to/python3.11 setup"


def check_package(name: str, pinned: str) -> tuple[bool, str, str]:
    try:
        installed = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False, f"{name} not installed (pinned {pinned})", FIX_PACKAGES
    # a local build tag such as torch's "+cpu" is the same release
    same = installed.split("+", 1)[0] == pinned.split("+", 1)[0]
    return same, f"{name} {installed} (pinned {pinned})", FIX_PACKAGES


def check_asset(key: str) -> tuple[bool, str, str]:
    status = assets.status(key)
    what = f"asset {key}" + ("" if status == "OK" else f": {status}")
    if key in assets.OPTIONAL_ASSETS and not assets.apt_available():
        what += " (optional; skipped: this system has no apt-get)"
    return status == "OK", what, assets.FIX_ALL


def check_checkpoints() -> list[tuple[bool, str, str]]:
    """One line per checkpoint folder in data/checkpoints/."""
    from course import checkpoints  # imported here: it imports torch, which this module must report missing, not need

    folder = checkpoints.CHECKPOINT_DIR
    return [check_checkpoint(p.name) for p in sorted(folder.iterdir()) if p.is_dir()] if folder.is_dir() else []


def check_checkpoint(name: str) -> tuple[bool, str, str]:
    """A folder holds model.safetensors, or one subfolder per variant that does (char-gpt), or only the results a
    recipe recorded (spam-transfer: metrics.json)."""
    from course import checkpoints  # imported here: see check_checkpoints

    folder = checkpoints.CHECKPOINT_DIR / name
    variants = sorted(p.name for p in folder.iterdir() if p.is_dir())
    try:
        if variants:
            for variant in variants:
                checkpoints.checkpoint_dir(f"{name}/{variant}")
        elif (folder / "metrics.json").is_file() and not (folder / "model.safetensors").exists():
            checkpoints.recorded_metrics(name)
        else:
            checkpoints.checkpoint_dir(name)
    except (assets.AssetError, ValueError) as error:
        return False, f"checkpoint {name}: {error}", f"git checkout -- data/checkpoints/{name}"
    return True, f"checkpoint {name}", ""


def check_kernel() -> tuple[bool, str, str]:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel  # imported here: may be missing (above)

    fix = "make setup   (or: python -m course.kernel install)"
    try:
        spec = KernelSpecManager().get_kernel_spec(kernel.KERNEL_NAME)
    except NoSuchKernel:
        return False, f"Jupyter kernel {kernel.KERNEL_NAME!r} not installed", fix
    if not numerics.cpu_supports_pinned_path():
        return True, f"Jupyter kernel {kernel.KERNEL_NAME!r}, unpinned: this CPU has no AVX2 (make test runs lax)", ""
    missing = sorted(k for k, v in numerics.PINNED_ENV.items() if spec.env.get(k) != v)
    if missing:
        return False, f"Jupyter kernel {kernel.KERNEL_NAME!r} does not pin {', '.join(missing)}", fix
    return True, f"Jupyter kernel {kernel.KERNEL_NAME!r} on the pinned numeric path", ""


def check_chromium() -> tuple[bool, str, str]:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    return path is not None, f"chromium ({path or 'not found'})", FIX_CHROMIUM


def unless_a_package_is_missing(what: str, check, *args) -> list[tuple[bool, str, str]]:
    """check(*args) as a list of lines; where it cannot import a package, one FAIL line that names the package."""
    try:
        result = check(*args)
    except ImportError as error:
        missing = getattr(error, "name", None) or str(error)
        return [(False, f"{what} not checked: cannot import {missing} ({error})", FIX_PACKAGES)]
    return result if isinstance(result, list) else [result]


def all_checks() -> list[tuple[bool, str, str]]:
    pinned = pinned_packages()
    results = [check_python()]
    results += unless_a_package_is_missing("requirements.lock against requirements.txt", check_lock)
    results += [check_package(name, version) for name, version in pinned.items()]
    results += unless_a_package_is_missing("the other packages of requirements.lock", check_locked_dependencies, pinned)
    results += unless_a_package_is_missing("nbgrader (requirements-grading.lock)", check_grading)
    results += [check_asset(key) for key in assets.all_assets()]
    results += unless_a_package_is_missing("the checkpoints in data/checkpoints/", check_checkpoints)
    results += unless_a_package_is_missing(f"Jupyter kernel {kernel.KERNEL_NAME!r}", check_kernel)
    results.append(check_chromium())
    return results


def main() -> int:
    results = all_checks()
    for ok, what, fix in results:
        print(f"{'OK  ' if ok else 'FAIL'}  {what}" + ("" if ok else f"\n      fix: {fix}"))
    failed = sum(not ok for ok, _, _ in results)
    print(f"\n{len(results) - failed} OK, {failed} FAIL" + ("" if failed else ": ready for the course"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
