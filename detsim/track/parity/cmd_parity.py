"""``detsim-track parity``: detsim against reference images, case by case, with pictures.

A case is a folder holding ``args.txt`` (one nanoBragg command line; input files relative to the folder)
and ``image.bin`` (the reference float image: raw float32 little-endian, slow-major). By default every
case of ``tests/golden`` is run; positional ids choose some, ``--cases-dir`` points at another folder of
cases (or at one case folder).

Per case: Pearson r, max |detsim - reference|, max relative difference |a - b| / max(|a|, |b|), the worst
pixel (largest absolute difference) with both values, the ratio of the image sums, and the verdict
(pass when r >= ``--min-r``, 0.9995 by default, the project's acceptance threshold). Written atomically
to ``reports/<STAMP>/parity/`` (never overwriting): ``index.html``, ``summary.md``, ``parity.json`` and
``cases/<id>/{reference,detsim,difference}.png``; for a failing case also ``cases/<id>/trace_s<S>_f<F>.log``,
detsim's per-pixel trace of the worst pixel, ready for ``detsim-track trace-diff``.

Exit status: 0 every case passes, 1 some case fails or cannot run, 2 bad input (no cases, unknown id,
no such device).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from detsim.argconfig import config_from_argv
from detsim.track.base.golden import working_directory
from detsim.track.parity import report
from detsim.track.base.output import atomic_directory, atomic_write_bytes, atomic_write_text, utc_stamp, write_json
from detsim.track.base.provenance import environment
HELP = "run detsim on golden (or your own) cases and report r, errors, worst pixel and pictures"
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
MIN_R = 0.9995  # the acceptance threshold of tests/_tolerances.py (PARITY_MIN_R)
CASE_FILES = ("args.txt", "image.bin")
SOURCE_DIR = Path(__file__).resolve().parent  # git information is that of the detsim code that ran


def default_cases_dir() -> Path | None:
    """``tests/golden`` of the source tree detsim runs from, or of the enclosing git work tree."""
    from detsim.track.base.provenance import repo_root
    candidates = [Path(__file__).resolve().parents[2] / "tests" / "golden"]
    root = repo_root()
    if root is not None:
        candidates.append(root / "tests" / "golden")
    return next((c for c in candidates if c.is_dir()), None)


def discover(cases_dir: Path) -> dict[str, Path]:
    """Case id -> folder: ``cases_dir`` itself if it holds args.txt, else its subfolders that do, by name."""
    if (cases_dir / "args.txt").is_file():
        return {cases_dir.resolve().name: cases_dir}
    return {d.name: d for d in sorted(cases_dir.iterdir()) if d.is_dir() and (d / "args.txt").is_file()}


def image_metrics(ours: np.ndarray, reference: np.ndarray) -> dict:
    """Agreement of two images of the same shape, computed in float64.

    Returns:
        r (None when undefined: a constant image that differs), max_abs, max_rel (|a-b| / max(|a|, |b|),
        0 where both are 0), worst {s, f, detsim, reference} (largest absolute difference; a non-finite
        detsim value counts as the largest), sum_detsim, sum_reference, sum_ratio (None when undefined).
    """
    a = np.asarray(ours, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    diff = np.abs(a - b)
    finite = np.isfinite(diff)
    ranked = np.where(finite, diff, np.inf)
    s, f = np.unravel_index(int(np.argmax(ranked)), a.shape)
    scale = np.maximum(np.abs(a), np.abs(b))
    rel = np.divide(diff, scale, out=np.zeros_like(diff), where=scale > 0)
    sum_a, sum_b = float(a.sum()), float(b.sum())
    if sum_b != 0:
        sum_ratio = sum_a / sum_b
    else:
        sum_ratio = 1.0 if sum_a == 0 else None
    return {
        "r": _pearson(a, b),
        "max_abs": float(ranked.max()) if finite.all() else None,
        "max_rel": float(rel[finite].max(initial=0.0)) if finite.all() else None,
        "worst": {"s": int(s), "f": int(f), "detsim": _finite_or_none(a[s, f]), "reference": _finite_or_none(b[s, f])},
        "sum_detsim": _finite_or_none(sum_a), "sum_reference": _finite_or_none(sum_b),
        "sum_ratio": _finite_or_none(sum_ratio),
    }


def _finite_or_none(x) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


def _pearson(a: np.ndarray, b: np.ndarray) -> float | None:
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return None
    if a.std() == 0 or b.std() == 0:
        return 1.0 if np.array_equal(a, b) else None
    return float(np.corrcoef(a.ravel(), b.ravel())[0, 1])


def run_case(case_id: str, folder: Path, *, dtype: torch.dtype, device: str, min_r: float):
    """Render one case and compare it with its reference.

    Any exception while reading or rendering the case makes it an "error" case (the report goes on).

    Returns:
        (result, detsim image or None, reference image or None, config or None); ``result["status"]`` is
        "pass", "fail" or "error" (with ``result["error"]``).
    """
    from detsim.engine import prepare, render

    result: dict = {"id": case_id, "dir": str(folder)}
    try:
        argv = (folder / "args.txt").read_text().split()
        result["args"] = argv
        with working_directory(folder):
            config = config_from_argv(argv)
        shape = (config.detector.spixels, config.detector.fpixels)
        result["shape"] = list(shape)
        reference = _read_reference(folder / "image.bin", shape)
        start = time.perf_counter()
        with torch.no_grad():
            image, _ = render(prepare(config, device=device, dtype=dtype))
        ours = image.detach().cpu().double().numpy()
        result["seconds"] = round(time.perf_counter() - start, 3)
    except Exception as exc:  # noqa: BLE001 - one broken case must not stop the report
        result.update(status="error", error=f"{type(exc).__name__}: {exc}")
        return result, None, None, None
    result.update(image_metrics(ours, reference))
    result["status"] = "pass" if result["r"] is not None and result["r"] >= min_r else "fail"
    return result, ours, reference, config


def _read_reference(path: Path, shape: tuple[int, int]) -> np.ndarray:
    if not path.is_file():
        raise FileNotFoundError(f"no reference image {path}")
    data = np.fromfile(path, dtype="<f4")
    if data.size != shape[0] * shape[1]:
        raise ValueError(f"{path}: {data.size} float32 values, but the arguments give a "
                         f"{shape[0]}x{shape[1]} detector")
    return data.reshape(shape)


def _write_pictures(folder: Path, ours: np.ndarray, reference: np.ndarray, result: dict) -> None:
    scale = report.IntensityScale.of(reference)
    floor = report.difference_floor(reference, ours)
    diff_rgb, top = report.difference_picture(ours - reference, floor)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(folder / "reference.png", report.encode_png(report.intensity_picture(reference, scale)))
    atomic_write_bytes(folder / "detsim.png", report.encode_png(report.intensity_picture(ours, scale)))
    atomic_write_bytes(folder / "difference.png", report.encode_png(diff_rgb))
    rel = f"cases/{folder.name}"
    result["pictures"] = {k: f"{rel}/{k}.png" for k in ("reference", "detsim", "difference")}
    result["scale"] = {"knee": scale.knee, "vmax": scale.vmax, "floor": floor, "max_abs": top}


def _write_trace(folder: Path, config, result: dict, final_dir: Path) -> None:
    """detsim's trace of the worst pixel of a failing case, and what to do with it."""
    from detsim.trace import trace_records

    s, f = result["worst"]["s"], result["worst"]["f"]
    name = f"trace_s{s}_f{f}.log"
    with working_directory(Path(result["dir"])):
        lines = [rec.line() for _, records in trace_records(config, [(s, f)]) for rec in records]
    atomic_write_text(folder / name, "\n".join(lines) + "\n")
    result["trace"] = f"cases/{folder.name}/{name}"
    trace = final_dir / result["trace"]
    result["next_steps"] = [
        f"detsim's trace of the worst pixel (s={s}, f={f}): {trace}",
        f"the reference program's trace of the same pixel: add the TRACE_C prints of docs/trace.md, run it "
        f"on {result['dir']}/args.txt for slow {s}, fast {f} and save its output as c.log",
        f"then: detsim-track trace-diff c.log {trace}",
    ]


def add_arguments(parser) -> None:
    parser.add_argument("ids", nargs="*", metavar="CASE", help="case ids to run (default: every case)")
    parser.add_argument("--cases-dir", type=Path, default=None,
                        help="folder of cases (subfolders with args.txt + image.bin), or one case folder "
                             "(default: tests/golden)")
    parser.add_argument("--reports", type=Path, default=Path("reports"),
                        help="where reports/<STAMP>/parity/ goes (default: ./reports)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")
    parser.add_argument("--min-r", type=float, default=MIN_R, help=f"pass threshold on Pearson r (default {MIN_R})")


def _select(args) -> tuple[Path, dict[str, Path]] | str:
    """(cases folder, cases to run), or an error message."""
    cases_dir = args.cases_dir or default_cases_dir()
    if cases_dir is None:
        return "no tests/golden folder found; give --cases-dir"
    if not cases_dir.is_dir():
        return f"--cases-dir {cases_dir}: no such folder"
    cases = discover(cases_dir)
    if not cases:
        return f"{cases_dir}: no case folders (a case holds {' + '.join(CASE_FILES)})"
    unknown = [i for i in args.ids if i not in cases]
    if unknown:
        return f"unknown case id(s): {', '.join(unknown)}; known: {', '.join(cases)}"
    return cases_dir, ({i: cases[i] for i in args.ids} if args.ids else cases)


def run(args) -> int:
    chosen = _select(args)
    if isinstance(chosen, str):
        print(f"parity: {chosen}", file=sys.stderr)
        return EXIT_BAD_INPUT
    cases_dir, selected = chosen
    try:
        torch.empty(0, device=args.device)
    except (RuntimeError, AssertionError) as exc:
        print(f"parity: --device {args.device}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    dtype = torch.float32 if args.dtype == "float32" else torch.float64
    stamp = utc_stamp()
    final = args.reports / stamp / "parity"
    if final.exists():
        print(f"parity: {final} already exists; not overwriting it", file=sys.stderr)
        return EXIT_BAD_INPUT
    results = []
    with atomic_directory(final) as tmp:
        for n, (case_id, folder) in enumerate(selected.items(), start=1):
            result, ours, reference, config = run_case(case_id, folder, dtype=dtype, device=args.device,
                                                       min_r=args.min_r)
            if ours is not None:
                _write_pictures(tmp / "cases" / case_id, ours, reference, result)
            if result["status"] == "fail" and config is not None:
                try:
                    _write_trace(tmp / "cases" / case_id, config, result, final)
                except Exception as exc:  # noqa: BLE001 - the verdict stands without the trace
                    result["trace_error"] = f"{type(exc).__name__}: {exc}"
            results.append(result)
            r = "n/a" if result.get("r") is None else f"{result['r']:.8f}"
            print(f"[{n}/{len(selected)}] {case_id}: {result['status'].upper()} r={r}", file=sys.stderr, flush=True)
        summary = _summary(stamp, args, cases_dir, results)
        write_json(tmp / "parity.json", summary)
        atomic_write_text(tmp / "summary.md", report.markdown(summary))
        atomic_write_text(tmp / "index.html", report.index_html(summary))
    print(report.text_table(results))
    counts = summary["counts"]
    print(f"{counts['pass']} pass, {counts['fail']} fail, {counts['error']} error of {counts['total']} cases "
          f"(r >= {args.min_r}, {args.dtype} on {args.device})")
    print(f"report: {final / 'index.html'}")
    for result in results:
        if result["status"] == "error":
            print(f"{result['id']}: {result['error']}")
        for hint in result.get("next_steps", [])[:1]:
            print(f"{result['id']}: {hint}")
    return EXIT_OK if counts["pass"] == counts["total"] else EXIT_FAILED


def _summary(stamp: str, args, cases_dir: Path, results: list[dict]) -> dict:
    return {
        "stamp": stamp, "min_r": args.min_r, "dtype": args.dtype, "device": args.device,
        "cases_dir": str(cases_dir), "environment": environment(SOURCE_DIR),
        "counts": {"total": len(results), **{k: sum(r["status"] == k for r in results) for k in ("pass", "fail", "error")}},
        "cases": results,
    }
