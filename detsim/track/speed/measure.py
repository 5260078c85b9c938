"""Measuring one run of a workload, each in a fresh process: detsim's paths and nanoBragg.c.

Each run is a child of :mod:`detsim.track.base.fresh`, whose CPU seconds are its own (``wait4``), not
those of earlier children: nanoBragg.c as a plain program, detsim's paths as a job
(:mod:`.render_job`). No peak memory is read from outside: a child's ``ru_maxrss`` starts from its
parent's high-water mark (Linux carries it across fork and exec), so a small program launched from this
Python process would appear to take hundreds of MB; the detsim job reads its own ``VmHWM`` instead.

A **row** is the JSON-ready record of one run (``speed.json`` stores them in order): ``workload``
(its name, ``P2@256`` when resized), ``pixels``, ``steps`` (per pixel), ``program`` ("nanoBragg.c" or
"detsim <mode>"), ``mode`` (detsim only), ``dtype``, ``command`` (the command line a user would type);
then either ``error`` (the run failed; the last line it printed) or ``seconds`` (the best of the
repeats), ``seconds_all``, ``clock``, ``peak_rss_mb`` (None for nanoBragg.c), ``rate`` (pixel·steps per
second), and for detsim also ``chunk_pixels`` and ``process_cpu_s``. :func:`compare_images` adds ``r``
and ``r_against``; :func:`add_ratios` adds ``vs_nanobragg`` (rate / nanoBragg.c's rate).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np

from detsim.track.base.fresh import run, run_job, thread_vars
from detsim.track.base.metrics import pearson_r
from detsim.track.base.workloads import Workload

NANOBRAGG = "nanoBragg.c"  # the program name of nanoBragg's rows
RENDER_JOB = "detsim.track.speed.render_job:render_job"  # what a detsim run executes in its own process


def nanobragg_row(binary: Path, workload: Workload, repeats: int, env: dict,
                  scratch: Path) -> tuple[dict, np.ndarray | None]:
    """nanoBragg.c's row for ``workload`` (best CPU seconds of ``repeats`` whole runs) and its image."""
    row = {"workload": workload.name, "pixels": workload.pixels, "steps": workload.steps,
           "program": NANOBRAGG, "dtype": "float64", "command": [str(binary), *workload.argv()]}
    image = scratch / f"{workload.name}-nanobragg.bin"
    runs = []
    for _ in range(repeats):
        image.unlink(missing_ok=True)  # what is read back must be this run's
        m = run([str(binary), *workload.argv(), "-floatfile", str(image)], env=env, cwd=scratch)
        if m.returncode != 0:
            last = m.last_line()
            row["error"] = f"nanoBragg exited {m.returncode}" + (f": {last}" if last else "")
            return row, None
        problem = image_problem(image, workload)
        if problem:
            row["error"] = f"{binary}: {problem}"
            return row, None
        runs.append(m)
    best = min(runs, key=lambda m: m.cpu_s)
    row.update(seconds=best.cpu_s, seconds_all=[m.cpu_s for m in runs], clock="process CPU (whole process)",
               peak_rss_mb=None)
    row["rate"] = workload.pixel_steps / best.cpu_s
    return row, read_image(image, workload)


def image_problem(path: Path, workload: Workload) -> str | None:
    """Why ``path`` is not a float image of ``workload`` (None: it is one)."""
    expected = workload.pixels * workload.pixels * 4
    if not path.is_file():
        return f"wrote no image to {path.name} (-floatfile)"
    size = path.stat().st_size
    if size != expected:
        return f"-floatfile {path.name} holds {size} bytes, not the {expected} of a {workload.pixels}² float32 image"
    return None


def detsim_row(workload: Workload, mode: str, dtype: str, job: dict, scratch: Path) -> tuple[dict, Path | None]:
    """detsim's row for one path (``mode`` × ``dtype``), run as a job of its own, and where its image is.

    ``job`` holds the rest of the job: ``device``, ``repeats``, ``threads`` (also OpenMP's and MKL's).
    """
    row = {"workload": workload.name, "pixels": workload.pixels, "steps": workload.steps,
           "program": f"detsim {mode}", "mode": mode, "dtype": dtype,
           "command": ["detsim", *workload.argv(), "-mode", mode, "-dtype", dtype]}
    image = scratch / f"{workload.name}-{mode}-{dtype}.bin"
    job = {"workload": asdict(workload), "mode": mode, "dtype": dtype, **job, "image": str(image)}
    m = run_job(RENDER_JOB, job, cwd=scratch, env=thread_vars(job["threads"]), check=False)
    if m.result is None:
        row["error"] = m.last_line() or f"exit {m.returncode}"
        return row, None
    row.update(m.result, process_cpu_s=m.cpu_s)
    row["rate"] = workload.pixel_steps / row["seconds"]
    return row, image


def compare_images(rows: list[dict], workload: Workload, reference: np.ndarray | None,
                   images: dict[str, Path]) -> None:
    """Pearson r of each detsim image of ``workload`` (``images``: "mode/dtype" -> file) against
    nanoBragg's, else against eager float64; None where r is undefined."""
    against = NANOBRAGG
    if reference is None and "eager/float64" in images:
        reference = read_image(images["eager/float64"], workload)
        against = "detsim eager float64"
    if reference is None:
        return
    for row in rows:
        key = f"{row.get('mode')}/{row['dtype']}"
        if row["workload"] == workload.name and row["program"] != NANOBRAGG and key in images:
            row["r"] = pearson_r(read_image(images[key], workload), reference)
            row["r_against"] = against


def read_image(path: Path, workload: Workload) -> np.ndarray:
    """A raw float32 image of ``workload`` (slow, fast)."""
    return np.fromfile(path, dtype="<f4").reshape(workload.pixels, workload.pixels)


def add_ratios(rows: list[dict]) -> None:
    """``vs_nanobragg``: each measured row's rate over nanoBragg.c's on the same workload."""
    reference = {r["workload"]: r["rate"] for r in rows if r["program"] == NANOBRAGG and "rate" in r}
    for row in rows:
        if "rate" in row and row["workload"] in reference:
            row["vs_nanobragg"] = row["rate"] / reference[row["workload"]]
