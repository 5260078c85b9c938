"""``detsim-track determinism``: is it deterministic, and across what? (docs/determinism.md)"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import torch

from detsim.track.base.exitcodes import ExitCode
from detsim.track.base.golden import GoldenError, case_ids
from detsim.track.commands import positive_int, refuse
from detsim.track.base.output import OutputError, add_report_options, atomic_directory, atomic_write_text, \
    check_new_folder, folder_option, report_folder, write_json
from detsim.track.base.runtime import environment
from detsim.track.base.computations import DTYPES, ComputationError
from detsim.track.compare import spelled
from detsim.track.compare.matrix import Matrix
from detsim.track.compare.runs import Named, run_matrix

HELP = "run cases repeatedly across threads, dtypes, devices and modes; show which runs agree bit for bit"

AREA = "determinism"  # the report folder's name under reports/<STAMP>/
DEFAULT_CASES = ("c02_xds_xbeam_quirk", "o01_polar_0.9")  # two 128x128 golden cases, well under a second


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cases", nargs="*", metavar="CASE",
                        help="golden case ids or unique prefixes (default: %s)" % " ".join(DEFAULT_CASES))
    parser.add_argument("--nanobragg", action="append", default=[], metavar="'ARGS'",
                        help="a nanoBragg command line to run as a case (repeatable; files relative to the cwd)")
    parser.add_argument("--call", action="append", default=[], metavar="MODULE:FUNC",
                        help="a callable f(device=, dtype=) returning tensors (module:function or file.py:function)")
    parser.add_argument("--repeats", type=positive_int, default=2, help="runs per configuration (default 2)")
    parser.add_argument("--threads", type=positive_int, nargs="+", default=[1, 2],
                        help="torch thread counts (default 1 2)")
    parser.add_argument("--dtypes", nargs="+", choices=sorted(DTYPES), default=["float64", "float32"])
    parser.add_argument("--devices", nargs="+", default=None,
                        help="devices (default: cpu, plus cuda when torch sees one)")
    parser.add_argument("--modes", nargs="+", default=None,
                        help="execution modes (default: every entry of detsim.rendering.engine.MODES)")
    parser.add_argument("--grad", action="append", default=[], metavar="PARAM",
                        help="also hash d(image.sum())/d(PARAM), e.g. detector.distance_mm or crystal.cell[0]")
    parser.add_argument("--chunk-pixels", type=positive_int, default=None,
                        help="engine chunk size (default automatic)")
    parser.add_argument("--deterministic", action="store_true",
                        help="run with torch.use_deterministic_algorithms(True) and inductor's deterministic mode")
    parser.add_argument("--isolate", action="store_true",
                        help="run every repeat in a fresh Python process (slower; survives hard crashes)")
    parser.add_argument("--strict", action="store_true",
                        help="also fail (exit 1) when thread counts on the same device give different bits")
    parser.add_argument("--golden-dir", type=Path, default=None, help="golden cases folder (default tests/golden)")
    add_report_options(parser, AREA, optional=True)
    parser.add_argument("--list-cases", action="store_true", help="list the golden case ids and exit")


def run(args: argparse.Namespace) -> int:
    if args.list_cases:
        try:
            print("\n".join(case_ids(args.golden_dir)))
        except GoldenError as exc:
            return refuse(f"determinism: {exc}")
        return ExitCode.OK
    args = with_defaults(args)
    try:
        named = named_computations(args)
        computations = [n.computation() for n in named]
        out_dir = report_folder(args, AREA, base=Path())  # relative: reports/<STAMP>/determinism
        if out_dir is not None:
            check_new_folder(out_dir, folder_option(args))
    except (ComputationError, OutputError) as exc:
        return refuse(f"determinism: {exc}")
    matrix = run_matrix(computations, devices=args.devices, dtypes=args.dtypes, modes=args.modes,
                        threads=args.threads, repeats=args.repeats, deterministic=args.deterministic,
                        isolate=named if args.isolate else None)
    text = matrix.render(strict=args.strict)
    print(text)
    code = matrix.exit_code(strict=args.strict)
    if out_dir is not None:
        write_bundle(out_dir, matrix, args, text)
        print(f"evidence: {out_dir}")
    return code


def with_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """A copy of ``args`` with the default computations (:data:`DEFAULT_CASES`), devices and modes filled in."""
    from detsim import MODES

    none_named = not args.cases and not args.nanobragg and not args.call
    return argparse.Namespace(**{
        **vars(args), "cases": list(DEFAULT_CASES) if none_named else args.cases,
        "devices": args.devices or ["cpu"] + (["cuda"] if torch.cuda.is_available() else []),
        "modes": args.modes or list(MODES)})


def named_computations(args: argparse.Namespace) -> list[Named]:
    """The computations the arguments name, cases first; raises ComputationError."""
    grads = tuple(args.grad)
    if args.call and grads:
        raise ComputationError("--grad applies to simulation cases only; a callable returns its own gradients")
    how = {"grads": grads, "chunk_pixels": args.chunk_pixels,
           "golden_dir": str(args.golden_dir) if args.golden_dir else None}
    return ([Named("golden", c, **how) for c in args.cases] + [Named("nanobragg", c, **how) for c in args.nanobragg]
            + [Named("callable", c) for c in args.call])


def command_line(args: argparse.Namespace, *, out: Path | None = None, entry: str = "detsim-track") -> str:
    """The canonical, re-runnable command for these arguments (every axis spelled out)."""
    return shlex.join([*shlex.split(entry), "determinism", *args.cases, *spelled(
        *(("--nanobragg", c) for c in args.nanobragg), *(("--call", c) for c in args.call),
        ("--repeats", args.repeats), ("--threads", args.threads), ("--dtypes", args.dtypes),
        ("--devices", args.devices), ("--modes", args.modes), *(("--grad", g) for g in args.grad),
        ("--chunk-pixels", args.chunk_pixels), ("--golden-dir", args.golden_dir),
        ("--deterministic", args.deterministic), ("--isolate", args.isolate), ("--strict", args.strict),
        ("--out", out))])


def write_bundle(out_dir: Path, matrix: Matrix, args: argparse.Namespace, text: str) -> None:
    """matrix.json/txt, runs.tsv (per-run hashes), env.json, commands.txt, crashes/, summary.md - atomically."""
    env = environment()
    env["deterministic_algorithms"] = torch.are_deterministic_algorithms_enabled()
    env["determinism_flag"] = bool(args.deterministic)
    command = command_line(args, out=out_dir)
    with atomic_directory(out_dir) as tmp:
        write_json(tmp / "matrix.json", matrix.to_dict(strict=args.strict))
        atomic_write_text(tmp / "matrix.txt", text + "\n")
        atomic_write_text(tmp / "runs.tsv", matrix.runs_tsv())
        write_json(tmp / "env.json", env)
        atomic_write_text(tmp / "commands.txt", _commands_text(args, matrix, command))
        for name, body in matrix.crash_reports().items():
            atomic_write_text(tmp / "crashes" / name, body)
        atomic_write_text(tmp / "summary.md", matrix.summary_markdown(command=command, env=env, strict=args.strict))


def _commands_text(args: argparse.Namespace, matrix: Matrix, command: str) -> str:
    lines = [f"# run from: {Path.cwd()}", command,
             "# the same without the installed entry point (PYTHONPATH=<repo> in a fresh clone):",
             command_line(args, out=None, entry=f"{Path(sys.executable).name} -m detsim.track.cli"),
             "# one configuration at a time:"]
    option = {"golden": "cases", "nanobragg": "nanobragg", "callable": "call"}  # the option naming each kind
    for config in matrix.configs():
        computation = matrix.computations[config.computation]
        lines.append(command_line(argparse.Namespace(**{
            **vars(args), "threads": [config.threads], "dtypes": [config.dtype], "devices": [config.device],
            "modes": [config.mode], "cases": [], "nanobragg": [], "call": [],
            option[computation.kind]: [computation.spec]})))
    return "\n".join(lines) + "\n"

