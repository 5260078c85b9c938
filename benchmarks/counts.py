"""Instruction counts reused between commits whose counted code and environment agree byte for byte.

A count (``common.count_instructions_many``) is a function of what runs in its region and of the machine
that runs it: the installed simulator (the ``detsim`` package, less ``detsim/track``, which the simulator
never imports: tests/track/test_track_layout.py), the working tree's benchmarks and suite base that build
and call the render, the golden inputs it reads, the counting script, the installed packages (torch's
version among them), Python, valgrind, the CPU and the count's environment variables. :func:`key` is the
sha256 of all of them. A commit whose key was counted before gets that count again instead of a valgrind
process of ~20 s: most commits change no simulator file (docs, tests, the tracking suite), and their count
is the one valgrind gave for the same bytes. A commit that changes any counted byte is counted afresh.

The counts are kept in :data:`FOLDER` (``.asv/instruction-counts``, one JSON file per key, beside asv's
environments and as disposable: ``rm -r .asv/instruction-counts`` counts every commit again).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from . import common

FOLDER = common.REPO_ROOT / ".asv" / "instruction-counts"
SUITE = "track"  # the tracking suite's sub-package: never imported by the simulator, so not counted code
COMMIT_VAR = "ASV_COMMIT"  # set by asv in every benchmark process: the commit being measured
# environment variables that choose torch's threads and kernels (and so the instructions a render takes)
KERNEL_VARIABLES = ("OMP_", "MKL_", "KMP_", "GOMP_", "OPENBLAS_", "TORCH", "ATEN_", "DNNL_", "ONEDNN_",
                    "PYTHONHASHSEED")


def _files(folder: Path, skip: str | None = None) -> Iterable[tuple[str, Path]]:
    """(relative path, path) of every file under ``folder``, sorted, without caches and ``skip``'s subtree."""
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder)
        if "__pycache__" not in relative.parts and relative.parts[0] != skip:
            yield relative.as_posix(), path


def installed_simulator() -> Path:
    """The folder of the ``detsim`` package a count imports (the commit's, installed by asv)."""
    spec = importlib.util.find_spec("detsim")
    if spec is None or not spec.submodule_search_locations:
        raise NotImplementedError("no detsim package is installed")
    return Path(next(iter(spec.submodule_search_locations)))


def _environment() -> dict[str, str]:
    """What a count depends on beyond files: interpreter, packages, valgrind, CPU, environment variables."""
    packages = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    valgrind = subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()
    # the CPU's model and feature flags (what valgrind passes on to torch's choice of kernels)
    cpu = f"{common.provenance.cpu_model()}\n{common.provenance.cpuinfo_field('flags') or ''}"
    counting = {**os.environ, **common.callgrind.COUNT_ENV}  # the counting process's environment
    variables = {name: value for name, value in sorted(counting.items())
                 if name == common.callgrind.PLANT_VAR or name.startswith(KERNEL_VARIABLES)}
    return {"python": sys.version, "machine": platform.machine(), "packages": "\n".join(packages),
            "valgrind": valgrind, "cpu": cpu, "variables": json.dumps(variables)}


def key(counted: list[str], dtype: str = "float64", simulator: Path | None = None) -> str:
    """The sha256 of everything a count of ``counted`` depends on (see the module docstring)."""
    digest = hashlib.sha256()

    def add(label: str, data: bytes) -> None:  # length-prefixed, so no two inputs run together
        digest.update(f"{label}\0{len(data)}\0".encode())
        digest.update(data)

    add("script", common.callgrind.harness_many([common.count_setup(w, dtype) for w in counted]).encode())
    folders = {"simulator": (simulator or installed_simulator(), SUITE), "benchmarks": (common.BENCHMARKS_DIR, None),
               "base": (common.REPO_ROOT / "detsim" / SUITE / "base", None)}
    cases = {case.id: case for case in common.CASES}
    folders.update({f"case {w}": (cases[w].folder, None) for w in counted if w in cases})
    for name, (folder, skip) in folders.items():
        for relative, path in _files(folder, skip):
            add(f"{name}/{relative}", path.read_bytes())
    for name, value in _environment().items():
        add(name, value.encode())
    return digest.hexdigest()


def _stored(path: Path) -> dict | None:
    """A stored count's record, or None when there is none or it is not one (then it is counted again)."""
    try:
        record = json.loads(path.read_text())
        counts = record["counts"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(counts, dict) or not all(isinstance(v, int) for v in counts.values()):
        return None
    return record


def reuse_or_count(counted: list[str], count: Callable[[list[str]], dict[str, int]], folder: Path | None = None,
                   dtype: str = "float64", simulator: Path | None = None) -> tuple[dict[str, int], str | None]:
    """``counted``'s instruction counts and where they come from: the commit they were counted at when
    reused (``"reused from <commit>"``), else None, counted now by ``count`` and stored under their key in
    ``folder`` (default :data:`FOLDER`)."""
    folder = folder or FOLDER
    path = folder / f"{key(counted, dtype, simulator)}.json"
    record = _stored(path)
    if record is not None and set(record["counts"]) == set(counted):
        return record["counts"], f"reused from {record.get('counted_at') or 'an earlier count'}"
    counts = count(counted)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".tmp", delete=False) as handle:
        json.dump({"counts": counts, "counted_at": os.environ.get(COMMIT_VAR)}, handle)
    os.replace(handle.name, path)
    return counts, None
