"""The one bisection of the suite: the first bad commit of an ordered list, by a probe that judges one commit.

Input: commits oldest first, ``commits[0]`` good and ``commits[-1]`` bad (the caller has judged both ends), a
``probe`` that measures one commit and ``is_bad``, which reads its answer as bad (True), good (False) or not
judgeable (None: it does not build, it cannot be measured; such a commit is stepped around). The commit probed is
the open one nearest the middle of what is left (the lower of two), so N commits take about log2(N) probes, plus
one per commit that cannot be judged. Output: :class:`FirstBad`, with every step in probe order; ``len(steps)`` is
how many commits were measured (each a build, for a command that builds them). Used by ``detsim-track explain``
(measures of one commit are exact) and ``detsim-track bisect`` (a criterion on one golden case). Standard library
only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class Step:
    """One probe: the commit, its index in the commits bisected (0: the good end), the probe's answer and how
    it was read (None: not judgeable, stepped around)."""

    commit: str
    position: int
    answer: object
    bad: bool | None


@dataclass(frozen=True)
class FirstBad:
    last_good: str
    first_bad: str
    steps: tuple[Step, ...]  # in probe order; their number is how many commits were measured
    candidates: tuple[str, ...]  # the commits the first bad one is among: (first_bad,) unless skips hid it

    @property
    def exact(self) -> bool:
        return len(self.candidates) == 1


def bisect(commits: Sequence[str], probe: Callable[[str], object],
           is_bad: Callable[[object], bool | None] | None = None,
           on_step: Callable[[Step, int], None] | None = None) -> FirstBad:
    """The first bad commit of ``commits`` (see the module docstring); ``on_step(step, left)`` is told each probe
    and how many commits are still in question; without ``is_bad`` the probe's answer is the reading."""
    if len(commits) < 2:
        raise ValueError("bisecting needs a good and a bad commit")
    lo, hi = 0, len(commits) - 1
    skipped: set[int] = set()
    steps = []
    while True:
        open_ = [i for i in range(lo + 1, hi) if i not in skipped]
        if not open_:
            break
        middle = (lo + hi) / 2
        i = min(open_, key=lambda k: (abs(k - middle), k))
        answer = probe(commits[i])
        bad = answer if is_bad is None else is_bad(answer)
        step = Step(commits[i], i, answer, None if bad is None else bool(bad))
        steps.append(step)
        if step.bad is None:
            skipped.add(i)
        elif step.bad:
            hi = i
        else:
            lo = i
        if on_step is not None:
            on_step(step, hi - lo - 1 - sum(lo < k < hi for k in skipped))
    return FirstBad(commits[lo], commits[hi], tuple(steps), tuple(commits[lo + 1:hi + 1]))
