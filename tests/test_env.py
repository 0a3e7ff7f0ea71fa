"""The environment is what requirements.lock says, the lock is what requirements.txt says, the conda path
installs the same lock, and every file that names the course's Python names the same one."""

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]

from course.check import lock_tool  # noqa: E402  (tools/lock.py, which writes and reads the lock)

lock = lock_tool()

PINS = lock.read_pins()
LOCKED = lock.read_lock(lock.LOCK)
CUDA_LOCKED = lock.read_lock(lock.CUDA_LOCK)
HERE = [e for e in LOCKED if not e.marker or Marker(e.marker).evaluate()]


def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def test_torch_is_pinned_exactly_without_a_local_label():
    assert PINS["torch"] == "2.13.0"
    assert [e.version for e in LOCKED if e.name == "torch"] == ["2.13.0"]
    import torch

    assert torch.__version__.split("+")[0] == "2.13.0"


def test_no_committed_file_names_a_local_build_of_torch():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    for name in files:
        path = ROOT / name
        suffixes = {".txt", ".lock", ".yml", ".yaml", ".toml", ".cfg", ".py", ".md", ""}
        if path.suffix in suffixes and path != Path(__file__):
            assert not re.search(r"torch==\S*\+cpu", path.read_text(errors="ignore")), name


def test_lock_is_current_with_requirements_txt():
    assert lock.stale() == [], "requirements.txt changed after the lock was written: run `make lock`"


def test_stale_lock_is_detected(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(lock.REQUIREMENTS.read_text().replace("tqdm==", "tqdm==0.0.1 # was "))
    assert lock.stale(requirements) == [f"tqdm: requirements.txt pins 0.0.1, the lock has {PINS['tqdm']}"]
    requirements.write_text(lock.REQUIREMENTS.read_text() + "extra-package==1.0\n")
    assert lock.stale(requirements) == ["extra-package: requirements.txt pins 1.0, the lock has nothing"]


def test_lock_files_are_as_tools_lock_py_writes_them(tmp_path):
    """Catches a hand edit: the files must be exactly what `make lock` writes from their entries."""
    for path in (lock.LOCK, lock.CUDA_LOCK):
        rewritten = tmp_path / path.name
        lock.write_lock(rewritten, *lock.LOCK_TITLES[path.name], lock.read_lock(path))
        assert rewritten.read_text() == path.read_text(), f"{path.name} was edited by hand: run `make lock`"


def test_every_locked_package_has_one_exact_version_and_hashes_per_platform():
    for entries in (LOCKED, CUDA_LOCKED):
        assert entries
        for e in entries:
            assert re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", e.name) and "+" not in e.version, e
            assert e.hashes and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in e.hashes), e.name
            assert e.via, f"{e.name}: nothing requires it"
        names = [e.name for e in entries]
        for name in set(names):  # a package at two versions must be split by platform (disjoint markers)
            markers = [e.marker for e in entries if e.name == name]
            assert len(markers) == 1 or all(markers), name
    assert not {e.name for e in LOCKED} & {e.name for e in CUDA_LOCKED}
    assert all("sys_platform" in e.marker for e in CUDA_LOCKED), "the CUDA runtime is for Linux only"


def test_torch_lists_every_platforms_wheel():
    torch = next(e for e in LOCKED if e.name == "torch")
    # PyPI's CPython 3.11 wheels (Linux x86-64 and aarch64, macOS arm64, Windows) and the local CPU-only build
    assert len(torch.hashes) >= 5
    assert set(lock.LOCAL_TORCH_BUILDS[torch.version]) <= set(torch.hashes)


@pytest.mark.parametrize("entry", HERE, ids=lambda e: e.name)
def test_installed_version_matches_the_lock(entry):
    installed = installed_version(entry.name)
    assert installed is not None, f"run `make setup`: {entry.name} (locked {entry.version}) is not installed"
    # the local CPU-only wheel of torch is 2.13.0 with a local label
    assert Version(installed.split("+")[0]) == Version(entry.version), (
        f"run `make setup`: {entry.name} {installed} differs from requirements.lock ({entry.version})"
    )


def test_locked_packages_need_nothing_outside_the_lock():
    """What `pip check` checks, for the lock's packages: every requirement they declare here is installed
    in a version it accepts. A missing one would mean the lock is incomplete for this platform."""
    locked = {e.name for e in HERE} | {e.name for e in CUDA_LOCKED}
    problems = []
    for e in HERE:
        for line in importlib.metadata.requires(e.name) or []:
            requirement = Requirement(line)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            name = lock.normalize(requirement.name)
            version = installed_version(name)
            if version is None or name not in locked or not requirement.specifier.contains(version, prereleases=True):
                problems.append(f"{e.name} requires {requirement}, found {version or 'nothing'}")
    assert problems == []


def test_environment_yml_installs_the_lock():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    assert "nodejs" in deps and "pip" in deps
    pip_section = next(d["pip"] for d in deps if isinstance(d, dict))
    assert pip_section == ["-r requirements.lock", "-r requirements-cuda.lock"], "pins belong in the lock only"


def test_makefile_installs_the_lock_with_hashes():
    makefile = (ROOT / "Makefile").read_text()
    assert "pip install --require-hashes --no-deps -r requirements.lock" in makefile
    assert "pip install --require-hashes --no-deps -r requirements-cuda.lock" in makefile
    assert "-r requirements.txt" not in makefile, "requirements.txt is installed only through the lock"


def test_package_dependencies_are_all_pinned():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for dependency in project["dependencies"]:
        assert lock.normalize(re.split(r"[<>=!~ \[]", dependency)[0]) in PINS, dependency


def test_one_python_version_everywhere():
    python = lock.PYTHON
    major, minor = map(int, python.split("."))
    assert sys.version_info[:2] == (major, minor), f"tests run on Python {sys.version.split()[0]}, not {python}"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == f">={python},<{major}.{minor + 1}"
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert f"python={python}" in env["dependencies"]
    assert f"sys.version_info[:2] == ({major}, {minor})" in (ROOT / "Makefile").read_text()
    assert f"python{python}" in (ROOT / "Makefile").read_text()
    assert f"You need Python {python}" in (ROOT / "README.md").read_text()
    for path in (lock.LOCK, lock.CUDA_LOCK):
        assert f"for CPython {python} on" in path.read_text(), path.name
    from course import check, kernel

    assert check.check_python()[0] and f"course: {python}" in check.check_python()[1]
    assert f"(Python {python})" in kernel.KERNEL_DISPLAY_NAME
