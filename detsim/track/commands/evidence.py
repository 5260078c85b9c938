"""``detsim-track evidence``: run a pytest selection on every device and archive the evidence bundle
(docs/evidence.md); the steps are :mod:`detsim.track.evidence.bundle`'s."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from detsim.fileio.bounded_read import DIRECTORY, MISSING, what_is
from detsim.track.base.exitcodes import BadInput, ExitCode
from detsim.track.commands import refuse
from detsim.track.base.output import REPORTS, OutputError, atomic_directory, check_place
from detsim.track.evidence.bundle import make_bundle
from detsim.track.evidence.durations import RETIMES
from detsim.track.evidence.manifest import MANIFEST, check_bundle, listed_count
from detsim.track.evidence.previous import free_stamp, history
from detsim.track.evidence.outcomes import Request
from detsim.track.evidence.summary import console_report

HELP = "run tests on every device and archive logs, environment, hashes and a verdict compared with last time"

AREA_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("selection", nargs="*",
                        help="what pytest should run: paths and node ids, resolved from the current "
                             "directory as pytest does; put pytest options after `--`")
    parser.add_argument("--area", help="the bundle goes to OUT_ROOT/AREA/<UTC stamp>/ "
                                       "(one word: letters, digits, . _ -)")
    parser.add_argument("--out-root", type=Path, default=REPORTS,
                        help="folder holding the areas (default: reports, relative to the current directory)")
    parser.add_argument("--device", action="append", choices=("cpu", "cuda"),
                        help="run on this device (repeatable); default: cpu, plus cuda when available")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="kill a pytest process after this long and record a crash (default: no limit)")
    parser.add_argument("--retime", type=int, default=RETIMES, metavar="N",
                        help=f"re-runs that confirm a test which looked slower than last time "
                             f"(default {RETIMES})")
    parser.add_argument("--verify", type=Path, metavar="PATH",
                        help="only re-check the sha256.txt of the bundle at PATH")


def run(args: argparse.Namespace) -> int:
    if args.verify is not None:
        if args.selection or args.area:
            return refuse("evidence: --verify takes a bundle folder and nothing else")
        return verify(args.verify)
    try:
        request = _request(args)
        area_dir = request.cwd / request.out_root / request.area
        check_place(area_dir, "--out-root", shown=request.out_root)
        stamp = free_stamp(area_dir)
        with atomic_directory(area_dir / stamp) as folder:  # removes the folders it made when it fails
            results = make_bundle(request, folder, stamp, history(area_dir, stamp))
    except (BadInput, OutputError) as exc:
        return refuse(f"evidence: {exc}")
    final = area_dir / stamp  # printed relative to the working directory when under it
    print(console_report(results, final.relative_to(request.cwd) if final.is_relative_to(request.cwd) else final))
    return results.exit_code()


def _request(args: argparse.Namespace) -> Request:
    """The options as a :class:`Request`; raises :class:`BadInput` for options that cannot make a bundle."""
    devices = _devices(args.device)
    if not args.area:
        raise BadInput("--area NAME is required (the bundle goes to OUT_ROOT/NAME/<stamp>/)")
    if not AREA_RE.fullmatch(args.area):
        raise BadInput(f"--area {args.area!r}: use one word of letters, digits, '.', '_' or '-'")
    if args.retime < 0 or (args.timeout is not None and args.timeout <= 0):
        raise BadInput("--retime must be >= 0 and --timeout > 0")
    return Request(area=args.area, selection=tuple(args.selection), devices=tuple(devices), cwd=Path.cwd(),
                   asked_devices=tuple(args.device or ()), out_root=args.out_root, timeout=args.timeout,
                   retime=args.retime)


def _devices(chosen: list[str] | None) -> list[str]:
    """The devices to run on: those chosen (CUDA only where available), else cpu plus cuda if present."""
    import torch

    if chosen:
        devices = list(dict.fromkeys(chosen))
        if "cuda" in devices and not torch.cuda.is_available():
            raise BadInput("--device cuda was asked for, but torch.cuda.is_available() is False here")
        return devices
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def verify(folder: Path) -> int:
    """``--verify``: exit 0 when every file matches sha256.txt, 1 when one does not, 2 when one cannot be read."""
    kind = what_is(folder)
    if kind != DIRECTORY:
        return refuse(f"evidence: --verify {folder}: {kind}, not a bundle folder")
    if what_is(folder / MANIFEST) == MISSING:
        return refuse(f"evidence: {folder} has no {MANIFEST}; not an evidence bundle")
    problems = check_bundle(folder)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{folder}: {len(problems)} problem{'s' if len(problems) != 1 else ''} against {MANIFEST}")
        unchecked = any(p.startswith("unreadable:") for p in problems)  # could not be checked: not measured
        return ExitCode.UNMEASURED if unchecked else ExitCode.REGRESSED
    print(f"{folder}: ok, {listed_count(folder)} files match {MANIFEST}")
    return ExitCode.OK
