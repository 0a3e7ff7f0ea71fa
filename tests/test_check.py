"""`python -m course.check`: one OK/FAIL line per pinned package and asset, a fix for each FAIL,
and nothing fetched while checking."""

import subprocess
import sys

import pytest

from course import assets, check, checkpoints


def test_reads_every_pin_of_requirements(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("# comment\ntorch==2.13.0\nnumpy==2.4.6  # why\n\n-e .\nfoo[extra]==1.0\n")
    assert check.pinned_packages(req) == {"torch": "2.13.0", "numpy": "2.4.6", "foo": "1.0"}
    assert "torch" in check.pinned_packages() and len(check.pinned_packages()) >= 20


def test_package_versions_against_pins():
    ok, what, _ = check.check_package("pytest", __import__("pytest").__version__)
    assert ok and "pytest" in what
    ok, what, fix = check.check_package("pytest", "0.0.1")
    assert not ok and "pinned 0.0.1" in what and "-r requirements.lock" in fix
    ok, what, fix = check.check_package("no-such-package-here", "1.0")
    assert not ok and "not installed" in what and fix


def test_local_build_tag_is_the_same_release(monkeypatch):
    monkeypatch.setattr(check.importlib.metadata, "version", lambda name: "2.13.0+cpu")
    assert check.check_package("torch", "2.13.0")[0]


@pytest.mark.grading
def test_grading_is_one_line_for_nbgrader_and_its_lock():
    ok, what, _ = check.check_grading()  # make setup installs requirements-grading.lock
    assert ok and what.startswith("nbgrader 0.9.6 and ") and "requirements-grading.lock" in what


def test_grading_names_what_differs_from_its_lock(tmp_path):
    lock = tmp_path / "requirements-grading.lock"
    lock.write_text(
        "# a lock\n\nnbgrader==0.0.1 \\\n    --hash=sha256:00\nno-such-package-here==1.0 \\\n    --hash=sha256:00\n"
    )
    ok, what, fix = check.check_grading(lock)
    assert not ok and "nbgrader" in what and "pinned 0.0.1" in what and "no-such-package-here not installed" in what
    assert "requirements-grading.lock" in fix


def test_missing_asset_is_reported_not_fetched(tmp_path, monkeypatch):
    monkeypatch.setattr(assets, "ASSET_DIR", tmp_path)
    fetched = []
    monkeypatch.setattr(assets, "_fetch_npm", lambda pkg: fetched.append(pkg))
    ok, what, fix = check.check_asset("moby-dick")
    assert not ok and "not fetched" in what and "course.assets" in fix
    assert fetched == [] and list(tmp_path.iterdir()) == []


def test_broken_checkpoint_is_a_fail(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoints, "CHECKPOINT_DIR", tmp_path)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "model.safetensors").write_bytes(b"not a safetensors file")
    ok, what, fix = check.check_checkpoint("broken")
    assert not ok and "not a safetensors file" in what and "git checkout" in fix


def test_variant_folders_and_results_only_folders_are_checked(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoints, "CHECKPOINT_DIR", tmp_path)
    (tmp_path / "variants" / "small").mkdir(parents=True)
    (tmp_path / "variants" / "small" / "model.safetensors").write_bytes(b"not a safetensors file")
    ok, what, _ = check.check_checkpoint("variants")
    assert not ok and "variants/small" in what and "not a safetensors file" in what
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "metrics.json").write_text('{"runs": []}')
    assert check.check_checkpoint("results")[0]
    (tmp_path / "results" / "metrics.json").write_text("{not json")
    assert not check.check_checkpoint("results")[0]
    (tmp_path / "empty").mkdir()
    ok, what, _ = check.check_checkpoint("empty")
    assert not ok and "model.safetensors is missing" in what


def test_main_lists_every_package_and_asset_and_fails_on_a_fail(monkeypatch, capsys):
    monkeypatch.setattr(check, "pinned_packages", lambda: {"pytest": "0.0.1"})
    assert check.main() == 1
    out = capsys.readouterr().out
    assert "FAIL  pytest" in out and "fix: make setup" in out
    for key in assets.all_assets():
        assert f"asset {key}" in out


def test_exit_code_and_summary(monkeypatch, capsys):
    monkeypatch.setattr(check, "all_checks", lambda: [(True, "python 3.11.9 (course: 3.11)", "")])
    assert check.main() == 0 and "1 OK, 0 FAIL: ready for the course" in capsys.readouterr().out
    monkeypatch.setattr(check, "all_checks", lambda: [(True, "a", ""), (False, "b", "do this")])
    assert check.main() == 1
    assert capsys.readouterr().out.splitlines() == ["OK    a", "FAIL  b", "      fix: do this", "", "1 OK, 1 FAIL"]


@pytest.mark.assets
@pytest.mark.slow
def test_runs_as_a_module_and_finds_the_test_environment_ready():
    """`make test` sets up first, so here every pinned package, asset and checkpoint and the course's kernel are
    OK (Chromium may be missing: the book's browser test then skips)."""
    result = subprocess.run([sys.executable, "-m", "course.check"], capture_output=True, text=True)
    lines = [line for line in result.stdout.splitlines() if line.startswith(("OK", "FAIL"))]
    folders = [p for p in checkpoints.CHECKPOINT_DIR.iterdir() if p.is_dir()]
    # python, the lock against requirements.txt, each pin, the lock's other packages (one line), nbgrader (one line),
    # assets, checkpoints, the kernel, Chromium
    assert len(lines) == 2 + len(check.pinned_packages()) + 2 + len(assets.all_assets()) + len(folders) + 2
    assert lines[0].startswith("OK    python 3.11")
    assert [line for line in lines if line.startswith("FAIL") and "chromium" not in line] == []
    assert result.returncode == (1 if any(line.startswith("FAIL") for line in lines) else 0)


# `python -m course.check` under an import blocker: a finder ahead of all others refuses the named packages, as on a
# machine where they are not installed (their metadata stays, so only the checks that import them can notice).
BLOCKED_RUN = """
import runpy, sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)

sys.meta_path.insert(0, NotInstalled())
runpy.run_module("course.check", run_name="__main__", alter_sys=True)
"""


def run_check(*python_args):
    result = subprocess.run(
        [sys.executable, *python_args], capture_output=True, text=True, cwd=assets.ROOT, timeout=120
    )
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stdout.splitlines()
    fails = [(line, fix) for line, fix in zip(lines, lines[1:] + [""]) if line.startswith("FAIL")]
    for line, fix in fails:
        assert fix.startswith("      fix: "), f"{line!r} has no fix"
    assert result.returncode == 1 and fails, result.stdout
    return [line for line, _ in fails]


def test_reports_a_torch_that_cannot_be_imported_instead_of_crashing():
    fails = run_check("-c", BLOCKED_RUN.format(blocked={"torch"}))
    assert [line for line in fails if "cannot import torch" in line] == [
        "FAIL  the checkpoints in data/checkpoints/ not checked: cannot import torch (No module named 'torch')"
    ]


def test_reports_every_missing_package_on_a_bare_python():
    """Only the standard library (no site-packages: -S), the course's package found from its source folder."""
    code = f"import runpy, sys; sys.path.insert(0, {str(assets.ROOT / 'lib')!r}); " + (
        "runpy.run_module('course.check', run_name='__main__', alter_sys=True)"
    )
    fails = run_check("-I", "-S", "-c", code)
    assert "FAIL  torch not installed (pinned 2.13.0)" in fails
    for missing in ("torch", "packaging", "jupyter_client"):
        assert any(f"cannot import {missing} " in line for line in fails), missing


def test_kernel_check_names_a_missing_or_unpinned_kernel(monkeypatch):
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager, NoSuchKernel

    from course import kernel, numerics

    monkeypatch.setattr(numerics, "cpu_supports_pinned_path", lambda: True)
    installed = {}

    def get_kernel_spec(self, name):
        if name not in installed:
            raise NoSuchKernel(name)
        return KernelSpec(**installed[name])

    monkeypatch.setattr(KernelSpecManager, "get_kernel_spec", get_kernel_spec)
    ok, what, fix = check.check_kernel()
    assert not ok and "not installed" in what and "course.kernel install" in fix

    unpinned = kernel.kernel_spec()
    del unpinned["env"]["ATEN_CPU_CAPABILITY"]
    installed[kernel.KERNEL_NAME] = unpinned
    ok, what, fix = check.check_kernel()
    assert not ok and "ATEN_CPU_CAPABILITY" in what and fix

    installed[kernel.KERNEL_NAME] = kernel.kernel_spec()
    ok, what, _ = check.check_kernel()
    assert ok and "pinned numeric path" in what
