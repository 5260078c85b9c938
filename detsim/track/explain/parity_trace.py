"""A parity change explained by the first traced quantity that changed between two commits, at the pixel
that changed most."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from detsim.track.explain.sides import Side, run_side_job
from detsim.track.compare.traces import compare_traces, parse_trace

RTOL, ATOL = 1e-12, 0.0  # the same program at two commits: anything beyond rounding of the printout


def worst_pixel(old: np.ndarray, new: np.ndarray, reference: np.ndarray | None = None) -> tuple[int, int]:
    """(slow, fast) of the largest |new - old|; if the images are equal, of the largest |new - reference|."""
    delta = np.abs(new.astype(np.float64) - old.astype(np.float64))
    if not delta.any() and reference is not None:
        delta = np.abs(new.astype(np.float64) - reference.astype(np.float64))
    s, f = np.unravel_index(int(np.argmax(delta)), delta.shape)
    return int(s), int(f)


def trace_at(side: Side, workload: str, pixel: tuple[int, int], golden: Path, out: Path, cwd: Path) -> str:
    """The ``TRACE_PY:`` lines of ``pixel`` at ``side`` (also written to ``out``)."""
    run_side_job(side, {"job": "trace", "workload": workload, "pixel": list(pixel), "out": str(out),
                        "golden_dir": str(golden)}, cwd=cwd)
    return out.read_text()


def _values(values) -> str:
    return " ".join(f"{v:.17g}" for v in values) or "(no values)"


def first_change(old_text: str, new_text: str, old_name: str = "old", new_name: str = "new") -> dict | None:
    """The first quantity whose traced value differs: ``{"name", "occurrence", "labels", "old", "new",
    "rel", "reason", "differing"}`` (differing: the names that differ, in order), or None."""
    comparison = compare_traces(parse_trace(old_text, old_name), parse_trace(new_text, new_name), rtol=RTOL, atol=ATOL)
    first = comparison.first
    if first is None:
        return None
    names = list(dict.fromkeys(d.name for d in comparison.differences))
    return {"name": first.name, "occurrence": first.occurrence,
            "labels": " ".join(f"{k}={v}" for k, v in first.a.labels),
            "old": _values(first.a.values), "new": _values(first.b.values), "rel": first.rel,
            "reason": first.reason, "differing": names, "compared": comparison.compared}


def sentence(commit: str, change: dict | None, pixel: tuple[int, int]) -> str:
    """``the parity change at <commit> starts at `<quantity>`, old -> new`` (or that no trace differs)."""
    if change is None:
        return (f"the traces of pixel (s={pixel[0]}, f={pixel[1]}) agree at both commits: the change is not "
                "in a traced quantity of that pixel")
    where = f" [{change['labels']}]" if change["labels"] else ""
    return (f"the parity change at {commit[:8]} starts at `{change['name']}`{where} of pixel "
            f"(s={pixel[0]}, f={pixel[1]}), {change['old']} -> {change['new']}")
