"""One parity case: detsim's image of a case, rendered as the ``detsim`` command reads its arguments, against
the case's reference image.

The outcome is a **case result**, the JSON-ready record ``parity.json`` stores per case: ``id``, ``dir``,
``args``, ``shape`` [slow, fast], ``seconds`` (prepare + render, wall), the agreement of the images
(:func:`image_metrics`) and ``status``: "pass" (r meets the line), "fail", or "error" with ``error``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from detsim.track.base.golden import GoldenCase, working_directory
from detsim.track.base.metrics import passes_parity, pearson_r


def image_metrics(ours: np.ndarray, reference: np.ndarray) -> dict:
    """Agreement of two images of the same shape, in float64: ``r`` (None when undefined), ``max_abs``, ``max_rel``
    (|a-b| / max(|a|, |b|), 0 where both are 0), ``worst`` {s, f, detsim, reference} (the largest absolute
    difference; a non-finite detsim value counts as the largest), ``sum_detsim``, ``sum_reference``, ``sum_ratio``."""
    a = np.asarray(ours, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    diff = np.abs(a - b)
    finite = np.isfinite(diff)
    ranked = np.where(finite, diff, np.inf)
    s, f = np.unravel_index(int(np.argmax(ranked)), a.shape)
    scale = np.maximum(np.abs(a), np.abs(b))
    with np.errstate(invalid="ignore"):  # inf / inf where detsim is not finite; max_rel is None then
        rel = np.divide(diff, scale, out=np.zeros_like(diff), where=scale > 0)
    sum_a, sum_b = float(a.sum()), float(b.sum())
    if sum_b != 0:
        sum_ratio = sum_a / sum_b
    else:
        sum_ratio = 1.0 if sum_a == 0 else None
    return {
        "r": pearson_r(a, b),
        "max_abs": float(ranked.max()) if finite.all() else None,
        "max_rel": float(rel[finite].max(initial=0.0)) if finite.all() else None,
        "worst": {"s": int(s), "f": int(f), "detsim": _finite_or_none(a[s, f]), "reference": _finite_or_none(b[s, f])},
        "sum_detsim": _finite_or_none(sum_a), "sum_reference": _finite_or_none(sum_b),
        "sum_ratio": _finite_or_none(sum_ratio),
    }


def _finite_or_none(x) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


@dataclass(frozen=True)
class CaseRun:
    """A case result, and what it was computed from (None where the case could not be rendered)."""

    result: dict  # the case result (module docstring); the report adds pictures and traces to it
    ours: np.ndarray | None  # detsim's image, float64 (slow, fast)
    reference: np.ndarray | None  # the case's reference image, float32 (slow, fast)
    config: object | None  # the SimulationConfig detsim rendered

    @property
    def failed(self) -> bool:
        return self.result["status"] == "fail"


def run_case(case: GoldenCase, *, dtype: torch.dtype, device: str, min_r: float) -> CaseRun:
    """Render one case and compare it with its reference; any exception while reading or rendering it makes
    it an "error" case (the report goes on)."""
    from detsim.commandline.to_config import config_from_argv
    from detsim.rendering.engine import prepare, render

    result: dict = {"id": case.id, "dir": str(case.folder), "args": list(case.args)}
    try:
        config = case.config(config_from_argv)
        shape = (config.detector.spixels, config.detector.fpixels)
        result["shape"] = list(shape)
        reference = _reference(case, shape)
        start = time.perf_counter()
        with torch.no_grad():
            image, _ = render(prepare(config, device=device, dtype=dtype))
        ours = image.detach().cpu().double().numpy()
        result["seconds"] = round(time.perf_counter() - start, 3)
    except Exception as exc:  # noqa: BLE001 - one broken case must not stop the report
        result.update(status="error", error=f"{type(exc).__name__}: {exc}")
        return CaseRun(result, None, None, None)
    result.update(image_metrics(ours, reference))
    result["status"] = "pass" if passes_parity(result["r"], min_r) else "fail"
    return CaseRun(result, ours, reference, config)


def _reference(case: GoldenCase, shape: tuple[int, int]) -> np.ndarray:
    """The case's reference image, which must have the detector shape its arguments give."""
    reference = case.reference(shape)
    if reference.shape != shape:
        raise ValueError(f"{case.folder / 'image.bin'}: a {reference.shape[0]}x{reference.shape[1]} image, but "
                         f"the arguments give a {shape[0]}x{shape[1]} detector")
    return reference


def worst_pixel_trace(run: CaseRun) -> tuple[str, list[str]]:
    """detsim's trace of the worst pixel of a rendered case: (file name, its lines)."""
    from detsim.diagnostics.pixel_trace import trace_records

    s, f = run.result["worst"]["s"], run.result["worst"]["f"]
    with working_directory(Path(run.result["dir"])):
        lines = [rec.line() for _, records in trace_records(run.config, [(s, f)]) for rec in records]
    return f"trace_s{s}_f{f}.log", lines


def next_steps(result: dict, trace: Path) -> list[str]:
    """What to do with the trace ``trace`` of a failing case: the reference's trace, then trace-diff."""
    s, f = result["worst"]["s"], result["worst"]["f"]
    return [
        f"detsim's trace of the worst pixel (s={s}, f={f}): {trace}",
        f"the reference program's trace of the same pixel: add the TRACE_C prints of docs/trace.md, run it "
        f"on {result['dir']}/args.txt for slow {s}, fast {f} and save its output as c.log",
        f"then: detsim-track trace-diff c.log {trace}",
    ]
