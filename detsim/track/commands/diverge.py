"""``detsim-track diverge``: run a computation twice and name the first op or kernel where the runs differ
(docs/determinism.md). The Python API, :func:`~detsim.track.compare.firstdiff.find_divergence`, is
importable from here too."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import tempfile
from pathlib import Path

import torch

from detsim.fileio.bounded_read import MISSING, REGULAR_FILE, what_is
from detsim.track.base.fresh import HERE
from detsim.track.commands import count, nonempty, positive_int, refuse
from detsim.track.base.output import OutputError, add_report_options, atomic_directory, atomic_write_text, \
    check_new_folder, folder_option, report_folder, write_json
from detsim.track.base.runtime import device_problem, environment
from detsim.track.base.computations import DTYPES, ComputationError
from detsim.track.compare import spelled
from detsim.track.compare.divergences import RunComparison
from detsim.track.compare.firstdiff import compare_logs, find_divergence
from detsim.track.compare.run_log import RunLog
from detsim.track.compare.runs import INTERPRET, LAYERS, EndedWithoutLog, JobError, Named, set_interpreter, trace_at, \
    trace_run

__all__ = ["HELP", "add_arguments", "run", "find_divergence"]

HELP = "run a computation twice and name the first op or Triton kernel that differs (culprit or victim)"

AREA = "diverge"  # the report folder's name under reports/<STAMP>/


def add_arguments(parser: argparse.ArgumentParser) -> None:
    named = parser.add_mutually_exclusive_group(required=True)  # what computation runs twice
    named.add_argument("--case", metavar="ID", type=nonempty, help="a golden case id (or unique prefix)")
    named.add_argument("--nanobragg", metavar="'ARGS'", type=nonempty, help="a nanoBragg command line")
    named.add_argument("--call", metavar="MODULE:FUNC", type=nonempty,
                        help="a callable: module:function or file.py:function")
    named.add_argument("-m", dest="module", metavar="MODULE", type=nonempty,
                        help="run a module as __main__ (like python -m)")
    named.add_argument("--script", metavar="FILE", type=nonempty, help="run a Python script as __main__")
    parser.add_argument("program_args", nargs="*", metavar="ARG",
                        help="arguments for -m/--script (put them after --)")
    parser.add_argument("--device", default="cpu", help="device for --case/--nanobragg/--call (default cpu)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float64", help="dtype (default float64)")
    parser.add_argument("--mode", default="eager", help="detsim execution mode (see detsim.rendering.engine.MODES)")
    parser.add_argument("--grad", action="append", default=[], metavar="PARAM",
                        help="also run the backward pass of image.sum() w.r.t. PARAM (e.g. detector.distance_mm)")
    parser.add_argument("--chunk-pixels", type=positive_int, default=None, help="engine chunk size (default automatic)")
    parser.add_argument("--threads", type=positive_int, nargs=2, default=None, metavar=("A", "B"),
                        help="thread counts of run A and run B (default: the current count for both)")
    parser.add_argument("--layers", nargs="+", choices=LAYERS, default=list(LAYERS),
                        help="what to trace (default both; trace compiled code with kernels only)")
    parser.add_argument("--processes", action="store_true",
                        help="trace each run in a fresh process (catches per-process state such as autotuning)")
    parser.add_argument("--interpret", choices=INTERPRET, default="auto",
                        help="TRITON_INTERPRET=1 for the computation (auto: on when CUDA is unavailable)")
    parser.add_argument("--max-items", type=count, default=3, help="victims and further culprits to show (default 3)")
    parser.add_argument("--golden-dir", type=Path, default=None)
    add_report_options(parser, AREA, optional=True)


def run(args: argparse.Namespace) -> int:
    out_dir = report_folder(args, AREA, base=Path())  # relative: reports/<STAMP>/diverge
    refusal = _refusal(args, out_dir)
    if refusal:
        return refuse(f"diverge: {refusal}")
    set_interpreter(args.interpret)
    threads = tuple(args.threads) if args.threads else (torch.get_num_threads(),) * 2
    try:
        if args.processes:
            records = [_trace_in_process(args, label, n) for label, n in zip("AB", threads)]
        else:
            call, label = named_of(args).call()
            records = [trace_run(call, label, n, args.layers, run=run) for run, n in zip("AB", threads)]
    except (ComputationError, JobError, RuntimeError, EndedWithoutLog) as exc:
        return refuse(f"diverge: {exc}")
    report = compare_logs(*records, max_items=args.max_items, device=args.device.split(":")[0])
    if "ops" in args.layers and args.mode != "eager" and (args.case or args.nanobragg):
        report.notes.append(f"mode {args.mode!r} was traced with ops on: a dispatch mode makes torch.compile "
                            "fall back to eager; use --layers kernels to trace compiled kernels as they run")
    text = report.render()
    print(text)
    code = report.exit_code()
    if out_dir is not None:
        write_bundle(out_dir, records, report, args, text, code)
        print(f"evidence: {out_dir}")
    return code


def _refusal(args: argparse.Namespace, out_dir: Path | None) -> str | None:
    """Why the runs cannot start, or None: checked before anything runs."""
    if args.script is not None and (kind := what_is(args.script)) != REGULAR_FILE:
        return f"--script {args.script}: {kind}" + ("" if kind == MISSING else ", not a file")
    if why := device_problem(args.device):
        return f"--device {args.device}: {why}"
    if out_dir is not None:
        try:
            check_new_folder(out_dir, folder_option(args))
        except OutputError as exc:
            return str(exc)
    return None


def named_of(args: argparse.Namespace) -> Named:
    """The computation the arguments name (:class:`~detsim.track.compare.runs.Named`)."""
    kind, name = next((kind, name) for kind, name in (("golden", args.case), ("nanobragg", args.nanobragg),
                                                      ("callable", args.call), ("module", args.module),
                                                      ("script", args.script)) if name)
    return Named(kind, name, tuple(args.program_args), args.device, args.dtype, args.mode, tuple(args.grad),
                 args.chunk_pixels, str(args.golden_dir) if args.golden_dir else None)


def _trace_in_process(args: argparse.Namespace, label: str, threads: int) -> RunLog:
    """Trace run ``label`` in a fresh interpreter (this package, then the working directory, on its path)."""
    with tempfile.TemporaryDirectory(prefix="detsim-diverge-") as tmp:
        rec = trace_at(named_of(args), Path(tmp) / f"run_{label}.json", path=(HERE, Path.cwd()), run=label,
                        threads=threads, layers=args.layers, interpret=args.interpret, cwd=Path.cwd(),
                        timeout=None, what=f"run {label} in its own process")  # a TracingError is a RuntimeError
    rec.label = rec.label or label
    return rec


def diverge_argv(args: argparse.Namespace, *, out: Path | None = None) -> list[str]:
    """The subcommand's arguments, spelled out (for re-running)."""
    return [*spelled(("--case", args.case), ("--nanobragg", args.nanobragg), ("--call", args.call),
                     ("-m", args.module), ("--script", args.script), ("--device", args.device),
                     ("--dtype", args.dtype), ("--mode", args.mode), *(("--grad", g) for g in args.grad),
                     ("--chunk-pixels", args.chunk_pixels), ("--threads", args.threads), ("--layers", args.layers),
                     ("--interpret", args.interpret), ("--max-items", args.max_items),
                     ("--golden-dir", args.golden_dir), ("--processes", args.processes), ("--out", out)),
            *(["--", *args.program_args] if args.program_args else [])]


def write_bundle(out_dir: Path, records: list[RunLog], report: RunComparison, args: argparse.Namespace, text: str,
                 code: int) -> None:
    """run_A/B.json, report.txt/json, env.json, commands.txt and summary.md, written atomically."""
    env = environment()
    command = shlex.join(["detsim-track", "diverge", *diverge_argv(args, out=out_dir)])
    with atomic_directory(out_dir) as tmp:
        for rec, label in zip(records, "AB"):
            atomic_write_text(tmp / f"run_{label}.json", rec.to_json() + "\n")
        atomic_write_text(tmp / "report.txt", text + "\n")
        write_json(tmp / "report.json", json.loads(json.dumps(report.to_dict(), default=str)))
        write_json(tmp / "env.json", env)
        atomic_write_text(tmp / "commands.txt", f"# run from: {Path.cwd()}\n{command}\n")
        cuda = env["cuda"].get("device") if env["cuda"].get("available") else "none"
        summary = ["# First-divergence report", "", f"**Verdict:** {report.verdict()} (exit code {code}).", "",
                   f"* commit `{env.get('commit')}`{' (dirty work tree)' if env.get('dirty') else ''}; torch "
                   f"{env['torch']}, triton {env['triton']}; CPU {env['cpu']}; GPU {cuda}; "
                   f"TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET', 'unset')}", "",
                   "Re-run with:", "", "```", command, "```", "", "```", text, "```", "",
                   "Files: `run_A.json`, `run_B.json` (every event with its hashes), `report.json`, "
                   "`env.json`, `commands.txt`.", ""]
        atomic_write_text(tmp / "summary.md", "\n".join(summary))

