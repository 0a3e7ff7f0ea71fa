"""The fast kernel ("Transformers from Scratch (fast)"): the native numeric path on every usable core.

No notebook names it (tests/test_numerics.py holds the notebooks to the pinned kernel); students pick it by hand.
It must start on the native path even when the process that starts it was pinned (nbval under a pytest whose
conftest imported course, a hub whose spawner copied a pinned environment), and `import course` in it must
neither pin anything nor warn, whichever comes first, torch or course.
"""

import json
import os

import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from jupyter_client.manager import start_new_kernel

import course
from course import kernel, numerics


def test_the_native_environment_drops_every_pinned_variable():
    pinned = dict(numerics.PINNED_ENV, HOME="/home/student")
    env = numerics.native_environment(pinned)
    assert not {"ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "NPY_DISABLE_CPU_FEATURES"} & set(env)
    assert env["HOME"] == "/home/student"
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == str(numerics.usable_cores())
    assert numerics.native_requested(env)


def test_nothing_pins_a_process_that_asked_for_the_native_path():
    env = {numerics.NATIVE_VARIABLE: "native"}
    assert numerics.pin_environment(env) is False
    assert env == {numerics.NATIVE_VARIABLE: "native"}


def test_usable_cores_is_a_positive_count():
    assert numerics.usable_cores() >= 1


def test_a_cgroup_quota_caps_the_cores(tmp_path):
    """A hub's or container's CPU limit, as cgroup v2 and v1 state it: the tightest one counts."""
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text("0::/kubepods/pod1/student\n")
    group = tmp_path / "sys/fs/cgroup/kubepods/pod1/student"
    group.mkdir(parents=True)
    assert numerics._cgroup_cpu_limit(tmp_path) is None
    (group / "cpu.max").write_text("max 100000\n")
    (group.parent / "cpu.max").write_text("150000 100000\n")
    assert numerics._cgroup_cpu_limit(tmp_path) == 1.5
    v1 = tmp_path / "sys/fs/cgroup/cpu"
    v1.mkdir()
    (v1 / "cpu.cfs_quota_us").write_text("100000\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    assert numerics._cgroup_cpu_limit(tmp_path) == 1.0


def test_the_fast_kernel_spec_starts_through_run_fast():
    spec = kernel.kernel_spec(fast=True)
    assert spec["display_name"] == kernel.FAST_KERNEL_DISPLAY_NAME
    assert spec["argv"][1:4] == ["-m", "course.kernel", "run-fast"]
    assert spec["env"] == {numerics.NATIVE_VARIABLE: "native", **course.OFFLINE_ENV}


@pytest.mark.slow
def test_a_started_fast_kernel_runs_natively_on_every_usable_core(monkeypatch):
    """Started from this test process, which the root conftest pinned: the kernel must drop that, and keep the rest
    of the environment it was started with (`make test-fast` sets SCRATCH_CLAIMS=strict for it)."""
    monkeypatch.setenv("SCRATCH_CLAIMS", "strict")
    try:
        KernelSpecManager().get_kernel_spec(kernel.FAST_KERNEL_NAME)
    except NoSuchKernel:
        pytest.fail(f"kernel {kernel.FAST_KERNEL_NAME!r} is not installed: run `make setup`")
    manager, client = start_new_kernel(kernel_name=kernel.FAST_KERNEL_NAME)
    streams = {"stdout": "", "stderr": ""}

    def collect(msg):
        if msg["msg_type"] == "stream":
            streams[msg["content"]["name"]] += msg["content"]["text"]

    try:
        code = (
            "import json, os, subprocess, sys, torch\n"
            "import course\n"  # after torch, as most lectures do: no warning on the native path
            "child = subprocess.run([sys.executable, '-c', 'import os, course; print(os.environ.get(\"MKL_CBWR\"))'],"
            " capture_output=True, text=True).stdout.strip()\n"
            "print(json.dumps({'capability': torch.backends.cpu.get_cpu_capability(),"
            " 'threads': torch.get_num_threads(), 'env': dict(os.environ), 'child': child}))"
        )
        client.execute_interactive(code, output_hook=collect, timeout=120)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert streams["stderr"] == "", f"the fast kernel warned: {streams['stderr']}"
    reply = json.loads(streams["stdout"])
    assert reply["threads"] == numerics.usable_cores()
    for variable in set(numerics.PINNED_ENV) - {"OMP_NUM_THREADS", "MKL_NUM_THREADS"}:
        assert variable not in reply["env"], f"the fast kernel kept {variable}={reply['env'][variable]}"
    assert reply["child"] == "None", "a process the fast kernel starts must not pin itself"
    for variable in ("SCRATCH_CLAIMS", "PATH"):
        assert reply["env"].get(variable) == os.environ[variable], f"the fast kernel lost {variable}"
    if numerics.cpu_supports_pinned_path() and "avx512f" in numerics.cpu_flags():
        assert reply["capability"] != "AVX2", "the fast kernel should use this CPU's AVX-512 kernels"
