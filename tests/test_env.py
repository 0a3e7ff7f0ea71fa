"""The environment is what requirements.txt says, and the conda path stays consistent with it."""

import importlib.metadata
import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def pinned_requirements() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep, f"requirements.txt: {line!r} is not an exact pin (name==version)"
            pins[name.strip()] = version.strip()
    return pins


def test_torch_is_pinned_exactly_without_a_local_label():
    assert pinned_requirements()["torch"] == "2.13.0"
    import torch

    assert torch.__version__.split("+")[0] == "2.13.0"


def test_no_committed_file_names_a_local_build_of_torch():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    for name in files:
        path = ROOT / name
        if path.suffix in {".txt", ".yml", ".yaml", ".toml", ".cfg", ".py", ".md", ""} and path != Path(__file__):
            assert not re.search(r"torch==\S*\+cpu", path.read_text(errors="ignore")), name


@pytest.mark.parametrize("name, version", sorted(pinned_requirements().items()))
def test_installed_version_matches_the_pin(name, version):
    installed = importlib.metadata.version(name).split("+")[0]  # the local CPU wheel is 2.13.0+cpu
    assert installed == version, f"run `make setup`: {name} {installed} differs from requirements.txt"


def test_environment_yml_installs_requirements_txt_and_the_package():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    assert "python=3.11" in deps and "nodejs" in deps and "pip" in deps
    pip_section = next(d["pip"] for d in deps if isinstance(d, dict))
    assert pip_section == ["-r requirements.txt", "-e ."], "pins belong in requirements.txt only"


def test_package_dependencies_are_all_pinned():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = {name.lower() for name in pinned_requirements()}
    for dependency in project["dependencies"]:
        assert re.split(r"[<>=!~ \[]", dependency)[0].lower() in pins, dependency
