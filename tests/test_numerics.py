"""The pinned numeric path: every notebook's kernel computes with the same CPU kernels and threads.

Stored notebook outputs hold on another machine only if the kernel that runs them pins PyTorch's, MKL's
and NumPy's kernel choice before torch loads. These tests start the kernel each notebook names, as
nbval, `make outputs`, `make book` and JupyterLab do, and ask it what it computes with.
"""

import json
import platform
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from jupyter_client.manager import start_new_kernel

from scratch import kernel, numerics

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
pinned_cpu = pytest.mark.skipif(
    not numerics.cpu_supports_pinned_path(),
    reason="this CPU has no AVX2: the course runs unpinned here (make test NBVAL=lax)",
)


def kernel_names():
    return sorted({json.loads(p.read_text())["metadata"]["kernelspec"]["name"] for p in NOTEBOOKS})


def test_every_notebook_names_the_course_kernel():
    for path in NOTEBOOKS:
        spec = json.loads(path.read_text())["metadata"]["kernelspec"]
        assert spec["name"] == kernel.KERNEL_NAME, (
            f"{path.name}: kernelspec {spec['name']!r}; the course kernel is 'scratch'"
        )
        assert spec["display_name"] == kernel.KERNEL_DISPLAY_NAME, path.name


@pinned_cpu
@pytest.mark.parametrize("name", kernel_names())
def test_the_kernel_spec_pins_the_numeric_path(name):
    try:
        spec = KernelSpecManager().get_kernel_spec(name)
    except NoSuchKernel:
        pytest.fail(f"kernel {name!r} is not installed: run `make setup` (or `python -m scratch.kernel install`)")
    missing = {k: v for k, v in numerics.PINNED_ENV.items() if spec.env.get(k) != v}
    assert not missing, f"kernel {name!r} ({spec.resource_dir}) does not pin {missing}: run `make setup`"


@pinned_cpu
@pytest.mark.slow
@pytest.mark.parametrize("name", kernel_names())
def test_a_started_kernel_runs_on_the_pinned_path(name):
    """What the kernel really computes with, asked from inside it after `import torch` (before scratch)."""
    manager, client = start_new_kernel(kernel_name=name)
    try:
        code = (
            "import json, os, torch\n"
            "print(json.dumps({'capability': torch.backends.cpu.get_cpu_capability(),"
            " 'threads': torch.get_num_threads(), 'env': dict(os.environ)}))"
        )
        reply = {}

        def collect(msg):
            if msg["msg_type"] == "stream":
                reply.update(json.loads(msg["content"]["text"]))

        client.execute_interactive(code, output_hook=collect, timeout=120)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert reply["capability"] == "AVX2"
    assert reply["threads"] == numerics.THREADS
    for variable, value in numerics.PINNED_ENV.items():
        assert reply["env"].get(variable) == value, variable


@pinned_cpu
def test_this_test_process_is_on_the_pinned_path():
    """The root conftest imports scratch before anything imports torch; the exercise checks run here."""
    assert numerics.problems() == []


def test_pin_environment_fills_in_only_what_is_unset(monkeypatch):
    monkeypatch.setattr(numerics, "cpu_supports_pinned_path", lambda: True)
    environ = {"ATEN_CPU_CAPABILITY": "default"}
    assert numerics.pin_environment(environ)
    assert environ["ATEN_CPU_CAPABILITY"] == "default"  # an explicit choice is kept
    assert environ["MKL_CBWR"] == "COMPATIBLE"
    assert set(environ) == set(numerics.PINNED_ENV)


def test_other_cpus_run_unpinned_and_compare_laxly(monkeypatch):
    monkeypatch.setattr(platform, "machine", lambda: "arm64")
    assert not numerics.cpu_supports_pinned_path()
    environ = {}
    assert not numerics.pin_environment(environ) and environ == {}
    assert numerics.nbval_mode() == "lax"
    assert "env" not in kernel.kernel_spec()


def test_cpus_without_avx2_run_unpinned(monkeypatch):
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(numerics, "cpu_flags", lambda: {"sse2", "avx"})
    assert not numerics.cpu_supports_pinned_path()
    monkeypatch.setattr(numerics, "cpu_flags", lambda: {"sse2", "avx", "avx2", "fma"})
    assert numerics.cpu_supports_pinned_path() and numerics.nbval_mode() == "strict"


def test_install_writes_the_kernel_into_the_given_environment(tmp_path, monkeypatch):
    monkeypatch.setattr(numerics, "cpu_supports_pinned_path", lambda: True)
    path = kernel.install(tmp_path)
    assert path == tmp_path / "share" / "jupyter" / "kernels" / "scratch" / "kernel.json"
    spec = json.loads(path.read_text())
    assert spec["env"] == numerics.PINNED_ENV
    assert Path(spec["argv"][0]).is_absolute()  # this environment's Python, whichever Jupyter starts it
    assert spec["argv"][1:3] == ["-m", "ipykernel_launcher"]
