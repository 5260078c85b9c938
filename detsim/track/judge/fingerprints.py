"""Per commit and golden case: is the image the same as at the previous recorded commit?

The one place the page reads image fingerprints from: the sha256 of ``results/hashes/<commit>.json`` (and
its ``holds_for``), else asv's fingerprint tracks (with ``track_machine_class`` standing for ``holds_for``),
else the 0/1 baseline tracks. Each commit is compared with the closest earlier one that has something to
compare: two sha256 of one machine class, or two 0/1 values (1 and 1 are not comparable: both differ from
the baseline, perhaps differently); anything else is not comparable, with the reason. Where the images of a
commit do not reproduce (``bench_reproducibility``), a case found so there, and any case whose image changed
there, is not reproducible: its change may be chance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from detsim.track.base.golden import EAGER_AXES
from detsim.track.judge.family import Family
from detsim.track.judge.series import Series
from detsim.track.judge.benchmarks import param_values

SAME, CHANGED, NOT_REPRODUCIBLE, NOT_COMPARABLE = "same", "changed", "not reproducible", "not comparable"


@dataclass(frozen=True)
class State:
    commit: str
    state: str  # SAME, CHANGED, NOT_REPRODUCIBLE or NOT_COMPARABLE
    why: str  # one short phrase for the tooltip


def _class(record: Mapping | None) -> str | None:
    holds = (record or {}).get("holds_for")
    return repr(sorted(holds.items())) if isinstance(holds, dict) else None


def compare_case(case: str, commits: Sequence[str], hashes: Mapping[str, Mapping],
                 track: Mapping[str, float | None]) -> list[State]:
    """The states of ``case`` at every commit of ``commits`` (oldest first), from the hash records
    (commit -> record) and the 0/1 track values (commit -> value; None failed, NaN skipped)."""
    states = []
    seen_sha: dict[str, tuple[str, str]] = {}  # machine class -> (commit, sha256) last recorded
    last_track: tuple[str, float] | None = None
    for commit in commits:
        record = hashes.get(commit)
        sha = ((record or {}).get("cases", {}).get(case) or {}).get("sha256")
        cls = _class(record)
        value = track.get(commit)
        measured = value is not None and not math.isnan(value)
        if sha and cls in seen_sha:
            before, old = seen_sha[cls]
            states.append(State(commit, SAME if old == sha else CHANGED,
                                f"{'same image as' if old == sha else 'image differs from'} {before[:8]}"))
        elif measured and last_track is not None and not (value == 1 and last_track[1] == 1):
            before, old = last_track
            states.append(State(commit, SAME if old == value else CHANGED,
                                f"{'same' if old == value else 'changed'} against the baseline as at {before[:8]}"))
        elif sha and seen_sha:
            states.append(State(commit, NOT_COMPARABLE, "recorded on another machine class than the commits before"))
        elif sha or measured:
            why = ("differs from the baseline, as at the commit before" if measured and last_track
                   else "first recorded here")
            states.append(State(commit, NOT_COMPARABLE, why))
        else:
            why = "failed here" if commit in track and value is None else \
                "skipped here (not comparable on this machine)" if commit in track else "no hash recorded"
            states.append(State(commit, NOT_COMPARABLE, why))
        if sha:
            seen_sha[cls] = (commit, sha)
        if measured:
            last_track = (commit, value)
    return states


def irreproducible_cases(series: Sequence[Series]) -> dict[str, dict[str, list[str]]]:
    """Commit -> case -> the eager axes along which its image did not reproduce there."""
    found: dict[str, dict[str, list[str]]] = {}
    for s in series:
        axis = param_values(s.params).get("axis")
        if s.family != Family.RUNS_DIFFER or axis not in EAGER_AXES or not s.case:
            continue
        for p in s.points:
            if p.measured and p.value > 0:
                found.setdefault(p.commit, {}).setdefault(s.case, []).append(axis)
    return found


def mark_irreproducible(case: str, states: list[State], irreproducible: Mapping[str, Mapping[str, list[str]]]
                        ) -> list[State]:
    """``states`` with every commit where ``case`` did not reproduce, or changed while other images there
    did not reproduce, marked :data:`NOT_REPRODUCIBLE`."""
    marked = []
    for s in states:
        here = irreproducible.get(s.commit, {})
        if case in here:
            s = State(s.commit, NOT_REPRODUCIBLE, f"two runs of this input differ ({', '.join(here[case])})")
        elif here and s.state == CHANGED:
            s = State(s.commit, NOT_REPRODUCIBLE, f"changed where the images of {', '.join(sorted(here))} do not "
                                                  "reproduce: the change may be chance")
        marked.append(s)
    return marked


def determinism_states(hashes: Mapping[str, dict], series: Sequence[Series],
                       commits: Sequence[str]) -> dict[str, list[State]]:
    """Golden case -> its :class:`State` at each of ``commits``, from the per-commit hash records (commit ->
    record) and the tracks (see the module)."""
    tracks = {s.case: {p.commit: p.value for p in s.points}
              for s in series if s.family == Family.IMAGE_CHANGED and s.case}
    prints = {s.case: {p.commit: p.value for p in s.points if p.measured}
              for s in series if s.family == Family.IMAGE_FINGERPRINT and s.case}
    classes = {p.commit: p.value for s in series if s.family == Family.MACHINE_CLASS for p in s.points if p.measured}
    irreproducible = irreproducible_cases(series)
    cases = set(tracks) | set(prints) | {c for commit in commits for c in (hashes.get(commit) or {}).get("cases", {})}
    states = {}
    for case in sorted(cases):
        records = dict(hashes)
        for commit, value in prints.get(case, {}).items():
            if case not in (hashes.get(commit) or {}).get("cases", {}):
                records[commit] = {"cases": {case: {"sha256": f"fingerprint {value!r}"}},
                                   "holds_for": {"machine class": classes.get(commit)}}
        states[case] = mark_irreproducible(case, compare_case(case, commits, records, tracks.get(case, {})),
                                           irreproducible)
    return states
