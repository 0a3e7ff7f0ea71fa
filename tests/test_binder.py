"""The course's image, as repo2docker builds it (binder/; docs/teaching.md, "Running a class on JupyterHub"),
checked without Docker.

`repo2docker --no-build` prints the Dockerfile it would build; the image's own steps are binder/postBuild, which
runs `make image` in the image's Python environment, so `make -n image` with that environment shows them. Together
they must: take Python 3.11 from binder/ (not the root's environment.yml, whose CUDA lock would bloat the image),
copy the repository in as the notebook user, then install the three hash-checked locks (torch first, as its CPU
build where it can be had), the course's package, both Jupyter kernels, and fetch and verify every required asset.
"""

import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"
LOCKS = ("requirements.lock", "requirements-grading.lock", "requirements-hub.lock")


@functools.cache
def dockerfile() -> tuple[str, str]:
    """The Dockerfile repo2docker would build from this repository, and what it said while planning it."""
    result = subprocess.run(
        [sys.executable, "-m", "repo2docker", "--no-build", "--user-id", "1000", "--user-name", "jovyan", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"repo2docker could not plan the image:\n{result.stderr[-3000:]}"
    return result.stdout, result.stderr


def resolve(value: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: env.get(m[1], m[0]), value)


def image_env(text: str) -> dict[str, str]:
    """The ENV values of the Dockerfile, ${...} resolved in order."""
    env: dict[str, str] = {}
    for block in re.findall(r"^ENV (.+?)(?<!\\)$", text, re.MULTILINE | re.DOTALL):
        for name, value in re.findall(r"(\w+)=(\S+)", block.replace("\\\n", " ")):
            env[name] = resolve(value, env)
    return env


@pytest.mark.hub
def test_the_dockerfile_builds_python_3_11_and_runs_post_build_on_the_repository():
    text, log = dockerfile()
    assert "Building conda environment for python=3.11" in log, "binder/runtime.txt must give the image Python 3.11"
    assert "environment.yml" not in text and "requirements-cuda.lock" not in text, (
        "repo2docker must read binder/ (the root's environment.yml installs PyPI's CUDA build of torch)"
    )
    copy = text.index("COPY --chown=1000:1000 src/ ${REPO_DIR}/")
    user = text.index("USER ${NB_USER}", copy)
    post_build = text.index("RUN ./binder/postBuild", user)
    assert copy < user < post_build, "postBuild must run as the notebook user, on the copied repository"
    assert text.count("RUN ./binder/postBuild") == 1


@pytest.mark.hub
def test_post_build_installs_the_locks_the_package_the_kernels_and_the_assets():
    text, _ = dockerfile()
    prefix = image_env(text)["NB_PYTHON_PREFIX"]
    assert prefix == "/srv/conda/envs/notebook", prefix
    script = (BINDER / "postBuild").read_text()
    assert script.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in script
    assert (BINDER / "postBuild").stat().st_mode & 0o111, "binder/postBuild must be executable"
    assert 'make image VENV="${NB_PYTHON_PREFIX}" PYTHON="${NB_PYTHON_PREFIX}/bin/python"' in script
    # what `make image` runs in the image's environment (-B: as on a fresh image, where nothing is built yet)
    plan = subprocess.run(
        ["make", "-n", "-B", "image", f"VENV={prefix}", f"PYTHON={prefix}/bin/python"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert plan.returncode == 0, plan.stderr
    commands = plan.stdout
    pip = f"{prefix}/bin/python -m pip install"
    torch = f"{pip} --require-hashes --no-deps --no-index -r {prefix}/torch.lock"  # first: a CPU build if offered
    installs = [*(f"{pip} --require-hashes --no-deps -r {lock}" for lock in LOCKS), f"{pip} --no-deps -e ."]
    kernels = f"{prefix}/bin/python -m course.kernel install"  # both kernels, into the image's environment
    assets = f'{prefix}/bin/python -c "from course import assets;'  # every required asset, fetched and verified
    for step in (torch, *installs, kernels, assets):
        assert step in commands, f"`make image` does not run: {step}\n{commands}"
    where = commands.index
    assert where(torch) < min(map(where, installs)), "torch comes first, so that no lock can bring PyPI's CUDA build"
    assert max(map(where, installs)) < min(where(kernels), where(assets)), "kernels and assets need the packages"
    assert "assets.verify(k)" in commands and "assets.OPTIONAL_ASSETS" in commands
    assert "apt-get" not in commands, "the image's set-up needs no root (postBuild runs as the notebook user)"


def test_the_image_takes_torch_from_pytorchs_cpu_builds_whose_hash_the_lock_holds():
    from course.check import lock_tool

    lock = lock_tool()
    script = (BINDER / "postBuild").read_text()
    assert "PIP_FIND_LINKS=https://download.pytorch.org/whl/cpu/torch/" in script
    torch = next(e for e in lock.read_lock(lock.LOCK) if e.name == "torch")
    assert set(lock.LOCAL_TORCH_BUILDS[torch.version]) <= set(torch.hashes), "the lock must accept the CPU build"


def test_a_local_build_leaves_out_what_the_image_makes_itself():
    ignored = (ROOT / ".dockerignore").read_text().split()
    for path in (".venv/", "data/assets/", "data/cache/", "build/"):
        assert path in ignored, f".dockerignore should leave out {path}"


def test_the_hub_lock_is_current():
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "lock_addon.py"), "hub", "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
