"""Where an image departs from its reference: the edges, a ring, the centre, or everywhere.

Input: two images of the same shape (a target's and the reference), float. Output: a JSON-ready record
(:func:`departure`): the share of the total absolute difference in the edge band and in the central region
(each beside its share of the area), the narrowest ring around the image centre holding most of it, Pearson r
of the central region against the full frame's (does the centre pass while the frame fails?), the worst
pixels with both values and their ratio, and a coarse map of the largest relative difference per block
(:func:`map_lines` draws it; a pixel fainter than a thousandth of the peak counts relative to that). The
rings are centred on the image's middle: a foreign case's beam centre is not known here. A target's recording
stores each departing image's record (:func:`stored` reads it back).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from detsim.track.base.metrics import passes_parity, pearson_r
from detsim.track.target.project import Project

HOLDS = 0.8  # a region "holds" the disagreement when it has this share of the total absolute difference
EDGE_FRACTION = 0.05  # the edge band: this fraction of the shorter side, at least one pixel
CENTRAL_FRACTION = 0.5  # the central region: this fraction of each side (a quarter of the area)
RING_BINS = 32  # annuli from the centre to the farthest corner
RING_WIDTH = 0.25  # a ring is at most this fraction of the farthest radius wide
WORST = 5  # worst pixels listed
MAP_CELLS = 16  # the map's blocks per side (fewer for a smaller image)
MAP_LEVELS = ((0.0, " "), (1e-6, "."), (1e-4, ":"), (1e-2, "+"), (float("inf"), "#"))  # max rel diff -> mark
MAP_FLOOR = 1e-3  # the map's relative differences are to at least this fraction of the image's peak


def _relative(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| relative to the larger of the two values, or to :data:`MAP_FLOOR` of the brighter image's peak
    for fainter pixels (float32 rounding of a near-empty background pixel is not a departure)."""
    diff = np.abs(a - b)
    peak = max(float(np.nanmax(np.abs(a), initial=0.0)), float(np.nanmax(np.abs(b), initial=0.0)))
    scale = np.maximum(np.maximum(np.abs(a), np.abs(b)), MAP_FLOOR * peak)
    return np.divide(diff, scale, out=np.zeros_like(diff), where=scale > 0)


def _central_slices(shape: tuple[int, int]) -> tuple[slice, slice]:
    out = []
    for n in shape:
        size = max(1, int(round(n * CENTRAL_FRACTION)))
        start = (n - size) // 2
        out.append(slice(start, start + size))
    return tuple(out)


def departure(image, reference) -> dict:
    """Where ``image`` departs from ``reference`` (see the module docstring)."""
    a = np.asarray(image, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"images of different shapes: {a.shape} and {b.shape}")
    h, w = a.shape
    diff = np.abs(a - b)
    diff = np.where(np.isfinite(diff), diff, np.nan)
    total = float(np.nansum(diff))
    band = max(1, int(round(EDGE_FRACTION * min(h, w))))
    edge = np.ones_like(diff, dtype=bool)
    edge[band:h - band, band:w - band] = False
    cs = _central_slices((h, w))
    centre = np.zeros_like(edge)
    centre[cs] = True
    regions = {name: {"share": _share(diff, mask, total), "area": round(float(mask.mean()), 4)}
               for name, mask in (("edges", edge), ("centre", centre))}
    regions["edges"]["band_px"] = band
    ring = _ring(diff, total)
    r_full, r_centre = pearson_r(a, b), pearson_r(a[cs], b[cs])
    record = {
        "shape": [h, w], "total_abs_diff": total, "differing_pixels": int(np.sum(diff > 0)),
        "regions": regions, "ring": ring,
        "full": {"r": r_full, "passes": passes_parity(r_full)},
        "central": {"rows": [cs[0].start, cs[0].stop], "cols": [cs[1].start, cs[1].stop], "r": r_centre,
                    "passes": passes_parity(r_centre)},
        "worst": _worst(a, b, diff),
        "map": _map(_relative(a, b)),
    }
    record["central_passes_full_fails"] = record["central"]["passes"] and not record["full"]["passes"]
    record["where"] = _where(record, total)
    record["sentence"] = sentence(record)
    return record


def _share(diff: np.ndarray, mask: np.ndarray, total: float) -> float:
    return round(float(np.nansum(diff[mask])) / total, 4) if total > 0 else 0.0


def _ring(diff: np.ndarray, total: float) -> dict | None:
    """The narrowest run of annuli around the image centre holding :data:`HOLDS` of the difference."""
    if total <= 0:
        return None
    h, w = diff.shape
    yy, xx = np.mgrid[0:h, 0:w]
    radius = np.hypot(yy - (h - 1) / 2, xx - (w - 1) / 2)
    edges = np.linspace(0, radius.max() + 1e-9, RING_BINS + 1)
    sums = np.array([np.nansum(diff[(radius >= lo) & (radius < hi)]) for lo, hi in zip(edges[:-1], edges[1:])])
    best = None
    for i in range(RING_BINS):
        acc = 0.0
        for j in range(i, RING_BINS):
            acc += sums[j]
            if acc >= HOLDS * total:
                if best is None or j - i < best[1] - best[0]:
                    best = (i, j)
                break
    i, j = best
    return {"from_px": round(float(edges[i]), 1), "to_px": round(float(edges[j + 1]), 1),
            "share": round(float(sums[i:j + 1].sum()) / total, 4), "max_radius_px": round(float(edges[-1]), 1)}


def _worst(a: np.ndarray, b: np.ndarray, diff: np.ndarray) -> list[dict]:
    ranked = np.where(np.isnan(diff), np.inf, diff).ravel()
    order = np.argsort(-ranked, kind="stable")[:WORST]
    out = []
    for flat in order:
        if ranked[flat] == 0:
            break
        s, f = np.unravel_index(int(flat), a.shape)
        ratio = a[s, f] / b[s, f] if b[s, f] != 0 else None
        out.append({"s": int(s), "f": int(f), "target": _num(a[s, f]), "reference": _num(b[s, f]),
                    "ratio": _num(ratio)})
    return out


def _num(x) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


def _map(rel: np.ndarray) -> list[list[float]]:
    """The largest relative difference per block, :data:`MAP_CELLS` blocks per side at most."""
    h, w = rel.shape
    rows = np.array_split(np.arange(h), min(MAP_CELLS, h))
    cols = np.array_split(np.arange(w), min(MAP_CELLS, w))
    rel = np.where(np.isfinite(rel), rel, 1.0)
    return [[float(rel[np.ix_(r, c)].max()) for c in cols] for r in rows]


def _where(record: dict, total: float) -> str:
    if total == 0:
        return "nowhere"
    if record["regions"]["edges"]["share"] >= HOLDS:
        return "edges"
    ring = record["ring"]
    if ring["from_px"] > 0 and ring["to_px"] - ring["from_px"] <= RING_WIDTH * ring["max_radius_px"]:
        return "ring"
    if record["regions"]["centre"]["share"] >= HOLDS:
        return "centre"
    return "everywhere"


def sentence(record: dict) -> str:
    """One line: where the images part."""
    where = record["where"]
    if where == "nowhere":
        return "the images are identical"
    regions, ring = record["regions"], record["ring"]
    said = {"edges": f"at the edges: {regions['edges']['share']:.0%} of the difference in the outer "
                     f"{regions['edges']['band_px']} px ({regions['edges']['area']:.0%} of the pixels)",
            "ring": f"in a ring {ring['from_px']:g}-{ring['to_px']:g} px from the image centre "
                    f"({ring['share']:.0%} of the difference)",
            "centre": f"in the centre: {regions['centre']['share']:.0%} of the difference in the central region",
            "everywhere": "across the frame (no edge band, ring or centre holds most of the difference)"}[where]
    central = record["central"]
    if record["central_passes_full_fails"]:
        said += f"; the central region passes (r = {central['r']:.8f}) while the full frame fails"
    worst = record["worst"][0] if record["worst"] else None
    if worst:
        said += (f"; worst pixel (s={worst['s']}, f={worst['f']}): {_g(worst['target'])} against "
                 f"{_g(worst['reference'])}")
    return "the images part " + said


def _g(x) -> str:
    return "undefined" if x is None else f"{x:.6g}"


def map_lines(record: dict) -> list[str]:
    """The map as text, one line per block row, with its legend."""
    lines = ["".join(next(mark for bound, mark in MAP_LEVELS if value <= bound) for value in row)
             for row in record["map"]]
    legend = ("largest relative difference per block (to at least 1e-3 of the peak): ' ' none, '.' <= 1e-6, "
              "':' <= 1e-4, '+' <= 1e-2, '#' more")
    return ["+" + "-" * len(lines[0]) + "+", *(f"|{line}|" for line in lines), "+" + "-" * len(lines[0]) + "+",
            legend]


def stored(results_dir: Path, commit: str, case: str) -> dict | None:
    """Where ``case``'s image departs from its reference at ``commit`` (a full hash or a unique prefix), as a
    target's recording stored it (``results_dir``: the folder ``detsim-track record`` writes for that target,
    ``results/targets/<target>/``; the first machine that has it); None where the image does not depart, the
    case rendered no image, or the commit is not recorded. ValueError: an unreadable stored row."""
    for row in Project(Path(results_dir)).rows(commit=commit):
        found = (row.get("cases", {}).get(case) or {}).get("departure")
        if found:
            return found
    return None
