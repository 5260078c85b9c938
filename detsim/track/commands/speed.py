"""``detsim-track speed``: detsim's execution paths against nanoBragg.c on the reference workloads (README.md,
"Against nanoBragg.c"). Exit 0 measured, 1 an image disagrees (r below the line, or undefined), 2 a run failed
or the input was bad.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from detsim.track.base.exitcodes import ExitCode
from detsim.track.commands import positive_int, refuse
from detsim.track.base.metrics import PARITY_MIN_R, passes_parity
from detsim.track.base.output import OutputError, add_report_options, atomic_directory, atomic_write_text, \
    check_new_folder, folder_option, report_folder, write_json, written_line
from detsim.track.base.provenance import repo_root
from detsim.rendering.engine import MODES as ENGINE_MODES
from detsim.track.base.runtime import device_problem, environment
from detsim.track.base.computations import DTYPES
from detsim.track.base.workloads import WORKLOADS, Workload
from detsim.host.threads import MAX_THREADS
from detsim.track.measure.speed import PROCESS, RENDER, add_ratios, compare_images, detsim_process_row, detsim_row, \
    format_table, machine_line, nanobragg_row, summary_markdown

HELP = "time detsim's paths and nanoBragg.c on P1, P2 and 4096² workloads, same command lines"
MODES = ("eager", "compiled")  # the default: triton is a GPU path
AREA = "speed"  # the report folder's name under reports/<STAMP>/
SCOPES = (RENDER, PROCESS)


def thread_count(text: str) -> int:
    """An argparse type: a thread count detsim accepts (1 to :data:`detsim.host.threads.MAX_THREADS`)."""
    value = positive_int(text)
    if value > MAX_THREADS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_THREADS}, got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(ENGINE_MODES))
    parser.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=list(DTYPES))
    parser.add_argument("--device", default="cpu", help="torch device of the detsim runs (default cpu)")
    parser.add_argument("--nanobragg", type=Path, default=None,
                        help="a nanoBragg.c executable you built; timed on the same command lines")
    parser.add_argument("--repeats", type=positive_int, default=3, help="timed renders per detsim run and nanoBragg "
                        "runs per workload; the best is reported (default 3)")
    parser.add_argument("--threads", type=thread_count, nargs="+", default=None,
                        help="thread counts, each measured: OMP_NUM_THREADS for nanoBragg and the detsim command, "
                        "torch's for a render (default: 1, the per-core figures, and the count torch picks here)")
    parser.add_argument("--scopes", nargs="+", choices=list(SCOPES), default=list(SCOPES),
                        help="render: detsim's render after import; process: the whole detsim command (default both)")
    parser.add_argument("--pixels", type=positive_int, default=None,
                        help="override the detector side of every workload (a quicker, smaller run)")
    add_report_options(parser, AREA)


def _refusal(args: argparse.Namespace, out: Path) -> str | None:
    """Why the run cannot start, or None."""
    why = device_problem(args.device)
    if why:
        return f"--device {args.device}: {why}"
    if args.nanobragg is not None and not (args.nanobragg.is_file() and os.access(args.nanobragg, os.X_OK)):
        return f"--nanobragg {args.nanobragg}: not an executable file"
    try:
        check_new_folder(out, folder_option(args))
    except OutputError as exc:
        return str(exc)
    return None


def run(args: argparse.Namespace) -> int:
    out = report_folder(args, AREA, repo_root() or Path.cwd())
    refusal = _refusal(args, out)
    if refusal:
        return refuse(f"detsim-track speed: {refusal}")
    workloads = [WORKLOADS[name] if args.pixels is None else WORKLOADS[name].resized(args.pixels)
                 for name in args.workloads]
    args.threads = args.threads or sorted({1, torch.get_num_threads()})  # per core, and torch's own count
    rows = _measure(workloads, args)
    add_ratios(rows)
    table = format_table(rows)
    env = environment()
    print(machine_line(env))
    print(table)
    with atomic_directory(out) as folder:
        write_json(folder / "speed.json", {"environment": env, "threads": args.threads, "scopes": args.scopes,
                                           "device": args.device, "rows": rows})
        atomic_write_text(folder / "summary.md", summary_markdown(rows, table, workloads, threads=args.threads,
                                                                  device=args.device, env=env))
    print(f"report: {out.resolve() / 'summary.md'}")
    print(written_line(out, "--out-root"))
    disagree = [r for r in rows if "r" in r and not passes_parity(r["r"])]
    for r in disagree:
        verdict = "r undefined" if r["r"] is None else f"r = {r['r']:.8f} < {PARITY_MIN_R}"
        print(f"detsim-track speed: {_which(r)}: {verdict} against {r['r_against']}", file=sys.stderr)
    failed = [r for r in rows if r.get("error") is not None]
    for r in failed:
        print(f"detsim-track speed: {_which(r)}: {r['error']}", file=sys.stderr)
    if failed:
        return ExitCode.UNMEASURED
    return ExitCode.REGRESSED if disagree else ExitCode.OK


def _which(row: dict) -> str:
    """A row's run in words: "P2 detsim eager float64 (render, 2 threads)"."""
    threads = f"{row['threads']} thread{'' if row['threads'] == 1 else 's'}"
    return f"{row['workload']} {row['program']} {row['dtype']} ({row['scope']}, {threads})"


def _measure(workloads: list[Workload], args: argparse.Namespace) -> list[dict]:
    """The rows of every run, workload by workload and thread count by thread count: nanoBragg.c's first
    (if given), then detsim's render runs, then its whole-process runs."""
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="detsim-speed-") as scratch:
        scratch = Path(scratch)
        for workload in workloads:
            pairs: list[tuple[dict, Path]] = []  # detsim's rows that made an image, and the image
            reference: np.ndarray | None = None
            for threads in args.threads:
                if args.nanobragg is not None:
                    row, image = nanobragg_row(args.nanobragg.resolve(), workload, args.repeats, threads, scratch)
                    rows.append(row)
                    reference = image if reference is None else reference
                for mode in args.modes:
                    for dtype in args.dtypes:
                        runs = []
                        if RENDER in args.scopes:
                            runs.append(detsim_row(workload, mode, dtype, scratch, device=args.device,
                                                   repeats=args.repeats, threads=threads))
                        if PROCESS in args.scopes:
                            runs.append(detsim_process_row(workload, mode, dtype, threads, args.repeats, scratch,
                                                           args.device))
                        rows.extend(row for row, _ in runs)
                        pairs.extend((row, image) for row, image in runs if image is not None)
            compare_images(pairs, workload, reference)
            for _, image in pairs:
                image.unlink(missing_ok=True)
    return rows
