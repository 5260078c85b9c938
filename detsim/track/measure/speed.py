"""detsim's execution paths against nanoBragg.c on the reference workloads (``detsim-track speed``; the scopes:
README.md, "Against nanoBragg.c"): each run measured in a fresh process, its row, and the report as text.

Inputs: workloads, modes, dtypes, thread counts, optionally a nanoBragg.c executable. Outputs: **rows**, the
JSON-ready record of one run each (``speed.json`` stores them in order): ``workload`` (``P2@256`` when
resized), ``pixels``, ``steps`` (per pixel), ``program`` ("nanoBragg.c" or "detsim <mode>"), ``scope``,
``threads``, ``mode`` (detsim only), ``dtype``, ``command`` (thread variable first); then either ``error`` (the
last line the run printed) or ``wall_s`` (the best repeat) and ``cpu_s`` (that repeat's), ``wall_all``,
``cpu_all``, ``clock``, ``rate`` (pixel·steps per wall second) and, for render rows, ``peak_rss_mb`` and
``chunk_pixels``; :func:`compare_images` adds ``r`` and ``r_against``, :func:`add_ratios` ``vs_nanobragg`` and
``vs_nanobragg_cpu``. Then the markdown table of rows (printed and in ``summary.md``; undefined cells are
"–", a failed run shows its error across the row).

The jobs (each a fresh process, :func:`detsim.track.base.fresh.run_job`): a whole program (nanoBragg.c, the
``detsim`` command) is timed by the suite's one timer of a program (:mod:`detsim.track.base.program_timing`),
each run killed past its time limit. :func:`render_job` times detsim's render: it sets torch's thread count,
warms up on a 64² detector (which compiles, for the compiled path), times ``repeats`` renders (prepare
included; CPU seconds of every thread and of the worker processes a render forks) and saves the last image as
raw float32 (slow, fast).

No peak memory is read from outside: a child's ``ru_maxrss`` starts from its parent's high-water mark (Linux
carries it across fork and exec); the detsim render job reads its own ``VmHWM`` instead.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from detsim.track.base.fresh import Job, run_job, thread_vars
from detsim.track.base.metrics import pearson_r
from detsim.track.base.program_timing import ProcessJob, timed_runs
from detsim.track.base.timing import timed_calls
from detsim.track.base.workloads import Workload


NANOBRAGG = "nanoBragg.c"  # the program name of nanoBragg's rows
PROCESS, RENDER = "process", "render"  # the scopes of a row
RENDER_JOB = "detsim.track.measure.speed:render_job"  # what a detsim render run executes in its own process
DETSIM_COMMAND = [sys.executable, "-m", "detsim.commandline.command"]  # the ``detsim`` command, run by this interpreter


@dataclass(frozen=True)
class RenderJob(Job):
    """A detsim render run's job (:func:`render_job`): ``repeats`` timed renders of ``workload`` on a path, on
    ``threads`` torch threads, the last image saved to ``image``."""

    workload: Workload
    mode: str
    dtype: str
    device: str
    repeats: int
    threads: int
    image: str


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


def _timed_process(row: dict, workload: Workload, argv: list[str], repeats: int, image: Path, scratch: Path,
                   program: str, whole_image: bool = False) -> bool:
    """``row`` timed as ``repeats`` runs of a whole program (:func:`~detsim.track.base.program_timing.timed_runs`)
    writing ``image``; False, with ``row["error"]`` (one line), where a run failed or ran past
    :data:`~detsim.track.base.program_timing.RUN_LIMIT_S`, or, checked with ``whole_image``, its image is not
    whole."""
    done = timed_runs(ProcessJob((*argv, "-floatfile", str(image)), repeats, thread_vars(row["threads"]),
                                 str(scratch), str(image)))
    if done.error:
        row["error"] = f"{program} {done.error}"
    elif whole_image and (problem := image_problem(image, workload)):
        row["error"] = f"{argv[0]}: {problem}"
    else:
        _best(row, workload, [r["wall_s"] for r in done.runs], [r["cpu_s"] for r in done.runs], "whole process")
    return "error" not in row


def nanobragg_row(binary: Path, workload: Workload, repeats: int, threads: int,
                  scratch: Path) -> tuple[dict, np.ndarray | None]:
    """nanoBragg.c's row for ``workload`` on ``threads`` OpenMP threads (best of ``repeats`` whole runs)
    and its image."""
    row = _row(workload, NANOBRAGG, PROCESS, threads, "float64", [str(binary), *workload.argv()])
    image = scratch / f"{workload.name}-nanobragg-{threads}.bin"
    if not _timed_process(row, workload, [str(binary), *workload.argv()], repeats, image, scratch, "nanoBragg",
                          whole_image=True):
        return row, None
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
    return row, image if _timed_process(row, workload, [*DETSIM_COMMAND, *argv], repeats, image, scratch,
                                        "detsim") else None


def detsim_row(workload: Workload, mode: str, dtype: str, scratch: Path, *, device: str, repeats: int,
               threads: int) -> tuple[dict, Path | None]:
    """detsim's render row for one path (``mode`` × ``dtype``), run as a job of its own on ``threads`` threads
    (torch's, OpenMP's and MKL's), and where its image is."""
    row = _row(workload, f"detsim {mode}", RENDER, threads, dtype,
               ["detsim", *workload.argv(), "-mode", mode, "-dtype", dtype], mode)
    image = scratch / f"{workload.name}-{mode}-{dtype}-render-{threads}.bin"
    job = RenderJob(workload, mode, dtype, device, repeats, threads, str(image))
    m = run_job(RENDER_JOB, job, cwd=scratch, env=thread_vars(threads), check=False)
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


# ---- the jobs, each in a process of its own

WARM_UP_PIXELS = 64  # detector side of the warm-up render


def peak_rss_mb() -> float | None:
    """This process's peak resident memory since it started (``VmHWM``), or None where not reported."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def render_job(job: RenderJob) -> dict:
    """Inside the measured process: warm up, time the renders, save the image as raw float32."""
    import torch

    from detsim import config_from_argv, prepare, render

    torch.set_num_threads(job.threads)
    dtype = getattr(torch, job.dtype)
    device = torch.device(job.device)
    config = job.workload.config(config_from_argv)
    small = job.workload.resized(min(WARM_UP_PIXELS, job.workload.pixels)).config(config_from_argv)
    runs = timed_calls(torch, lambda: render(prepare(config, device=device, dtype=dtype), mode=job.mode), device,
                       job.repeats,  # the warm-up compiles, for the compiled path
                       warm_up=lambda: render(prepare(small, device=device, dtype=dtype), mode=job.mode))
    image, info = runs[-1].result
    image.detach().to("cpu", torch.float32).numpy().astype("<f4").tofile(job.image)
    return {"wall_s_all": [t.wall_s for t in runs], "cpu_s_all": [t.cpu_s for t in runs],
            "chunk_pixels": info.chunk_pixels,
            "peak_rss_mb": peak_rss_mb(), "clock": "prepare + render, after import and a warm-up"}


# ---- the report as text

HEADER = ("| workload | program | scope | threads | dtype | wall s | CPU s | × nanoBragg.c wall | × nanoBragg.c CPU "
          "| pixel·steps/s | peak RSS MB | r |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")


def _maybe(value, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def machine_line(env: dict) -> str:
    """The CPU a table was measured on, which every speed table names: its model, torch's kernel level and the
    vector flags (docs/tracking.md, "Speed": which of detsim's speed moves with them)."""
    return (f"CPU: {env.get('cpu')}, {env.get('cpu_count')} logical CPUs; torch kernels: "
            f"{env.get('cpu_capability')}; vector flags: {env.get('cpu_flags') or 'none read'}")


def format_table(rows: list[dict]) -> str:
    lines = [HEADER]
    for r in rows:
        head = f"| {r['workload']} | {r['program']} | {r['scope']} | {r['threads']} | {r['dtype']} |"
        if r.get("error"):
            lines.append(f"{head} failed: {r['error']} | | | | | | |")
            continue
        lines.append(f"{head} {r['wall_s']:.3f} | {r['cpu_s']:.3f} | {_maybe(r.get('vs_nanobragg'), '.3g')} "
                     f"| {_maybe(r.get('vs_nanobragg_cpu'), '.3g')} | {r['rate']:.3g} "
                     f"| {_maybe(r.get('peak_rss_mb'), '.0f')} | {_maybe(r.get('r'), '.8f')} |")
    return "\n".join(lines)


def summary_markdown(rows: list[dict], table: str, workloads: list[Workload], *, threads: list[int], device: str,
                     env: dict) -> str:
    """``summary.md``: the conditions (``env`` is :func:`~detsim.track.base.runtime.environment`'s
    record), what the numbers mean, the table and the command lines."""
    against = sorted({r["r_against"] for r in rows if "r_against" in r})
    lines = [
        "# detsim speed", "",
        f"{machine_line(env)}; threads: {', '.join(map(str, threads))}; "
        f"device: {device}; detsim commit {(env.get('commit') or 'unknown')[:12]}"
        f"{' (dirty)' if env.get('dirty') else ''}.", "",
        "Every run is a fresh process. Scope `process`: the whole program as a user runs it, with "
        "`OMP_NUM_THREADS` set to the thread count (for `detsim`, interpreter start, torch import and the "
        "written files included). Scope `render`: detsim's prepare + render after import and a warm-up on a "
        f"{WARM_UP_PIXELS}² detector, torch's thread count set. wall s: wall-clock seconds, what a user waits; "
        "CPU s: user + system seconds of all threads together (on an idle machine, CPU ≈ threads × wall for a "
        "run that uses its threads). Best wall time of the repeats, with that repeat's CPU time. "
        "× nanoBragg.c: nanoBragg.c's seconds over the row's, at the same thread count. "
        f"r: Pearson r of the image against {', '.join(against) or 'nothing (no reference run)'}.", "",
        table, "", "## Command lines (nanoBragg.c and `detsim`, plus `-mode M -dtype D` for detsim)", "",
    ]
    for w in workloads:
        lines.append(f"* {w.name} ({w.pixels}², {w.steps} step{'' if w.steps == 1 else 's'} per pixel): "
                     f"`{' '.join(w.argv())}`")
    return "\n".join(lines) + "\n"
