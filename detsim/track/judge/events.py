"""A history as a list of events: for every series, each commit where its family's rule fires, with the values on
both sides (:func:`history_events`).

The rule is the one the verdict judges the latest commit by (:class:`~.analysis.Rule`, docs/tracking.md), applied
at every commit of the series' history as if it were the latest, from the first commit the verdict would judge;
an event is a change of what it finds there against the series' last settled state: a finding appearing (a step:
regressed, changed, irreproducible; a timing step as the history shows it, a suspect, never re-measured here), a
new step while one holds, a finding gone (fixed: back within the rule), a commit where the series failed
(broken), and the first measured one after (fixed). A series bad from its first judged commit has no step into
that state; its recovery is still an event.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

from detsim.track.base.output import json_number
from detsim.track.judge.detection import checkpoints
from detsim.track.judge.finding import CHANGED, CONFIRMATION_LABELS, NONDETERMINISTIC, Confirmation, Finding
from detsim.track.judge.family import FAMILY_ORDER
from detsim.track.judge.series import Series

NOISE = CONFIRMATION_LABELS[Confirmation.NOISE]  # a step the history itself explains as noise: no event


class EventStep(str, enum.Enum):
    """What happened to a series at an event's commit (its value is what ``verdict.json`` stores)."""

    def __str__(self) -> str:  # as enum.StrEnum (Python 3.11+) does; the project supports 3.10
        return self.value

    REGRESSED = "regressed"  # the value stepped past its family's rule (a timing step: a suspect)
    CHANGED = "changed"  # the image's bits changed
    IRREPRODUCIBLE = "irreproducible"  # runs that should agree bit for bit differ
    BROKEN = "broken"  # the benchmark failed: nothing measured
    FIXED = "fixed"  # back within the rule, or measured again after failing


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
    label: str  # the verdict's word for it: the finding's label (REGRESSED, CHANGED, ..., SUSPECT), FIXED or BROKEN
    detail: Mapping = field(default_factory=dict)  # an image change's sha256 on both sides

    def record(self) -> dict:
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


def series_events(series: Series, start: int, finding_at: Callable[[Series, int], Finding | None],
                  checked: Sequence[int] | None = None) -> list[HistoryEvent]:
    """The events of one series from its point ``start`` on; ``finding_at(prefix, start)`` is the rule's finding
    at the latest point of ``prefix`` (the series up to one commit), asked at the points ``checked`` (default:
    every measured one; :func:`~.detection.checkpoints`). A recovery is dated at the first measured point after
    the last one checked that still held the finding."""
    events: list[HistoryEvent] = []
    held: Finding | None = None  # the state settled so far: the rule's finding, or None (within the rule)
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
        found = _fired(finding_at(replace(series, points=series.points[:i + 1]), start))
        if found is None and held is not None:
            before, first = since_check[0]
            events.append(HistoryEvent(head, EventStep.FIXED, first.commit, before.commit if before else None,
                                before.value if before else None, first.value, "FIXED"))
        elif found is not None and found.last_good is not None and (
                held is None or (found.first_bad, found.label) != (held.first_bad, held.label)):
            events.append(_step(head, found))
        held, since_check = found, []
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
