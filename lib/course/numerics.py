"""One numeric path on every x86-64 machine, so that stored notebook outputs hold everywhere.

PyTorch, MKL, oneDNN and NumPy choose their CPU kernels by instruction set at run time, and reductions
split their work by thread count. The same notebook therefore prints other last digits on an AVX-512
laptop than on an AVX2 server, and a training run drifts apart after a few hundred steps. Pinning the
choice makes every x86-64 machine with AVX2 compute the same bits:

    ATEN_CPU_CAPABILITY=avx2        PyTorch's own kernels (softmax, GELU, LayerNorm, randn, ...) use AVX2 code
    MKL_CBWR=COMPATIBLE             MKL's matrix products take the one code path Intel documents as giving
                                    identical results on Intel and non-Intel (AMD) processors
    MKL_DYNAMIC=FALSE               ... with exactly the threads asked for (reproducibility needs a fixed count)
    OMP_NUM_THREADS=1               every reduction summed in the same order, whatever the core count
    MKL_NUM_THREADS=1
    ONEDNN_MAX_CPU_ISA=AVX2         oneDNN (mkldnn) JIT kernels capped at AVX2
    NPY_DISABLE_CPU_FEATURES=...    NumPy's AVX-512 loops off

The variables only work if they are set before torch (and numpy) load, which is why the course's Jupyter
kernel sets them (`course.kernel`, installed by `make setup`) and why a script, a recipe or pytest calls
`course.prepare_process()` before importing torch. Machines without AVX2 (Apple Silicon, ARM Linux, CPUs older
than 2013) run the course unpinned: their notebooks are checked by their asserts (`make test NBVAL=lax`), not by
printed digits.

Why one thread: the course's models are small, so a second thread buys little, and threads that wait for
each other on a busy machine (a shared server, a laptop running other work) can make a step many times
slower. One thread per notebook is fast everywhere; `make test` runs two notebooks at once instead.

What the pinned path cannot pin: the CPU vendor. MKL's vector-math `sqrt` (which `torch.sqrt`, `x ** 0.5` and the
for-loop and foreach Adam/AdamW call) is not correctly rounded on MKL's COMPATIBLE branch, and it rounds otherwise on
AMD than on Intel, whatever MKL_CBWR says; every other operation the trainings use computes the same bits on both
(`tools/fingerprints.py` compares two machines operation by operation). The course's trainings therefore run Adam
fused (`fused=True`), whose update uses the processor's own square root (IEEE-exact on every x86-64 CPU) instead of
MKL's. Where a stored output still depends on every bit of a training run, its cell carries the tag `cpu-sensitive`
(`tools/sensitive_cells.py` finds them): `make outputs` records in each notebook's metadata which CPU made its
outputs (`this_machine`), and `make test` compares those cells digit for digit only on a CPU of the same vendor; on
another vendor they are checked by their claims (`cells_checked_by_claims`). Every other cell stays strict.

The fast kernel (`course.kernel`, "Transformers from Scratch (fast)") takes the native path instead: the
variables above removed, the CPU's best kernels, and as many threads as the cores this process may use
(`usable_cores`). It is for students who do not need the stored digits; `SCRATCH_NUMERICS=native` marks it,
so that `course.prepare_process()` pins nothing there or in the processes it starts.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

PINNED_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "COMPATIBLE",
    "MKL_DYNAMIC": "FALSE",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
}
THREADS = int(PINNED_ENV["OMP_NUM_THREADS"])
NATIVE_VARIABLE = "SCRATCH_NUMERICS"  # "native": the fast kernel's process, which nothing pins


def cpu_flags() -> set[str]:
    """The CPU's instruction-set flags, lower case ('avx2', 'fma', ...); empty where they cannot be read."""
    if sys.platform.startswith("linux"):
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            return set()
        for line in text.splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].lower().split())
        return set()
    if sys.platform == "darwin":
        names = ("machdep.cpu.features", "machdep.cpu.leaf7_features")
        try:
            out = subprocess.run(["sysctl", "-n", *names], capture_output=True, text=True, timeout=5).stdout
        except (OSError, subprocess.SubprocessError):
            return set()
        return set(out.lower().replace(".", "_").split())
    if sys.platform == "win32":
        import ctypes

        PF_AVX2_INSTRUCTIONS_AVAILABLE = 40  # every AVX2 processor also has FMA3
        if ctypes.windll.kernel32.IsProcessorFeaturePresent(PF_AVX2_INSTRUCTIONS_AVAILABLE):
            return {"avx2", "fma"}
    return set()


def cpu_supports_pinned_path() -> bool:
    """True on x86-64 machines with AVX2 and FMA: every Intel CPU since 2013 (Haswell), every AMD Zen."""
    if platform.machine().lower() not in {"x86_64", "amd64"}:
        return False
    flags = cpu_flags()
    return "avx2" in flags and ("fma" in flags or "fma3" in flags)


def pin_environment(environ=os.environ) -> bool:
    """Set the pinned variables where they are unset; True if this machine can take the pinned path.

    Call it before torch is imported. A variable already set (by the course kernel, or by someone who
    overrides one on purpose) is left as it is. Nothing is set in the fast kernel (`native_requested`).
    """
    if native_requested(environ) or not cpu_supports_pinned_path():
        return False
    for name, value in PINNED_ENV.items():
        environ.setdefault(name, value)
    return True


def native_requested(environ=os.environ) -> bool:
    """True in the fast kernel and what it starts: SCRATCH_NUMERICS=native asks for the native path."""
    return environ.get(NATIVE_VARIABLE, "").strip().lower() == "native"


def _cgroup_cpu_limit(root: Path = Path("/")) -> float | None:
    """The tightest CPU quota on this process's cgroup and its parents, in cores; None if there is none.

    Containers and JupyterHub's spawners limit a user's CPU this way, while the affinity shows the host's cores.
    """
    limits = []
    try:  # cgroup v1, as a container sees its own: cfs quota and period in microseconds (quota -1: none)
        quota, period = (float((root / f"sys/fs/cgroup/cpu/cpu.cfs_{n}_us").read_text()) for n in ("quota", "period"))
        if quota > 0 and period > 0:
            limits.append(quota / period)
    except (OSError, ValueError):
        pass
    try:  # cgroup v2: "<quota> <period>" or "max <period>" in cpu.max of this process's group and its parents
        lines = (root / "proc/self/cgroup").read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        if not line.startswith("0::"):
            continue
        folder = root / "sys/fs/cgroup" / line.split(":", 2)[2].lstrip("/")
        for candidate in (folder, *folder.parents):
            if not candidate.is_relative_to(root / "sys/fs/cgroup"):
                break
            try:
                quota, period = (candidate / "cpu.max").read_text().split()[:2]
                if quota != "max" and float(period) > 0:
                    limits.append(float(quota) / float(period))
            except (OSError, ValueError):
                continue
    return min(limits) if limits else None


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity, capped by a cgroup CPU quota; at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        cores = os.cpu_count() or 1
    limit = _cgroup_cpu_limit()
    if limit is not None:
        cores = min(cores, max(1, int(limit + 0.5)))
    return max(1, cores)


def native_environment(environ=os.environ) -> dict[str, str]:
    """A copy of environ for the fast kernel: the pinned variables removed, SCRATCH_NUMERICS=native, and
    OMP_NUM_THREADS / MKL_NUM_THREADS set to the usable cores (a container's quota, not the host's core count)."""
    env = {name: value for name, value in environ.items() if name not in PINNED_ENV}
    threads = str(usable_cores())
    env.update({NATIVE_VARIABLE: "native", "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads})
    return env


def status() -> dict[str, object]:
    """What the running process computes with: the values that decide the numeric path."""
    import torch

    return {
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        **{name: os.environ.get(name) for name in PINNED_ENV},
    }


def problems() -> list[str]:
    """Why this process is off the pinned path (empty if it is on it). Imports torch."""
    found = status()
    wrong = [
        f"{name}={found[name] or 'unset'} (pinned: {value})"
        for name, value in PINNED_ENV.items()
        if found[name] != value
    ]
    if not any(found[name] for name in PINNED_ENV):
        wrong = ["none of the pinned variables is set"]
    if found["cpu_capability"] != "AVX2":
        wrong.append(f"torch runs {found['cpu_capability']} kernels (pinned: AVX2)")
    if found["threads"] != THREADS:
        wrong.append(f"torch uses {found['threads']} threads (pinned: {THREADS})")
    return wrong


def nbval_mode() -> str:
    """'strict' where the stored outputs hold (the pinned path), 'lax' elsewhere."""
    return "strict" if cpu_supports_pinned_path() else "lax"


SENSITIVE_TAG = "cpu-sensitive"  # a cell whose stored output depends on every bit of a training run
METADATA_KEY = "scratch"  # the notebook metadata's {"outputs_made_on": this_machine()} of the run that made its outputs


def _cpuinfo_field(name: str, text: str | None = None) -> str:
    if text is None:
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            return ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return ""


def cpu_vendor(cpuinfo: str | None = None) -> str:
    """The CPU's vendor as the processor names itself ('GenuineIntel', 'AuthenticAMD', 'Apple', ...); '' if unknown."""
    if sys.platform.startswith("linux") or cpuinfo is not None:
        return _cpuinfo_field("vendor_id", cpuinfo) or _cpuinfo_field("CPU implementer", cpuinfo)
    if sys.platform == "darwin":
        try:
            out = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.vendor"], capture_output=True, text=True, timeout=5
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        return out or ("Apple" if platform.machine() == "arm64" else "")
    if sys.platform == "win32":
        identifier = os.environ.get("PROCESSOR_IDENTIFIER", "")
        return identifier.rsplit(",", 1)[-1].strip() if "," in identifier else ""
    return ""


def cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU's model name ('Intel(R) Xeon(R) Processor', 'AMD EPYC 7763 64-Core Processor', ...); '' if unknown."""
    if sys.platform.startswith("linux") or cpuinfo is not None:
        return _cpuinfo_field("model name", cpuinfo)
    return platform.processor()


def this_machine() -> dict[str, str]:
    """What a notebook's metadata records of the machine that made its outputs (and `make test` compares)."""
    return {
        "cpu_vendor": cpu_vendor(),
        "cpu_model": cpu_model(),
        "numeric_path": "native" if native_requested() else ("pinned" if cpu_supports_pinned_path() else "unpinned"),
    }


def outputs_made_on(notebook: dict) -> dict | None:
    """The machine record `make outputs` wrote into a notebook (a dict as json or nbformat reads it); None if none."""
    return notebook.get("metadata", {}).get(METADATA_KEY, {}).get("outputs_made_on")


def digits_comparable(made_on: dict | None, here: dict) -> bool:
    """Can the `cpu-sensitive` outputs made on `made_on` be compared digit for digit here? Only on the pinned path,
    on a CPU of the same vendor (an unrecorded or unknown vendor counts as another)."""
    return bool(
        made_on
        and made_on.get("numeric_path") == "pinned"
        and here.get("numeric_path") == "pinned"
        and made_on.get("cpu_vendor")
        and made_on.get("cpu_vendor") == here.get("cpu_vendor")
    )


def cells_checked_by_claims(notebook: dict, here: dict) -> list[int]:
    """The code cells (numbered as nbval numbers them: code cells only, from 0) whose stored outputs `make test`
    does not compare on this machine: the `cpu-sensitive` ones, where the outputs came from another CPU vendor."""
    code_cells = [cell for cell in notebook.get("cells", []) if cell.get("cell_type") == "code"]
    if digits_comparable(outputs_made_on(notebook), here):
        return []
    return [i for i, cell in enumerate(code_cells) if SENSITIVE_TAG in cell.get("metadata", {}).get("tags", [])]
