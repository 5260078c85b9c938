"""``detsim-track speed``: detsim's execution paths against nanoBragg.c on the reference workloads.

Every measurement runs in a fresh process, one at a time: each detsim path (mode x dtype) of each
workload (P1, P2, P4096 of :mod:`detsim.track.base.workloads`) and, when ``--nanobragg`` names the reader's
own build, nanoBragg.c on the same command line. Reported per run: the CPU seconds of the render
after import (best of ``--repeats``; on a GPU, wall seconds), pixel·steps per second, the ratio to
nanoBragg.c, the peak resident memory of the whole process, and Pearson r of the image against
nanoBragg's (or, without it, against detsim's eager float64 image). nanoBragg's time is its whole
process, as a user sees it; its memory is not measured here (``/usr/bin/time -v`` reports it).

Writes ``reports/<STAMP>/speed/{summary.md,speed.json}`` (never overwriting) and prints the table.
Exit codes: 0 measured, 1 an image disagrees (r < 0.9995), 2 a run failed or the input was bad.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from detsim.track.base.output import atomic_directory, atomic_write_text, utc_stamp, write_json

from detsim.track.base.provenance import environment, repo_root
from detsim.track.base.workloads import WORKLOADS, Workload

HELP = "time detsim's paths and nanoBragg.c on P1, P2 and 4096² workloads, same command lines"
PARITY_MIN_R = 0.9995
MODES = ("eager", "compiled")
DTYPES = ("float64", "float32")


@dataclass
class Measured:
    """One process's run: exit code, its own CPU and wall seconds, and its output.

    No peak memory here: a child's ``ru_maxrss`` starts from its parent's high-water mark (Linux
    carries it across fork and exec), so a small program launched from this Python process would
    appear to take hundreds of MB. The detsim worker reads its own ``VmHWM`` instead.
    """

    returncode: int
    cpu_s: float
    wall_s: float
    stdout: str
    stderr: str


def run_measured(command: list[str], *, env: dict, cwd: Path) -> Measured:
    """Run ``command`` and read its CPU time alone (not that of earlier children)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=cwd)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measured(process.returncode, usage.ru_utime + usage.ru_stime, wall, out.read(), err.read())


def peak_rss_mb() -> float | None:
    """This process's peak resident memory since it started (``VmHWM``), or None where not reported."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=["eager", "compiled", "triton"])
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=list(DTYPES))
    parser.add_argument("--device", default="cpu", help="torch device of the detsim runs (default cpu)")
    parser.add_argument("--nanobragg", type=Path, default=None,
                        help="a nanoBragg.c executable you built; timed on the same command lines")
    parser.add_argument("--repeats", type=int, default=3, help="timed renders per detsim run and nanoBragg "
                        "runs per workload; the best is reported (default 3)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads and OMP_NUM_THREADS for nanoBragg (default 1: per-core figures)")
    parser.add_argument("--pixels", type=int, default=None,
                        help="override the detector side of every workload (a quicker, smaller run)")
    parser.add_argument("--out", type=Path, default=None, help="report folder (default reports/<STAMP>/speed)")


def run(args: argparse.Namespace) -> int:
    if args.repeats < 1 or args.threads < 1 or (args.pixels is not None and args.pixels < 1):
        print("detsim-track speed: --repeats, --threads and --pixels must be positive", file=sys.stderr)
        return 2
    if args.nanobragg is not None and not (args.nanobragg.is_file() and os.access(args.nanobragg, os.X_OK)):
        print(f"detsim-track speed: --nanobragg {args.nanobragg}: not an executable file", file=sys.stderr)
        return 2
    workloads = [WORKLOADS[name] if args.pixels is None else WORKLOADS[name].resized(args.pixels)
                 for name in args.workloads]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    rows: list[dict] = []
    failed = False
    with tempfile.TemporaryDirectory(prefix="detsim-speed-") as scratch:
        scratch = Path(scratch)
        for workload in workloads:
            images: dict[str, Path] = {}
            reference = None
            if args.nanobragg is not None:
                row, image = _nanobragg_row(args.nanobragg.resolve(), workload, args.repeats, env, scratch)
                rows.append(row)
                failed |= row.get("error") is not None
                reference = image
            for mode in args.modes:
                for dtype in args.dtypes:
                    row, image = _detsim_row(workload, mode, dtype, args, env, scratch)
                    rows.append(row)
                    failed |= row.get("error") is not None
                    if image is not None:
                        images[f"{mode}/{dtype}"] = image
            _compare(rows, workload, reference, images)
            for path in images.values():
                path.unlink(missing_ok=True)
    _ratios(rows)
    table = format_table(rows)
    print(table)
    out = args.out or (repo_root() or Path.cwd()) / "reports" / utc_stamp() / "speed"
    with atomic_directory(out) as folder:
        write_json(folder / "speed.json", {"environment": _environment(), "threads": args.threads,
                                           "device": args.device, "rows": rows})
        atomic_write_text(folder / "summary.md", _summary(rows, args, table, workloads))
    print(f"report: {out / 'summary.md'}")
    disagree = [r for r in rows if r.get("r") is not None and r["r"] < PARITY_MIN_R]
    for r in disagree:
        print(f"detsim-track speed: {r['workload']} {r['program']} {r['dtype']}: r = {r['r']:.8f} "
              f"< {PARITY_MIN_R} against {r['r_against']}", file=sys.stderr)
    return 2 if failed else (1 if disagree else 0)


def _environment() -> dict:
    """:func:`environment` of the detsim checkout being measured (not of the current directory)."""
    import detsim

    return environment(Path(detsim.__file__).resolve().parent)


def _nanobragg_row(binary: Path, workload: Workload, repeats: int, env: dict, scratch: Path):
    row = {"workload": workload.name, "pixels": workload.pixels, "steps": workload.steps,
           "program": "nanoBragg.c", "dtype": "float64", "command": [str(binary), *workload.argv()]}
    image = scratch / f"{workload.name}-nanobragg.bin"
    runs = []
    for _ in range(repeats):
        m = run_measured([str(binary), *workload.argv(), "-floatfile", str(image)], env=env, cwd=scratch)
        if m.returncode != 0:
            last = (m.stderr or m.stdout).strip().splitlines()[-1:]
            row["error"] = f"nanoBragg exited {m.returncode}" + (f": {last[0]}" if last else "")
            return row, None
        runs.append(m)
    best = min(runs, key=lambda m: m.cpu_s)
    row.update(seconds=best.cpu_s, seconds_all=[m.cpu_s for m in runs], clock="process CPU (whole process)",
               peak_rss_mb=None)
    row["rate"] = workload.pixel_steps / best.cpu_s
    return row, np.fromfile(image, dtype="<f4").reshape(workload.pixels, workload.pixels)


def _detsim_row(workload: Workload, mode: str, dtype: str, args, env: dict, scratch: Path):
    row = {"workload": workload.name, "pixels": workload.pixels, "steps": workload.steps,
           "program": f"detsim {mode}", "mode": mode, "dtype": dtype,
           "command": ["detsim", *workload.argv(), "-mode", mode, "-dtype", dtype]}
    image = scratch / f"{workload.name}-{mode}-{dtype}.bin"
    job = {"workload": asdict(workload), "mode": mode, "dtype": dtype, "device": args.device,
           "repeats": args.repeats, "threads": args.threads, "image": str(image)}
    m = run_measured([sys.executable, "-m", "detsim.track.speed.cmd_speed", json.dumps(job)], env=env, cwd=scratch)
    if m.returncode != 0:
        lines = (m.stderr or m.stdout).strip().splitlines()
        row["error"] = lines[-1] if lines else f"exit {m.returncode}"
        return row, None
    result = json.loads(m.stdout.strip().splitlines()[-1])
    row.update(result, process_cpu_s=m.cpu_s)
    row["rate"] = workload.pixel_steps / row["seconds"]
    return row, image


def _compare(rows: list[dict], workload: Workload, reference: np.ndarray | None, images: dict[str, Path]) -> None:
    """Pearson r of each detsim image of ``workload`` against nanoBragg's, else against eager float64."""
    against = "nanoBragg.c"
    if reference is None and "eager/float64" in images:
        reference = _read(images["eager/float64"], workload)
        against = "detsim eager float64"
    if reference is None:
        return
    for row in rows:
        key = f"{row.get('mode')}/{row['dtype']}"
        if row["workload"] == workload.name and row["program"] != "nanoBragg.c" and key in images:
            ours = _read(images[key], workload)
            row["r"] = float(np.corrcoef(ours.ravel().astype(np.float64), reference.ravel().astype(np.float64))[0, 1])
            row["r_against"] = against


def _read(path: Path, workload: Workload) -> np.ndarray:
    return np.fromfile(path, dtype="<f4").reshape(workload.pixels, workload.pixels)


def _ratios(rows: list[dict]) -> None:
    reference = {r["workload"]: r["rate"] for r in rows if r["program"] == "nanoBragg.c" and "rate" in r}
    for row in rows:
        if "rate" in row and row["workload"] in reference:
            row["vs_nanobragg"] = row["rate"] / reference[row["workload"]]


def format_table(rows: list[dict]) -> str:
    header = ("| workload | program | dtype | seconds (best) | pixel·steps/s | × nanoBragg.c | peak RSS MB | r |\n"
              "|---|---|---|---|---|---|---|---|")
    lines = [header]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['workload']} | {r['program']} | {r['dtype']} | failed: {r['error']} | | | | |")
            continue
        ratio = f"{r['vs_nanobragg']:.2f}" if "vs_nanobragg" in r else "–"
        corr = f"{r['r']:.8f}" if r.get("r") is not None else "–"
        rss = f"{r['peak_rss_mb']:.0f}" if r.get("peak_rss_mb") is not None else "–"
        lines.append(f"| {r['workload']} | {r['program']} | {r['dtype']} | {r['seconds']:.3f} | {r['rate']:.3g} "
                     f"| {ratio} | {rss} | {corr} |")
    return "\n".join(lines)


def _summary(rows: list[dict], args, table: str, workloads: list[Workload]) -> str:
    against = sorted({r["r_against"] for r in rows if "r_against" in r})
    env = _environment()
    lines = [
        "# detsim speed", "",
        f"CPU: {env.get('cpu')}; torch threads and OMP_NUM_THREADS: {args.threads}; device: {args.device}; "
        f"detsim commit {(env.get('commit') or 'unknown')[:12]}{' (dirty)' if env.get('dirty') else ''}.", "",
        "detsim: CPU seconds of prepare + render after import and a warm-up on a 64² detector (wall seconds "
        "on a GPU), best of the repeats; nanoBragg.c: CPU seconds of the whole process, best of the repeats. "
        f"r: Pearson r of the image against {', '.join(against) or 'nothing (no reference run)'}.", "",
        table, "", "## Command lines (nanoBragg.c and `detsim`, plus `-mode M -dtype D` for detsim)", "",
    ]
    lines += [f"* {w.name} ({w.pixels}², {w.steps} step{'' if w.steps == 1 else 's'} per pixel): `{' '.join(w.argv())}`"
              for w in workloads]
    return "\n".join(lines) + "\n"


def _worker(job: dict) -> dict:
    """Inside the measured process: warm up, time the renders, save the image as raw float32."""
    import torch

    import detsim
    from detsim.engine import prepare, render

    torch.set_num_threads(job["threads"])
    dtype = getattr(torch, job["dtype"])
    device = torch.device(job["device"])
    workload = Workload(**job["workload"])
    config = workload.config()
    detsim.simulate(workload.resized(min(64, workload.pixels)).config(), device=device, dtype=dtype,
                    mode=job["mode"])  # compiles, for the compiled path
    gpu = device.type == "cuda"
    clock = time.perf_counter if gpu else time.process_time
    seconds = []
    for _ in range(job["repeats"]):
        started = clock()
        with torch.no_grad():
            image, info = render(prepare(config, device=device, dtype=dtype), mode=job["mode"])
        if gpu:
            torch.cuda.synchronize(device)
        seconds.append(clock() - started)
    image.detach().to("cpu", torch.float32).numpy().astype("<f4").tofile(job["image"])
    return {"seconds": min(seconds), "seconds_all": seconds, "chunk_pixels": info.chunk_pixels,
            "peak_rss_mb": peak_rss_mb(),
            "clock": "wall (GPU)" if gpu else "process CPU (render, after import)"}


if __name__ == "__main__":
    print(json.dumps(_worker(json.loads(sys.argv[1]))))
    sys.exit(0)
