"""How an image is judged against its reference: Pearson r over all pixels in float64, the acceptance line
(histories track ``1 - r``), and the other measures of agreement a parity report shows."""

from __future__ import annotations

import numpy as np

PARITY_MIN_R = 0.9995  # acceptance threshold of every golden case, float64 and float32 alike
PARITY_MAX_ONE_MINUS_R = 5e-4  # the same line on the 1 - r scale the histories use
# 1 - r below this is the rounding of Pearson r over equal or nearly equal images, not a disagreement: a factor on
# 1 - r (a target's parity rule) is taken on no less than this
ONE_MINUS_R_FLOOR = 1e-12
PARITY_DECIMALS = 9  # histories record 1 - r to 1e-9: float noise (~1e-15) never moves it, a physics change does


def pearson_r(a, b) -> float | None:
    """Pearson correlation of two images of the same size, in float64; None (never NaN) where undefined: no
    pixels, a non-finite value, or a constant image that differs from the other (two equal ones give 1)."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"images of different sizes: {x.size} and {y.size} pixels")
    if x.size == 0 or not (np.isfinite(x).all() and np.isfinite(y).all()):
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        if x.std() == 0 or y.std() == 0:
            return 1.0 if np.array_equal(x, y) else None
        r = float(np.corrcoef(x, y)[0, 1])
    return r if np.isfinite(r) else None


def passes_parity(r: float | None, min_r: float = PARITY_MIN_R) -> bool:
    """Whether ``r`` meets the acceptance line (an undefined r never does)."""
    return r is not None and bool(np.isfinite(r) and r >= min_r)


def image_metrics(ours, reference) -> dict:
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
