"""``detsim-track gpu-check``: the prepared device check (docs/gpu.md; ``.ci/gpu`` runs it). On a CUDA device it
writes ``gpu.json`` and ``summary.md`` to ``results/gpu/<machine>/`` (and ``--out DIR``); a dry run, or a machine
without CUDA, runs the same steps on the CPU at small sizes and writes to ``--out DIR``, else
``reports/gpu-dry-run/<machine>/``, never into ``results/``. Prints the summary; exits 0 (every step ok or
skipped), 1 (a step found a problem) or 2 (a step could not finish, or bad input)."""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
from dataclasses import replace
from pathlib import Path

from detsim.fileio.bounded_read import what_is
from detsim.track.base.golden import GoldenError, golden_dir, load_cases
from detsim.track.commands import refuse
from detsim.track.gpu.check import STEP_KINDS, Options, run_check
from detsim.track.gpu.plan import DRY_BUDGET_S, FULL_BUDGET_S, PATHS, make_plan, path_named
from detsim.track.gpu.summary import summary
from detsim.track.base.output import OutputError, atomic_write_text, check_output_file, check_place, write_json

HELP = "the device check: every path's tests, parity, determinism and speed on CUDA (--dry-run: on the CPU)"
REPORT = "gpu-check"  # the record's "report" field: a gpu.json this command may replace
RESULTS = Path("results") / "gpu"
DRY_RESULTS = Path("reports") / "gpu-dry-run"
DRY_CASES = 2  # the dry run's golden cases: the smallest by pixel·steps
MACHINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_BUDGET_S = 3600.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true",
                        help="run every step it can on the CPU at small sizes, even where CUDA is present")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="also write gpu.json and summary.md to DIR (a dry run: only there)")
    parser.add_argument("--machine", default=None,
                        help="the machine's name in results/gpu/ (default: the GPU's name; a dry run: the host's)")
    parser.add_argument("--nanobragg", type=Path, default=None, metavar="PATH",
                        help="a nanoBragg.c binary to time on the same workloads (never built or fetched here)")
    parser.add_argument("--steps", default=",".join(STEP_KINDS), metavar="KINDS",
                        help=f"the kinds of step to run, comma-separated (default all: {','.join(STEP_KINDS)})")
    parser.add_argument("--paths", default=",".join(p.name for p in PATHS), metavar="PATHS",
                        help="the paths to check, comma-separated (default all)")
    parser.add_argument("--cases", default=None, metavar="IDS",
                        help=f"golden case ids, comma-separated (default: all; a dry run: the {DRY_CASES} smallest)")
    parser.add_argument("--commit", default=None, help="the commit checked, where the checkout has no git to ask")
    parser.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                        help=f"the steps' time budget (default {FULL_BUDGET_S:.0f} s on CUDA, {DRY_BUDGET_S:.0f} s "
                             f"dry; {MAX_BUDGET_S:.0f} at most): the steps that do not fit are recorded as not run")


def run(args: argparse.Namespace) -> int:
    import torch

    dry = args.dry_run or not torch.cuda.is_available()
    try:
        plan, options, machine, folders = _prepare(args, dry)
    except (ValueError, GoldenError, OutputError) as exc:
        return refuse(f"gpu-check: {exc}")
    if dry and not args.dry_run:
        print("gpu-check: no CUDA device here: a dry run on the CPU", file=sys.stderr)
    record = {"report": REPORT, "machine": machine,
              **run_check(plan, options, progress=lambda line: print(line, file=sys.stderr))}
    for folder in folders:  # the record first: whatever happens next, the figures are kept
        write_json(folder / "gpu.json", record)
    text = summary(record)
    for folder in folders:
        atomic_write_text(folder / "summary.md", text)
    print(text)
    print("gpu-check: written to " + ", ".join(str(f) for f in folders), file=sys.stderr)
    return record["exit_code"]


def _prepare(args: argparse.Namespace, dry: bool):
    """The plan, the options, the machine's name and the output folders, every input checked before any work
    (ValueError, GoldenError, OutputError: one line)."""
    kinds = _listed(args.steps, STEP_KINDS, "--steps")
    paths = tuple(path_named(name) for name in _listed(args.paths, [p.name for p in PATHS], "--paths"))
    golden = golden_dir(Path.cwd())
    known = load_cases(golden)
    if args.cases is not None:
        cases = _listed(args.cases, [c.id for c in known], "--cases")
    elif dry:
        cases = tuple(c.id for c in sorted(known, key=lambda c: c.pixel_steps or 0)[:DRY_CASES])
    else:
        cases = None
    plan = replace(make_plan(dry, cases), paths=paths)
    if args.budget is not None:
        if not 0 < args.budget <= MAX_BUDGET_S:  # NaN fails this too
            raise ValueError(f"--budget {args.budget:g}: seconds, more than 0 and at most {MAX_BUDGET_S:.0f}")
        plan = replace(plan, budget_s=args.budget)
    if args.nanobragg is not None and not (args.nanobragg.is_file() and os.access(args.nanobragg, os.X_OK)):
        raise ValueError(f"--nanobragg {args.nanobragg}: {what_is(args.nanobragg)}, not an executable file")
    machine = args.machine or _machine_name(dry)
    if not MACHINE_NAME.fullmatch(machine):
        raise ValueError(f"--machine {machine!r}: letters, digits, '.', '_' and '-' only (64 at most)")
    folders = [] if dry and args.out else [(DRY_RESULTS if dry else RESULTS) / machine]
    if args.out is not None:
        folders.append(args.out)
    for folder in folders:
        option = "--out" if folder == args.out else "results folder"
        if folder.exists() and not folder.is_dir():
            raise OutputError(f"{option} {folder}: not a folder")
        check_place(folder, option)
        check_output_file(folder / "gpu.json", option, REPORT)
        if (folder / "summary.md").exists() and not (folder / "gpu.json").exists():
            raise OutputError(f"{option} {folder}: holds a summary.md of no gpu-check run; refusing to replace it")
    return plan, Options(root=Path.cwd(), golden_dir=golden, nanobragg=args.nanobragg, kinds=kinds,
                         commit=args.commit), machine, folders


def _listed(text: str, allowed, option: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in allowed]
    if unknown or not names:
        raise ValueError(f"{option} {text!r}: unknown {', '.join(unknown) or 'empty list'} "
                         f"(one or more of {', '.join(allowed) if len(allowed) < 12 else 'the listed names'})")
    return names


def _machine_name(dry: bool) -> str:
    """The GPU's name as a folder name (``nvidia-h100-80gb-hbm3``), or in a dry run the host's."""
    if dry:
        name = socket.gethostname()
    else:
        import torch

        name = torch.cuda.get_device_name(0)
    return re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-")[:64] or "unknown"
