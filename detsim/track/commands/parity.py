"""``detsim-track parity``: detsim against reference images, case by case, with pictures (the cases, the numbers,
the report folder and the exit status: docs/parity.md)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from detsim.fileio.bounded_read import DIRECTORY, what_is
from detsim.track.base.exitcodes import ExitCode
from detsim.track.commands import refuse
from detsim.track.base.golden import ENV_VAR, GoldenCase, GoldenError, discover, golden_dir
from detsim.track.base.metrics import PARITY_MIN_R
from detsim.track.base.output import OutputError, atomic_directory, atomic_write_bytes, atomic_write_text, \
    check_new_folder, utc_stamp, write_json, written_line
from detsim.track.base.runtime import device_problem, environment
from detsim.track.base.computations import DTYPES
from detsim.track.measure import parity
from detsim.track.base.parity import CaseParity
from detsim.track.base.status import Status
from detsim.track.measure.parity import WORDS, case_result, next_steps, run_case, worst_pixel_trace

HELP = "run detsim on golden (or your own) cases and report r, errors, worst pixel and pictures"
CASE_FILES = ("args.txt", "image.bin")
SOURCE_ROOT = Path(__file__).resolve().parents[3]  # the project detsim runs from (with tests/golden in a checkout)


def default_cases_dir() -> Path | None:
    """``$DETSIM_GOLDEN_DIR``, else ``tests/golden`` of the source tree detsim runs from, else of the
    project the working directory is in."""
    roots = [None] if os.environ.get(ENV_VAR) else [SOURCE_ROOT, None]
    for root in roots:
        try:
            return golden_dir(root)
        except GoldenError:
            continue
    return None


def _write_pictures(folder: Path, ours: np.ndarray, reference: np.ndarray, result: dict) -> None:
    scale = parity.IntensityScale.of(reference)
    floor = parity.difference_floor(reference, ours)
    diff_rgb, top = parity.difference_picture(ours - reference, floor)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(folder / "reference.png", parity.encode_png(parity.intensity_picture(reference, scale)))
    atomic_write_bytes(folder / "detsim.png", parity.encode_png(parity.intensity_picture(ours, scale)))
    atomic_write_bytes(folder / "difference.png", parity.encode_png(diff_rgb))
    rel = f"cases/{folder.name}"
    result["pictures"] = {k: f"{rel}/{k}.png" for k in ("reference", "detsim", "difference")}
    result["scale"] = {"knee": scale.knee, "vmax": scale.vmax, "floor": floor, "max_abs": top}


def _write_trace(folder: Path, outcome: CaseParity, result: dict, final_dir: Path) -> None:
    """detsim's trace of the worst pixel of a failing case, and what to do with it."""
    name, lines = worst_pixel_trace(outcome)
    atomic_write_text(folder / name, "\n".join(lines) + "\n")
    result["trace"] = f"cases/{folder.name}/{name}"
    result["next_steps"] = next_steps(result, final_dir / result["trace"])


def _correlation(text: str) -> float:
    """``--min-r``: a number in [-1, 1] (NaN would pass nothing and fail nothing), refused at parse time."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not -1.0 <= value <= 1.0:  # also false for NaN
        raise argparse.ArgumentTypeError(f"{text!r} is not a correlation (a number in [-1, 1])")
    return value


def add_arguments(parser) -> None:
    parser.add_argument("ids", nargs="*", metavar="CASE", help="case ids to run (default: every case)")
    parser.add_argument("--cases-dir", type=Path, default=None,
                        help="folder of cases (subfolders with args.txt + image.bin), or one case folder "
                             "(default: tests/golden)")
    parser.add_argument("--reports", type=Path, default=Path("reports"),
                        help="where reports/<STAMP>/parity/ goes (default: ./reports)")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float64")
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")
    parser.add_argument("--min-r", type=_correlation, default=PARITY_MIN_R,
                        help=f"pass threshold on Pearson r (default {PARITY_MIN_R})")


def _select(args) -> tuple[Path, list[GoldenCase]] | str:
    """(cases folder, cases to run), or why the run cannot start (bad cases, no such device)."""
    cases_dir = args.cases_dir or default_cases_dir()
    if cases_dir is None:
        return "no tests/golden folder found; give --cases-dir"
    kind = what_is(cases_dir)
    if kind != DIRECTORY:
        return f"--cases-dir {cases_dir}: {kind}; give a folder of cases (or one case folder)"
    try:
        cases = {case.id: case for case in discover(cases_dir)}
    except GoldenError as exc:
        return str(exc)
    if not cases:
        return f"{cases_dir}: no case folders (a case holds {' + '.join(CASE_FILES)})"
    unknown = [i for i in args.ids if i not in cases]
    if unknown:
        return f"unknown case id(s): {', '.join(unknown)}; known: {', '.join(cases)}"
    why = device_problem(args.device)
    if why:
        return f"--device {args.device}: {why}"
    return cases_dir, [cases[i] for i in args.ids] if args.ids else list(cases.values())


def run(args) -> int:
    chosen = _select(args)
    if isinstance(chosen, str):
        return refuse(f"parity: {chosen}")
    cases_dir, selected = chosen
    stamp = utc_stamp()
    final = args.reports / stamp / "parity"
    try:
        check_new_folder(final, "--reports")
    except OutputError as exc:
        return refuse(f"parity: {exc}")
    with atomic_directory(final) as tmp:
        outcomes = _run_cases(selected, args, tmp, final)
        results = [result for _, result in outcomes]
        summary = _summary(stamp, args, cases_dir, outcomes)
        write_json(tmp / "parity.json", summary)
        atomic_write_text(tmp / "summary.md", parity.markdown(summary))
        atomic_write_text(tmp / "index.html", parity.index_html(summary))
    _print_outcome(results, summary["counts"], args, final)
    return ExitCode.OK if all(outcome.status is Status.OK for outcome, _ in outcomes) else ExitCode.REGRESSED


def _run_cases(cases: list[GoldenCase], args, tmp: Path, final: Path) -> list[tuple[CaseParity, dict]]:
    """Run each case, writing its pictures (and a failing case's trace) under ``tmp``; each outcome and its case
    result."""
    dtype = DTYPES[args.dtype]
    outcomes = []
    for n, case in enumerate(cases, start=1):
        outcome = run_case(case, dtype=dtype, device=args.device, min_r=args.min_r)
        result = case_result(outcome)
        if outcome.image is not None:
            _write_pictures(tmp / "cases" / case.id, outcome.image, outcome.reference, result)
        if outcome.status is Status.FAILED:
            try:
                _write_trace(tmp / "cases" / case.id, outcome, result, final)
            except Exception as exc:  # noqa: BLE001 - the verdict stands without the trace
                result["trace_error"] = f"{type(exc).__name__}: {exc}"
        outcomes.append((outcome, result))
        r = "n/a" if result.get("r") is None else f"{result['r']:.8f}"
        print(f"[{n}/{len(cases)}] {case.id}: {WORDS[outcome.status].upper()} r={r}", file=sys.stderr, flush=True)
    return outcomes


def _print_outcome(results: list[dict], counts: dict, args, final: Path) -> None:
    print(parity.text_table(results))
    print(f"{counts['pass']} pass, {counts['fail']} fail, {counts['error']} error of {counts['total']} cases "
          f"(r >= {args.min_r}, {args.dtype} on {args.device})")
    print(f"report: {final.resolve() / 'index.html'}")
    print(written_line(final, "--reports"))
    for result in results:
        if "error" in result:  # a case that could not be read or rendered
            print(f"{result['id']}: {result['error']}")
        for hint in result.get("next_steps", [])[:1]:
            print(f"{result['id']}: {hint}")


def _summary(stamp: str, args, cases_dir: Path, outcomes: list[tuple[CaseParity, dict]]) -> dict:
    return {
        "stamp": stamp, "min_r": args.min_r, "dtype": args.dtype, "device": args.device,
        "cases_dir": str(cases_dir), "environment": environment(),  # the git state of the folder it runs in
        "counts": {"total": len(outcomes),
                   **{word: sum(outcome.status is status for outcome, _ in outcomes)
                      for status, word in WORDS.items()}},
        "cases": [result for _, result in outcomes],
    }
