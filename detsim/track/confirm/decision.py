"""What a re-measurement says about a suspected timing step: confirmed, or noise (the rule: docs/tracking.md).
The test is on the log ratios ``log(b / a)`` of the paired rounds, two consecutive rounds (one started by each
side) averaged into one block, which cancels any effect of sampling first and a drift of the machine across
the pair."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass

from detsim.track.confirm.remeasure import ROUNDS, Remeasurement
from detsim.track.verdict.finding import Status

ALPHA = 0.01  # one-sided level of the signed-rank test
EXTEND_BELOW_P = 0.2  # an undecided look with p under this gets more rounds
EXTRA_ROUNDS = ROUNDS


@dataclass(frozen=True)
class Confirmation:
    status: Status  # CONFIRMED (slower by more than the threshold, significantly) or NOISE (no such difference)
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
    """One-sided p-value that the differences are centred above zero (Wilcoxon signed-rank, exact): zeros are
    dropped, ties share their average rank (the null is computed on doubled ranks, still exact)."""
    d = [x for x in differences if x != 0]
    n = len(d)
    if n == 0:
        return 1.0
    order = sorted(abs(x) for x in d)
    first, last = {}, {a: i for i, a in enumerate(order)}  # |x| -> its first and last place in ``order``
    for i, a in enumerate(order):
        first.setdefault(a, i)
    ranks2 = [first[abs(x)] + last[abs(x)] + 2 for x in d]  # twice the average rank, an integer
    w2 = sum(r for r, x in zip(ranks2, d) if x > 0)
    counts = Counter({0: 1})  # the null distribution of twice the positive rank sum
    for r in ranks2:
        counts += Counter({total + r: c for total, c in counts.items()})
    return sum(c for total, c in counts.items() if total >= w2) / 2 ** n


def block_logs(m: Remeasurement) -> list[float]:
    """The mean log ratio of each pair of consecutive rounds (one started by A, one by B)."""
    logs = [math.log(b / a) for a, b in zip(m.a, m.b)]
    return [(x + y) / 2 for x, y in zip(logs[0::2], logs[1::2])]


def _look(m: Remeasurement) -> tuple[float, float]:
    blocks = block_logs(m)
    return math.exp(statistics.median(blocks)), signed_rank_greater(blocks)


def extra_rounds(threshold: float):
    """The ``more`` callback of :func:`~.remeasure.remeasure`: :data:`EXTRA_ROUNDS` once for an undecided first
    look (p between ALPHA and :data:`EXTEND_BELOW_P`, or below ALPHA with a ratio between half the threshold and it)."""
    def more(m: Remeasurement) -> int:
        if len(m.a) > ROUNDS:
            return 0
        ratio, p = _look(m)
        undecided = ALPHA <= p < EXTEND_BELOW_P or (p < ALPHA and 1 + threshold / 2 < ratio <= 1 + threshold)
        return EXTRA_ROUNDS if undecided and ratio > 1 else 0
    return more


def decide(m: Remeasurement, threshold: float) -> Confirmation:
    """Confirmed or noise, from the paired rounds of ``m`` against the benchmark's ``threshold``."""
    ratio, p = _look(m)
    head = (f"re-measured {m.commit_a[:8]} and {m.commit_b[:8]} in {len(m.a)} rounds of fresh processes sampling "
            f"in turn: x{ratio:.3f}, signed-rank p={p:.2g}")
    if p < ALPHA and ratio > 1 + threshold:
        return Confirmation(Status.CONFIRMED, f"{head}: slower by more than {threshold:.0%}", ratio, p, len(m.a))
    why = (f"not significant (p >= {ALPHA})" if p >= ALPHA
           else f"a difference within the {threshold:.0%} threshold")
    return Confirmation(Status.NOISE, f"{head}: {why}", ratio, p, len(m.a))
