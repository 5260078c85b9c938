"""Statistics of noisy histories: where the level of a series steps (:func:`segments`), and whether a step
is real (:func:`mann_whitney_greater`)."""

from __future__ import annotations

import math


def segments(y: list[float], threshold: float) -> list[tuple[int, int, float]]:
    """Piecewise-constant fit of a positive series, ``[(left, right_exclusive, level)]``: asv's exact Potts solver on
    log values with a per-step penalty of half the threshold (its own automatic one needs long histories and
    misses a 2x step after two commits; splitting liberally is safe, as every step is confirmed after)."""
    from asv import step_detect  # the development extra installs asv

    logs = [math.log(v) for v in y]
    right, values, _ = step_detect.solve_potts(logs, [1.0] * len(logs), gamma=math.log1p(threshold) / 2)
    return [(left, r, math.exp(v)) for left, r, v in zip([0, *right[:-1]], right, values)]


def mann_whitney_greater(before: list[float], after: list[float]) -> float:
    """One-sided p-value that ``after`` is stochastically larger than ``before`` (ties count against): the exact
    null distribution (no ties) for samples up to 50 each, the normal approximation beyond."""
    m, n = len(before), len(after)
    if not m or not n:
        return 1.0
    u = sum(1 for a in after for b in before if a > b)
    if max(m, n) > 50:
        mean, sd = m * n / 2, math.sqrt(m * n * (m + n + 1) / 12)
        return 0.5 * math.erfc((u - 0.5 - mean) / (sd * math.sqrt(2)))
    counts = u_counts(m, n)
    return sum(counts[u:]) / sum(counts)


def u_counts(m: int, n: int) -> list[int]:
    """Number of orderings of m + n distinct values giving each U = 0 .. m n (Gaussian binomial)."""
    table = [[[1] for _ in range(n + 1)] for _ in range(m + 1)]
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            row = [0] * j + table[i - 1][j]  # (i - 1, j) shifted by j, plus (i, j - 1)
            for u, c in enumerate(table[i][j - 1]):
                row[u] += c
            table[i][j] = row
    return table[m][n]
