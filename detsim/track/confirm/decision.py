"""What a re-measurement says about a suspected timing step: confirmed, or noise.

The rounds of a :class:`~.remeasure.Remeasurement` are paired (A and B measured back to back), so the
test is on the per-round log ratios ``log(b / a)``: their median is the **ratio** (B over A, lower is
better, so above 1 is slower) and a one-sided Wilcoxon signed-rank test (exact) says whether B is slower
at all. A step is **confirmed** when both hold: p < :data:`ALPHA` and the ratio above 1 + the
benchmark's threshold. Otherwise it is **noise**, with the reason (no significant difference, or a real
one smaller than the threshold). An undecided first look (the ratio above the threshold but p between
ALPHA and :data:`EXTEND_BELOW_P`) gets :data:`EXTRA_ROUNDS` more rounds once.
"""

from __future__ import annotations

import enum
import math
import statistics
from dataclasses import dataclass

from detsim.track.confirm.remeasure import ROUNDS, Remeasurement

ALPHA = 0.01  # one-sided level of the signed-rank test
EXTEND_BELOW_P = 0.2  # an undecided look with p under this gets more rounds
EXTRA_ROUNDS = ROUNDS


class Status(enum.Enum):
    CONFIRMED = "confirmed"  # re-measured: slower by more than the threshold, significantly
    NOISE = "noise"  # re-measured: no such difference
    SUSPECT = "suspect"  # a step in the history, not re-measured (the reason says why)


@dataclass(frozen=True)
class Confirmation:
    status: Status
    evidence: str  # one line: what decided
    ratio: float | None = None  # median per-round B / A (lower is better: above 1 is slower)
    p_value: float | None = None
    rounds: int = 0

    def record(self) -> dict:
        return {"confirmation": self.status.value, "confirmation_evidence": self.evidence,
                "remeasured_ratio": None if self.ratio is None else round(self.ratio, 4),
                "remeasured_p": None if self.p_value is None else float(f"{self.p_value:.3g}"),
                "remeasured_rounds": self.rounds}


def signed_rank_greater(differences: list[float]) -> float:
    """One-sided p-value that the differences are centred above zero (Wilcoxon signed-rank, exact).

    Zero differences are dropped; ties share their average rank (the exact null is then computed on
    doubled ranks, still exact).
    """
    d = [x for x in differences if x != 0]
    n = len(d)
    if n == 0:
        return 1.0
    order = sorted(range(n), key=lambda i: abs(d[i]))
    ranks2 = [0] * n  # twice the average rank, an integer
    i = 0
    while i < n:
        j = i
        while j + 1 < n and abs(d[order[j + 1]]) == abs(d[order[i]]):
            j += 1
        for k in range(i, j + 1):
            ranks2[order[k]] = i + j + 2
        i = j + 1
    w2 = sum(r for r, x in zip(ranks2, d) if x > 0)
    counts = {0: 1}  # the null distribution of twice the positive rank sum
    for r in ranks2:
        nxt = dict(counts)
        for total, c in counts.items():
            nxt[total + r] = nxt.get(total + r, 0) + c
        counts = nxt
    return sum(c for total, c in counts.items() if total >= w2) / 2 ** n


def _look(m: Remeasurement) -> tuple[float, float]:
    logs = [math.log(b / a) for a, b in zip(m.a, m.b)]
    return math.exp(statistics.median(logs)), signed_rank_greater(logs)


def extra_rounds(threshold: float):
    """The ``more`` callback of :func:`~.remeasure.remeasure`: one extension for an undecided first look."""
    def more(m: Remeasurement) -> int:
        if len(m.a) > ROUNDS:
            return 0
        ratio, p = _look(m)
        return EXTRA_ROUNDS if ratio > 1 + threshold and ALPHA <= p < EXTEND_BELOW_P else 0
    return more


def decide(m: Remeasurement, threshold: float) -> Confirmation:
    """Confirmed or noise, from the paired rounds of ``m`` against the benchmark's ``threshold``."""
    ratio, p = _look(m)
    head = (f"re-measured {m.commit_a[:8]} and {m.commit_b[:8]} in {len(m.a)} interleaved rounds of fresh "
            f"processes: x{ratio:.3f}, signed-rank p={p:.2g}")
    if p < ALPHA and ratio > 1 + threshold:
        return Confirmation(Status.CONFIRMED, f"{head}: slower by more than {threshold:.0%}", ratio, p, len(m.a))
    why = (f"not significant (p >= {ALPHA})" if p >= ALPHA
           else f"a difference within the {threshold:.0%} threshold")
    return Confirmation(Status.NOISE, f"{head}: {why}", ratio, p, len(m.a))
