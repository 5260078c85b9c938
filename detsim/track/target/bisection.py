"""FirstBad over a list of commits whose ends are judged: good at the first, bad at the last.

Input: the commits (oldest first) and a probe that judges one commit good, bad or skip (it does not build,
or cannot be judged). Output: a :class:`FirstBad`: the last good and first bad commit, every step, and the
candidates left when skipped commits hide the exact one. Probes go nearest the middle of what is left, so
a history of N commits takes about log2(N) probes, plus one per skipped commit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from detsim.track.target.criteria import Marking, Mark


@dataclass(frozen=True)
class Step:
    commit: str
    position: int  # its index in the commits bisected (0: the good end)
    judgement: Marking


@dataclass(frozen=True)
class FirstBad:
    last_good: str
    first_bad: str
    steps: tuple[Step, ...]
    candidates: tuple[str, ...]  # the commits the first bad one is among: (first_bad,) unless skips hid it

    @property
    def exact(self) -> bool:
        return len(self.candidates) == 1


def bisect(commits: Sequence[str], probe: Callable[[str], Marking],
           on_step: Callable[[Step, int], None] | None = None) -> FirstBad:
    """The first bad commit of ``commits``: ``commits[0]`` is good and ``commits[-1]`` bad, both already
    judged; ``on_step(step, left)`` is told each probe and how many commits are still in question."""
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
        judgement = probe(commits[i])
        step = Step(commits[i], i, judgement)
        steps.append(step)
        if judgement.mark is Mark.BAD:
            hi = i
        elif judgement.mark is Mark.GOOD:
            lo = i
        else:
            skipped.add(i)
        if on_step is not None:
            on_step(step, hi - lo - 1 - sum(lo < k < hi for k in skipped))
    return FirstBad(commits[lo], commits[hi], tuple(steps), tuple(commits[lo + 1:hi + 1]))
