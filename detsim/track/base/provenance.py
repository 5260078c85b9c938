"""Where and with what a result was made: git state, the CPU, and the machine class.

The git state is that of the folder the command runs in, not of the checkout the package is installed from.
A **machine class** is what bit-exact results depend on besides the code and its inputs (CPU architecture,
vendor and ATen ISA level, torch version, threads, dtype, device): two runs can only be expected to give the
same image bits when their classes are equal. What torch reports is read from the torch module the caller
passes: this module imports no torch.
"""

from __future__ import annotations

import json
import platform
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Mapping

from .git import query
from .hashing import fingerprint, sha256_bytes

ENV_VARS = (  # the environment variables a result depends on (recorded by runtime.environment)
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "CUBLAS_WORKSPACE_CONFIG",
    "TRITON_INTERPRET", "TORCHINDUCTOR_DETERMINISTIC", "TORCHINDUCTOR_CACHE_DIR", "PYTHONHASHSEED",
    "ATEN_CPU_CAPABILITY", "MKL_CBWR",
)


def repo_root(start: Path | None = None) -> Path | None:
    """The git work tree enclosing ``start`` (default: the working directory), or None."""
    out = query(start or Path.cwd(), "rev-parse", "--show-toplevel")
    return Path(out) if out else None


def git_info(cwd: Path | None = None) -> dict:
    """Commit, branch and dirty flag of the work tree at ``cwd`` (default: the working directory; None
    values outside git)."""
    cwd = cwd or Path.cwd()
    status = query(cwd, "status", "--porcelain", "--untracked-files=no")
    return {
        "commit": query(cwd, "rev-parse", "HEAD"),
        "branch": query(cwd, "rev-parse", "--abbrev-ref", "HEAD"),
        "dirty": None if status is None else bool(status),
    }


def cpuinfo_field(name: str) -> str | None:
    """The first processor's ``name`` line of ``/proc/cpuinfo`` (``flags``, ``vendor_id``), or None."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(name):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_model() -> str:
    """The CPU's marketing name (``AMD EPYC``, ``Intel(R) Xeon(R) ...``)."""
    return cpuinfo_field("model name") or platform.processor() or platform.machine()


VECTOR_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_vnni",
                "avx512_bf16", "amx_tile", "asimd", "sve")  # what a vectorised kernel (torch's, the compiler's) may use


def vector_flags() -> str:
    """The CPU's vector-instruction flags among :data:`VECTOR_FLAGS`, in that order (``avx2 fma avx512f``)."""
    have = set((cpuinfo_field("flags") or cpuinfo_field("Features") or "").split())
    return " ".join(flag for flag in VECTOR_FLAGS if flag in have)


def cpu_class(capability: str) -> str:
    """Architecture, vendor and ``capability``, the ATen ISA level
    (``torch.backends.cpu.get_cpu_capability()``), e.g. ``x86_64 AuthenticAMD AVX512``."""
    return " ".join(part for part in (platform.machine(), cpuinfo_field("vendor_id") or "", capability) if part)


@dataclass(frozen=True)
class MachineClass:
    """The conditions under which image bits are reproducible (see the module docstring)."""

    cpu_class: str  # architecture, vendor, ATen ISA level
    torch: str
    threads: int  # torch intra-op threads
    dtype: str  # "float64", "float32"
    device: str  # "cpu", "cuda"

    @classmethod
    def here(cls, torch, *, threads: int | None = None, dtype: str = "float64", device: str = "cpu") -> "MachineClass":
        """The class of this process as ``torch`` (the imported torch module) reports its version, ISA
        level and thread count; ``threads`` replaces that count where given."""
        return cls(cpu_class=cpu_class(torch.backends.cpu.get_cpu_capability()), torch=torch.__version__,
                   threads=torch.get_num_threads() if threads is None else threads, dtype=dtype, device=device)

    @classmethod
    def from_record(cls, record: Mapping) -> "MachineClass | None":
        """The class stored in a record (a baseline's ``holds_for``, a benchmark's ``extra_info``), or
        None when the record lacks a field."""
        try:
            return cls(**{f.name: record[f.name] for f in fields(cls)})
        except (KeyError, TypeError):
            return None

    def as_record(self) -> dict:
        return asdict(self)

    def differences(self, other: "MachineClass") -> dict[str, tuple]:
        """Field -> (this value, other value) for every field that differs."""
        mine, theirs = asdict(self), asdict(other)
        return {k: (mine[k], theirs[k]) for k in mine if mine[k] != theirs[k]}

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in sorted(asdict(self).items()))

    def slug(self) -> str:
        """The class as a file name: ``x86-64-GenuineIntel-AVX512_torch2.13.0+cpu_1t_float64_cpu`` (the
        name of its golden baseline under ``results/baselines/golden_hashes/``)."""
        return class_slug(self.as_record())


def class_slug(record: Mapping) -> str:
    """:meth:`MachineClass.slug` of a ``holds_for`` record (fields outside the class are ignored)."""
    def part(value) -> str:
        return re.sub(r"[^A-Za-z0-9.+]+", "-", str(value)).strip("-") or "unknown"

    return "_".join((part(record.get("cpu_class")), "torch" + part(record.get("torch")),
                     f"{part(record.get('threads'))}t", part(record.get("dtype")), part(record.get("device"))))


def class_fingerprint(record: Mapping) -> float:
    """The machine class of a ``holds_for`` record as one number, exact in float64 (what the asv suite records
    per commit): the :func:`~detsim.track.base.hashing.fingerprint` of the sha256 of its class fields as sorted
    JSON."""
    text = json.dumps({f.name: record.get(f.name) for f in fields(MachineClass)}, sort_keys=True)
    return fingerprint(sha256_bytes(text.encode()))
