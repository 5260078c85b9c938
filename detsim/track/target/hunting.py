"""Hunting the first bad commit of a target: each probed commit measured and judged, the bisection driven to
its end, and where the first bad image departs.

Input: a :class:`~.spec.TargetSpec`, a :class:`~.criteria.Criterion`, the golden case it names, GOOD and BAD.
Each probed commit is measured by :class:`Prober` (built in a throwaway venv, or its results reused by
:mod:`.build`'s reuse rule); the suite's one bisection (:mod:`detsim.track.base.bisection`) probes the commits, a
commit that does not build or cannot be judged stepped around. Output: a :class:`Hunt` (JSON:
:meth:`Hunt.to_dict`) with every step, the counts of builds, renders and reused results, the candidates left
when skips hide the exact first bad commit, and for an image criterion where the first bad image departs
(:mod:`.departure`). Progress goes to the ``say`` callback, one line a step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from detsim.track.base.bisection import FirstBad, Step, bisect
from detsim.track.base.git import CommitError, resolve
from detsim.track.base.golden import GoldenCase
from detsim.track.report.sides import SideError, commits_between, subject
from detsim.track.target.build import Builder, Installation, Measured, Reuse
from detsim.track.target.criteria import Criterion, Kind, Mark, Marking
from detsim.track.target.departure import departure
from detsim.track.target.render import CaseRender, render_case
from detsim.track.target.spec import TargetSpec


class Prober:
    """Measures ``cases`` at any commit of ``spec.root``, building each in a throwaway venv under ``scratch``
    and reusing results across commits with the same sources or installed files. With ``in_turns`` the first
    commit measured stays installed and every later render is timed in turns with it."""

    def __init__(self, spec: TargetSpec, cases: Sequence[GoldenCase], runs: int, scratch: Path,
                 in_turns: bool = False):
        self.spec, self.cases, self.runs, self.in_turns = spec, list(cases), runs, in_turns
        self.baseline: Path | None = None  # the first commit's command folder, kept installed when in_turns
        self.builder = Builder(spec, scratch)
        self.reuse: Reuse[Mapping[str, CaseRender]] = Reuse()
        self.renders = 0

    def at(self, commit: str) -> Measured:
        return self.reuse.measure(self.builder, commit, self._render, done=self._done)

    def _render(self, installed: Installation) -> dict[str, CaseRender]:
        rendered = {case.id: render_case(self.spec, case, installed.bin_dir, runs=self.runs, baseline=self.baseline)
                    for case in self.cases}
        self.renders += sum(r.runs for r in rendered.values())
        return rendered

    def _done(self, installed: Installation) -> None:
        if self.in_turns and self.baseline is None:
            self.baseline = installed.bin_dir
        else:
            self.builder.discard(installed)


class HuntError(RuntimeError):
    """The hunt cannot start: an end that does not build, a good end that cannot anchor the criterion, commits
    that are not in line (one line)."""


@dataclass
class Hunt:
    criterion: Criterion
    good: str
    bad: str
    commits: int  # GOOD..BAD, both ends included
    steps: list[dict] = field(default_factory=list)  # every probe, ends included, in order
    bisection: FirstBad | None = None  # None: BAD is not bad
    builds: int = 0
    renders: int = 0
    reused: int = 0
    departure: dict | None = None  # where the first bad image departs (image criteria)
    first_bad_subject: str = ""

    @property
    def build_bound(self) -> int:
        """The most builds a hunt over this many commits should take: ~log2(N) + 3."""
        return math.ceil(math.log2(max(self.commits, 2))) + 3

    def to_dict(self) -> dict:
        b = self.bisection
        return {"report": "bisect", "criterion": {"kind": self.criterion.kind.value, "case": self.criterion.case,
                                                  "factor": self.criterion.factor, "percent": self.criterion.percent,
                                                  "says": self.criterion.describe()},
                "good": self.good, "bad": self.bad, "commits": self.commits, "steps": self.steps,
                "found": b is not None, "last_good": b and b.last_good, "first_bad": b and b.first_bad,
                "first_bad_subject": self.first_bad_subject, "exact": b is not None and b.exact,
                "candidates": list(b.candidates) if b else [], "builds": self.builds, "renders": self.renders,
                "reused": self.reused, "build_bound": self.build_bound, "departure": self.departure}


def hunt(spec: TargetSpec, criterion: Criterion, case: GoldenCase, good: str, bad: str, scratch: Path,
         say: Callable[[str], None] = lambda line: None) -> Hunt:
    """The first commit after ``good`` up to ``bad`` where ``criterion`` turns (see the module docstring)."""
    try:
        between = commits_between(spec.root, good, bad)
        commits = [resolve(spec.root, good), *between]
    except (SideError, CommitError) as exc:
        raise HuntError(str(exc)) from None
    prober = Prober(spec, [case], criterion.runs, scratch, in_turns=criterion.kind is Kind.SLOWER)
    probes: dict[str, Measured] = {}  # commit -> its measurement, every commit probed

    def at(commit: str) -> Measured:
        probes[commit] = prober.at(commit)
        return probes[commit]

    result = Hunt(criterion, commits[0], commits[-1], len(commits))
    say(f"{len(commits)} commits from {commits[0][:8]} (good) to {commits[-1][:8]} (bad); bad when "
        f"{criterion.describe()}")
    anchor = _end(at(commits[0]), "GOOD", result, say)
    why = criterion.unusable_good(_one(anchor).outcome)
    if why:
        raise HuntError(f"GOOD {commits[0][:8]} cannot anchor the criterion: {why}")
    good_outcome = _one(anchor).outcome
    last = _end(at(commits[-1]), "BAD", result, say)
    judged = criterion.judge(good_outcome, _one(last).outcome)
    _log(result, say, last, judged, "BAD", len(commits) - 2)
    if judged.mark is Mark.SKIP:
        raise HuntError(f"BAD {commits[-1][:8]} cannot be judged by this criterion ({judged.why}); "
                        "--broken finds where a case stops rendering")
    if judged.mark is not Mark.BAD:
        _count(result, prober)
        say(f"BAD {commits[-1][:8]} is not bad by this criterion ({judged.why}): nothing to bisect")
        return result

    def judge(commit: str) -> Marking:  # a commit that does not build is stepped around
        probe = at(commit)
        if probe.results is None:
            return Marking(Mark.SKIP, f"does not build: {probe.build_error}")
        return criterion.judge(good_outcome, _one(probe).outcome)

    def on_step(step: Step, left: int) -> None:
        _log(result, say, probes[step.commit], step.answer, f"step {len(result.steps) - 1}", left)

    result.bisection = bisect(commits, judge, lambda judged: {Mark.BAD: True, Mark.GOOD: False}.get(judged.mark),
                              on_step)
    _count(result, prober)
    result.first_bad_subject = subject(spec.root, result.bisection.first_bad)
    if criterion.kind in (Kind.PARITY, Kind.CHANGED):
        result.departure = _departure(criterion, probes, result.bisection)
    return result


def _one(probe: Measured):
    """The rendering of a hunt's one case at a built commit."""
    return next(iter(probe.results.values()))


def _end(probe: Measured, name: str, result: Hunt, say) -> Measured:
    if probe.results is None:
        raise HuntError(f"{name} {probe.commit[:8]} does not build: {probe.build_error}")
    if name == "GOOD":
        _log(result, say, probe, Marking(Mark.GOOD, _one(probe).outcome.summary()), name, None)
    return probe


def _log(result: Hunt, say, probe: Measured, judged: Marking, label: str, left: int | None) -> None:
    how = (f"same {probe.reused_by} as {probe.reused_from[:8]}, result reused" if probe.reused_from
           else "not built" if probe.results is None else f"built in {probe.build_s:.1f} s, rendered")
    tail = "" if left is None else f"; {left} commit(s) in question"
    say(f"[{label}] {probe.commit[:8]}: {how}: {judged.why} -> {judged.mark.value}{tail}")
    result.steps.append({"label": label, "commit": probe.commit, "mark": judged.mark.value, "why": judged.why,
                         "reused_from": probe.reused_from, "reused_by": probe.reused_by,
                         "build_error": probe.build_error,
                         "outcome": None if probe.results is None else _one(probe).outcome.to_dict()})


def _count(result: Hunt, prober: Prober) -> None:
    result.builds, result.renders, result.reused = prober.reuse.builds, prober.renders, prober.reuse.reused


def _departure(criterion: Criterion, probes: Mapping[str, Measured], bisection: FirstBad) -> dict | None:
    """Where the first bad image departs: from the reference (parity), from the last good image (changed)."""
    bad, good = (_one(probes[c]) if c in probes and probes[c].results is not None else None
                 for c in (bisection.first_bad, bisection.last_good))
    if bad is None or bad.image is None:
        return None
    if criterion.kind is Kind.PARITY:
        return {"against": "reference", **departure(bad.image, bad.reference)}
    if good is None or good.image is None:
        return None
    return {"against": "last good", **departure(bad.image, good.image)}
