"""How an image is judged against its reference: Pearson r over all pixels in float64, and the acceptance
line (histories track ``1 - r``)."""

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
