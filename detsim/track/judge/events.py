"""A history as a list of events: for every series, each commit where its family's rule fires, with the values on
both sides (:func:`history_events`).

The rule is the one the verdict judges the latest commit by (:class:`~.analysis.Rule`, docs/tracking.md), applied
at every commit of the series' history as if it were the latest, from the first commit the verdict would judge;
an event is a change of what it finds there against the series' last settled state: a finding appearing (a step:
regressed, changed, irreproducible; a timing step as the history shows it, a suspect, never re-measured here), a
new step while one holds, a finding gone (fixed: back within the rule), a commit where the series failed
(broken), and the first measured one after (fixed). A series bad from its first judged commit has no step into
that state; its recovery is still an event.

An improvement is the same rule read backwards (:func:`improvement`): where the series' earlier state would be
flagged against its latest, by its family's threshold (:mod:`.thresholds`), it improved, at the first commit of
the run at the tip that the earlier state is past the rule of (a timing or throughput improvement is a suspect,
as its steps are). Only families whose rule has a direction improve (:data:`IMPROVABLE`); a recovery (fixed) is
not also told as an improvement.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

from detsim.track.base.output import json_number
from detsim.track.judge.detection import checkpoints
from detsim.track.judge.family import Family
from detsim.track.judge.finding import CHANGED, CONFIRMATION_LABELS, NONDETERMINISTIC, Confirmation, Finding
from detsim.track.judge.family import FAMILY_ORDER
from detsim.track.judge.series import Series

IMPROVABLE = (Family.TIMING, Family.THROUGHPUT, Family.PEAK_MEMORY, Family.COUNTED_COST, Family.OTHER_TRACK,
              Family.PARITY)  # the families whose rule has a direction (lower, or throughput higher, is better)

NOISE = CONFIRMATION_LABELS[Confirmation.NOISE]  # a step the history itself explains as noise: no event
IMPROVED = "IMPROVED"  # an improvement's label (a timing or throughput one keeps its confirmation's: SUSPECT)


class EventStep(str, enum.Enum):
    """What happened to a series at an event's commit (its value is what ``verdict.json`` stores)."""

    def __str__(self) -> str:  # as enum.StrEnum (Python 3.11+) does; the project supports 3.10
        return self.value

    REGRESSED = "regressed"  # the value stepped past its family's rule (a timing step: a suspect)
    IMPROVED = "improved"  # the value stepped past its family's rule the other way (a timing step: a suspect)
    CHANGED = "changed"  # the image's bits changed
    IRREPRODUCIBLE = "irreproducible"  # runs that should agree bit for bit differ
    BROKEN = "broken"  # the benchmark failed: nothing measured
    FIXED = "fixed"  # back within the rule, or measured again after failing


FLAGGING = (EventStep.REGRESSED, EventStep.CHANGED, EventStep.IRREPRODUCIBLE, EventStep.BROKEN)  # the others mend

# a flagged finding's label -> its step; any other flagged label: REGRESSED
STEP_OF_LABEL = {CHANGED: EventStep.CHANGED, NONDETERMINISTIC: EventStep.IRREPRODUCIBLE}
SHA_KEYS = ("old_sha256", "new_sha256")  # an image change's values on both sides


@dataclass(frozen=True)
class HistoryEvent:
    series: Series
    step: EventStep
    commit: str  # the first commit of the new state
    before: str | None  # the last commit of the state before it (None: none recorded)
    old: float | None  # the value on each side (None: not measured)
    new: float | None
    label: str  # the verdict's word for it: the finding's label (REGRESSED, CHANGED, ..., SUSPECT), IMPROVED (a
    # timing's: SUSPECT), FIXED or BROKEN
    detail: Mapping = field(default_factory=dict)  # an image change's sha256 on both sides

    def to_dict(self) -> dict:
        """The event as ``verdict.json`` stores it."""
        s = self.series
        record = {"step": self.step.value, "label": self.label, "commit": self.commit, "before": self.before,
                  "family": s.family, "benchmark": s.name, "params": s.params, "env": s.env, "unit": s.unit,
                  "old": None if self.old is None else json_number(self.old),
                  "new": None if self.new is None else json_number(self.new), **self.detail}
        if s.case:
            record["case"] = s.case
        return record


def _fired(finding: Finding | None) -> Finding | None:
    """The finding where the rule fired (a step the history explains as noise did not)."""
    return None if finding is None or finding.label == NOISE else finding


def _step(series: Series, finding: Finding) -> HistoryEvent:
    step = STEP_OF_LABEL.get(finding.label, EventStep.REGRESSED)
    return HistoryEvent(series, step, finding.first_bad, finding.last_good,
                        finding.old, finding.new, finding.label,
                        {k: finding.detail[k] for k in SHA_KEYS if k in finding.detail})


def improvement(series: Series, start: int, finding_at: Callable[[Series, int], Finding | None]) -> Finding | None:
    """The rule read backwards at the latest point of ``series``, looking from ``start`` on: the finding of its
    measured points in reverse order (the earlier state against the latest), or None where its family has no
    direction or the earlier state is within the rule. Its ``last_good`` is the first commit of the improved run,
    its ``first_bad`` the commit before it, its ``old`` the improved level."""
    if series.family not in IMPROVABLE:
        return None
    points = tuple(p for p in series.points[start:] if p.measured)
    return _fired(finding_at(replace(series, points=points[::-1]), 0)) if len(points) > 1 else None


def _improved(series: Series, found: Finding, value_at: Mapping[str, float]) -> HistoryEvent:
    label = found.label if found.label in CONFIRMATION_LABELS.values() else IMPROVED
    return HistoryEvent(series, EventStep.IMPROVED, found.last_good, found.first_bad, value_at[found.first_bad],
                        found.old, label)


def series_events(series: Series, start: int, finding_at: Callable[[Series, int], Finding | None],
                  checked: Sequence[int] | None = None) -> list[HistoryEvent]:
    """The events of one series from its point ``start`` on; ``finding_at(prefix, start)`` is the rule's finding
    at the latest point of ``prefix`` (the series up to one commit), asked at the points ``checked`` (default:
    every measured one; :func:`~.detection.checkpoints`). A recovery is dated at the first measured point after
    the last one checked that still held the finding."""
    events: list[HistoryEvent] = []
    held: Finding | None = None  # the state settled so far: the rule's finding, or None (within the rule)
    better: Finding | None = None  # the improvement settled so far (:func:`improvement`), or None
    value_at = {p.commit: p.value for p in series.points if p.measured}
    last = None  # the last measured point
    since_check: list = []  # the measured points after the last one checked (oldest first)
    broken = False
    checked = set(range(len(series.points)) if checked is None else checked)
    head = replace(series, points=())
    for i in range(start, len(series.points)):
        point = series.points[i]
        if point.value is None:  # failed: nothing measured
            if not broken and last is not None:
                events.append(HistoryEvent(head, EventStep.BROKEN, point.commit, last.commit, last.value, None,
                                           "BROKEN"))
            broken = True
            continue
        if not point.measured:  # skipped: the state holds
            continue
        if broken and last is not None:
            events.append(HistoryEvent(head, EventStep.FIXED, point.commit, None, None, point.value, "FIXED"))
        broken = False
        since_check.append((last, point))
        last = point
        if i not in checked:
            continue
        prefix = replace(series, points=series.points[:i + 1])
        found = _fired(finding_at(prefix, start))
        improved = improvement(prefix, start, finding_at)
        fixed = found is None and held is not None
        if fixed:
            before, first = since_check[0]
            events.append(HistoryEvent(head, EventStep.FIXED, first.commit, before.commit if before else None,
                                before.value if before else None, first.value, "FIXED"))
        elif found is not None and found.last_good is not None and (
                held is None or (found.first_bad, found.label) != (held.first_bad, held.label)):
            events.append(_step(head, found))
        if not fixed and improved is not None and improved.last_good is not None and (
                better is None or (improved.last_good, improved.label) != (better.last_good, better.label)):
            events.append(_improved(head, improved, value_at))
        held, better, since_check = found, improved, []
    return events


def history_events(series: list[Series], order: list[str], start_of: Callable[[Series], int | None],
                   finding_at: Callable[[Series, int], Finding | None]) -> list[HistoryEvent]:
    """Every series' events (``start_of``: its first point to judge, None: not judged), the rule asked where it
    can change its answer (:func:`~.detection.checkpoints`), in commit order (``order``, oldest first), then by
    family, benchmark and parameters."""
    position = {commit: i for i, commit in enumerate(order)}
    events = []
    for s in series:
        start = start_of(s)
        if start is not None:
            events += series_events(s, start, finding_at, checkpoints(s, start))
    return sorted(events, key=lambda e: (position.get(e.commit, len(order)), FAMILY_ORDER.index(e.series.family),
                                         e.series.name, e.series.params))
