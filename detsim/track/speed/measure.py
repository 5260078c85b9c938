"""Measuring one run of a workload, each in a fresh process: detsim's paths and nanoBragg.c (the scopes:
README.md, "Against nanoBragg.c").

No peak memory is read from outside: a child's ``ru_maxrss`` starts from its parent's high-water mark (Linux
carries it across fork and exec); the detsim render job reads its own ``VmHWM`` instead.

A **row** is the JSON-ready record of one run (``speed.json`` stores them in order): ``workload`` (``P2@256``
when resized), ``pixels``, ``steps`` (per pixel), ``program`` ("nanoBragg.c" or "detsim <mode>"), ``scope``,
``threads``, ``mode`` (detsim only), ``dtype``, ``command`` (thread variable first); then either ``error`` (the
last line the run printed) or ``wall_s`` (the best repeat) and ``cpu_s`` (that repeat's), ``wall_all``,
``cpu_all``, ``clock``, ``rate`` (pixel·steps per wall second) and, for render rows, ``peak_rss_mb`` and
``chunk_pixels``; :func:`compare_images` adds ``r`` and ``r_against``, :func:`add_ratios` ``vs_nanobragg`` and
``vs_nanobragg_cpu``.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np

from detsim.track.base.fresh import run_job, thread_vars
from detsim.track.base.metrics import pearson_r
from detsim.track.base.workloads import Workload

NANOBRAGG = "nanoBragg.c"  # the program name of nanoBragg's rows
PROCESS, RENDER = "process", "render"  # the scopes of a row
RENDER_JOB = "detsim.track.speed.jobs:render_job"  # what a detsim render run executes in its own process
PROCESS_JOB = "detsim.track.speed.jobs:process_job"  # the timer of a whole program
DETSIM_COMMAND = [sys.executable, "-m", "detsim.commandline.command"]  # the ``detsim`` command, run by this interpreter


def _row(workload: Workload, program: str, scope: str, threads: int, dtype: str, command: list[str],
         mode: str | None = None) -> dict:
    row = {"workload": workload.name, "pixels": workload.pixels, "steps": workload.steps, "program": program,
           "scope": scope, "threads": threads, "dtype": dtype,
           "command": [f"OMP_NUM_THREADS={threads}", *command]}
    if mode is not None:
        row["mode"] = mode
    return row


def _best(row: dict, workload: Workload, walls: list[float], cpus: list[float], clock: str) -> None:
    """The row's timing: the repeat with the least wall time, and that repeat's CPU seconds."""
    best = min(range(len(walls)), key=walls.__getitem__)
    row.update(wall_s=walls[best], cpu_s=cpus[best], wall_all=walls, cpu_all=cpus, clock=clock)
    row["rate"] = workload.pixel_steps / walls[best]


def _timed_process(argv: list[str], threads: int, repeats: int, output: Path, cwd: Path) -> tuple[list, str | None]:
    """The runs of a whole program (:func:`.jobs.process_job`) and, when one failed, why (one line)."""
    job = {"argv": argv, "env": thread_vars(threads), "cwd": str(cwd), "repeats": repeats, "output": str(output)}
    m = run_job(PROCESS_JOB, job, cwd=cwd, check=False)
    if m.result is None:
        return [], m.last_line() or f"the timer exited {m.returncode}"
    runs = m.result["runs"]
    if runs[-1]["returncode"] != 0:
        last = runs[-1]["stderr_tail"]
        return runs, f"exited {runs[-1]['returncode']}" + (f": {last}" if last else "")
    return runs, None


def nanobragg_row(binary: Path, workload: Workload, repeats: int, threads: int,
                  scratch: Path) -> tuple[dict, np.ndarray | None]:
    """nanoBragg.c's row for ``workload`` on ``threads`` OpenMP threads (best of ``repeats`` whole runs)
    and its image."""
    row = _row(workload, NANOBRAGG, PROCESS, threads, "float64", [str(binary), *workload.argv()])
    image = scratch / f"{workload.name}-nanobragg-{threads}.bin"
    runs, failed = _timed_process([str(binary), *workload.argv(), "-floatfile", str(image)], threads, repeats, image,
                                  scratch)
    if failed:
        row["error"] = f"nanoBragg {failed}"
        return row, None
    problem = image_problem(image, workload)
    if problem:
        row["error"] = f"{binary}: {problem}"
        return row, None
    _best(row, workload, [r["wall_s"] for r in runs], [r["cpu_s"] for r in runs], "whole process")
    reference = read_image(image, workload)
    image.unlink()
    return row, reference


def image_problem(path: Path, workload: Workload) -> str | None:
    """Why ``path`` is not a float image of ``workload`` (None: it is one)."""
    expected = workload.pixels * workload.pixels * 4
    if not path.is_file():
        return f"wrote no image to {path.name} (-floatfile)"
    size = path.stat().st_size
    if size != expected:
        return f"-floatfile {path.name} holds {size} bytes, not the {expected} of a {workload.pixels}² float32 image"
    return None


def detsim_process_row(workload: Workload, mode: str, dtype: str, threads: int, repeats: int,
                       scratch: Path, device: str = "cpu") -> tuple[dict, Path | None]:
    """The whole ``detsim`` command's row for one path on ``threads`` threads (``OMP_NUM_THREADS``, as for
    nanoBragg), and where its image is."""
    argv = [*workload.argv(), "-mode", mode, "-dtype", dtype, *(["-device", device] if device != "cpu" else [])]
    row = _row(workload, f"detsim {mode}", PROCESS, threads, dtype, ["detsim", *argv], mode)
    image = scratch / f"{workload.name}-{mode}-{dtype}-process-{threads}.bin"
    runs, failed = _timed_process([*DETSIM_COMMAND, *argv, "-floatfile", str(image)], threads, repeats, image,
                                  scratch)
    if failed:
        row["error"] = f"detsim {failed}"
        return row, None
    _best(row, workload, [r["wall_s"] for r in runs], [r["cpu_s"] for r in runs], "whole process")
    return row, image


def detsim_row(workload: Workload, mode: str, dtype: str, job: dict, scratch: Path) -> tuple[dict, Path | None]:
    """detsim's render row for one path (``mode`` × ``dtype``), run as a job of its own (``job``: ``device``,
    ``repeats``, ``threads``, also OpenMP's and MKL's), and where its image is."""
    row = _row(workload, f"detsim {mode}", RENDER, job["threads"], dtype,
               ["detsim", *workload.argv(), "-mode", mode, "-dtype", dtype], mode)
    image = scratch / f"{workload.name}-{mode}-{dtype}-render-{job['threads']}.bin"
    job = {"workload": asdict(workload), "mode": mode, "dtype": dtype, **job, "image": str(image)}
    m = run_job(RENDER_JOB, job, cwd=scratch, env=thread_vars(job["threads"]), check=False)
    if m.result is None:
        row["error"] = m.last_line() or f"exit {m.returncode}"
        return row, None
    result = dict(m.result)
    _best(row, workload, result.pop("wall_s_all"), result.pop("cpu_s_all"), result.pop("clock"))
    row.update(result)
    return row, image


def compare_images(pairs: list[tuple[dict, Path]], workload: Workload, reference: np.ndarray | None) -> None:
    """Pearson r of each detsim image of ``workload`` (``pairs``: its row and image file) against
    nanoBragg's, else against the first eager float64 one; None where r is undefined."""
    against = NANOBRAGG
    if reference is None:
        eager64 = [image for row, image in pairs if row.get("mode") == "eager" and row["dtype"] == "float64"]
        if not eager64:
            return
        reference = read_image(eager64[0], workload)
        against = "detsim eager float64"
    for row, image in pairs:
        row["r"] = pearson_r(read_image(image, workload), reference)
        row["r_against"] = against


def read_image(path: Path, workload: Workload) -> np.ndarray:
    """A raw float32 image of ``workload`` (slow, fast)."""
    return np.fromfile(path, dtype="<f4").reshape(workload.pixels, workload.pixels)


def add_ratios(rows: list[dict]) -> None:
    """``vs_nanobragg`` (wall) and ``vs_nanobragg_cpu``: nanoBragg.c's seconds on the same workload at the
    same thread count over each measured row's (above 1: detsim is faster)."""
    reference = {(r["workload"], r["threads"]): r for r in rows if r["program"] == NANOBRAGG and "wall_s" in r}
    for row in rows:
        ref = reference.get((row["workload"], row.get("threads")))
        if "wall_s" in row and ref is not None:
            row["vs_nanobragg"] = ref["wall_s"] / row["wall_s"]
            row["vs_nanobragg_cpu"] = ref["cpu_s"] / row["cpu_s"] if row["cpu_s"] > 0 else None
