"""Bisecting the commits between a last good and a first bad one, measuring only the flagged benchmark.

:func:`bisect` takes the commits after the last good one, oldest first, the last of them known bad, and a
predicate that measures one commit; it returns the first bad commit and every probe made. The measures
it is given are exact (an instruction count against its threshold, 1 - r, an image hash), so plain
bisection names the right commit whenever the change is a single step.
:func:`cost_is_bad` / :func:`parity_is_bad` / :func:`hash_is_bad` are the predicates per kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

COST_THRESHOLD = 0.02  # the instruction-count threshold of the history and the gate (2 %)


@dataclass
class Bisection:
    first_bad: str
    probes: list[dict] = field(default_factory=list)  # {"commit", "value", "bad"} in probe order

    @property
    def steps(self) -> int:
        return len(self.probes)


def bisect(commits: list[str], measure: Callable[[str], object], is_bad: Callable[[object], bool]) -> Bisection:
    """The first bad commit of ``commits`` (oldest first; the last is known bad and not measured again).

    ``measure(commit)`` gives a value, ``is_bad(value)`` judges it. Assumes one step from good to bad.
    """
    if not commits:
        raise ValueError("no commits to bisect")
    lo, hi = -1, len(commits) - 1
    probes = []
    while hi - lo > 1:
        mid = (lo + hi) // 2
        value = measure(commits[mid])
        bad = bool(is_bad(value))
        probes.append({"commit": commits[mid], "value": value, "bad": bad})
        if bad:
            hi = mid
        else:
            lo = mid
    return Bisection(commits[hi], probes)


def cost_is_bad(good: float, threshold: float = COST_THRESHOLD) -> Callable[[float], bool]:
    """An instruction count is bad above the last good one by more than ``threshold``."""
    return lambda value: value > good * (1 + threshold)


def parity_is_bad(good: float) -> Callable[[float], bool]:
    """1 - r is exact: any rise over the last good value is bad."""
    return lambda value: value > good


def hash_is_bad(good: str) -> Callable[[str], bool]:
    """An image hash is bad when it differs from the last good one."""
    return lambda value: value != good
