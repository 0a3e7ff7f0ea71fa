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


AMD_CPUINFO = (
    "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7763 64-Core Processor\nflags\t\t: avx2 fma\n"
)
INTEL_CPUINFO = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t: avx2\n"


def test_cpu_vendor_and_model_are_read_from_cpuinfo():
    assert numerics.cpu_vendor(AMD_CPUINFO) == "AuthenticAMD"
    assert numerics.cpu_model(AMD_CPUINFO) == "AMD EPYC 7763 64-Core Processor"
    assert numerics.cpu_vendor(INTEL_CPUINFO) == "GenuineIntel"
    assert numerics.cpu_vendor("processor\t: 0\n") == ""
    here = numerics.this_machine()
    assert set(here) == {"cpu_vendor", "cpu_model", "numeric_path"}
    assert here["numeric_path"] == ("pinned" if numerics.cpu_supports_pinned_path() else "unpinned")


def machine(vendor, path="pinned"):
    return {"cpu_vendor": vendor, "cpu_model": f"a {vendor} CPU", "numeric_path": path}


def notebook(made_on, tags_per_code_cell):
    """A notebook as json reads it: a markdown cell first (nbval numbers code cells only), then the code cells."""
    cells = [{"cell_type": "markdown", "metadata": {"tags": ["cpu-sensitive"]}, "source": "not a code cell"}]
    cells += [{"cell_type": "code", "metadata": {"tags": tags}, "source": ""} for tags in tags_per_code_cell]
    metadata = {"kernelspec": {"name": "scratch"}}
    if made_on is not None:
        metadata["scratch"] = {"outputs_made_on": made_on}
    return {"cells": cells, "metadata": metadata}


def test_sensitive_cells_are_checked_by_claims_only_on_another_vendor():
    tags = [[], ["cpu-sensitive"], ["claims"], ["cpu-sensitive", "nbval-ignore-output"], []]
    intel, amd = machine("GenuineIntel"), machine("AuthenticAMD")
    assert numerics.cells_checked_by_claims(notebook(intel, tags), intel) == []  # the machine that made them
    assert numerics.cells_checked_by_claims(notebook(intel, tags), amd) == [1, 3]  # code cells 1 and 3 only
    assert numerics.cells_checked_by_claims(notebook(amd, tags), intel) == [1, 3]
    assert numerics.cells_checked_by_claims(notebook(None, tags), intel) == [1, 3]  # unrecorded: no promise
    assert numerics.cells_checked_by_claims(notebook(machine(""), tags), machine("")) == [1, 3]  # unknown vendors
    assert numerics.cells_checked_by_claims(notebook(intel, tags), machine("GenuineIntel", "native")) == [1, 3]
    assert numerics.cells_checked_by_claims(notebook(intel, [[], []]), amd) == []  # nothing tagged: all strict
