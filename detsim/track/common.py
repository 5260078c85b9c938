"""Shared plumbing of the tracking suite: environment records, stamps, atomic writes, hashes.

Every report the suite writes goes through :func:`atomic_write_text` / :func:`atomic_directory`, so an
interrupted run never leaves a half-written file or bundle behind.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

ENV_VARS = (
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "CUBLAS_WORKSPACE_CONFIG",
    "TRITON_INTERPRET", "TORCHINDUCTOR_DETERMINISTIC", "TORCHINDUCTOR_CACHE_DIR", "PYTHONHASHSEED",
    "ATEN_CPU_CAPABILITY", "MKL_CBWR",
)


def utc_stamp(now: _dt.datetime | None = None) -> str:
    """A UTC timestamp usable as a folder name, e.g. ``20261122T020911Z``."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ")


def repo_root(start: Path | None = None) -> Path | None:
    """The enclosing git work tree, or None."""
    out = _git(["rev-parse", "--show-toplevel"], start or Path.cwd())
    return Path(out) if out else None


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_info(cwd: Path | None = None) -> dict:
    """Commit, branch and dirty flag of the work tree at ``cwd`` (None values outside git)."""
    cwd = cwd or Path.cwd()
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
    return {
        "commit": _git(["rev-parse", "HEAD"], cwd),
        "branch": _git(["rev-parse", "--abbrev-ref", "HEAD"], cwd),
        "dirty": None if status is None else bool(status),
    }


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(cwd: Path | None = None) -> dict:
    """What a result depends on: code version, interpreter, libraries, hardware, threads, env vars."""
    import torch

    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    if torch.cuda.is_available():
        cuda = {"available": True, "device": torch.cuda.get_device_name(0), "version": torch.version.cuda,
                "count": torch.cuda.device_count()}
    else:
        cuda = {"available": False, "reason": "torch.cuda.is_available() is False"
                + ("" if torch.version.cuda else " (CPU-only torch build)")}
    return {
        **git_info(cwd),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton_version,
        "numpy": __import__("numpy").__version__,
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda": cuda,
        "env": {k: os.environ[k] for k in ENV_VARS if k in os.environ},
    }


@contextlib.contextmanager
def thread_count(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch threads, then restore the previous count."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def write_json(path: Path, data) -> None:
    """Strict JSON (no NaN), sorted keys, atomically."""
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n")


@contextlib.contextmanager
def atomic_directory(final: Path) -> Iterator[Path]:
    """Yield a temporary folder beside ``final``; rename it to ``final`` when the block succeeds.

    Refuses to overwrite an existing ``final``. On an exception the temporary folder is removed.
    """
    final = Path(final)
    if final.exists():
        raise FileExistsError(f"{final} already exists; refusing to overwrite it")
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".partial", dir=final.parent))
    try:
        yield tmp
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
