"""Recording a window of a target's history: every commit's cases measured (twins reused), and the commits
where a case turns bad against the commit before it.

Input: a :class:`~.spec.TargetSpec`, its commits (oldest first), the cases, and the rows of an earlier
record of the same target (their commits are not measured again; their reuse keys serve new twins).
Output: a :class:`Window`: the turns of its commits (judged against the history before them, the earlier
record's included), one row per commit (machine, date, subject, each case's :class:`~.outcome.CaseOutcome`,
or why it did not build), the :class:`Turn` s, the counts; its JSON (:meth:`Window.record`) and its table.
Timings are recorded, not judged: one commit's runs alone under a shared load are noise (``bisect
--slower`` times two commits in turns).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from detsim.track.base.git import query
from detsim.track.base.golden import GoldenCase
from detsim.track.target.criteria import Criterion, Kind, Mark
from detsim.track.target.merge import merge_rows
from detsim.track.target.outcome import CaseOutcome
from detsim.track.target.probing import Prober
from detsim.track.target.render import CaseRender
from detsim.track.target.spec import TargetSpec

JUDGED = (Kind.BROKEN, Kind.PARITY, Kind.CHANGED)  # in this order: the first that turns names the change (last)


@dataclass(frozen=True)
class Turn:
    """A case that turns bad at ``commit`` against the commit recorded before it."""

    kind: Kind
    case: str
    commit: str
    previous: str | None  # None: a render that is not reproduced needs no previous commit
    why: str

    def record(self) -> dict:
        return {"kind": self.kind.value, "case": self.case, "commit": self.commit, "previous": self.previous,
                "why": self.why}


@dataclass
class Window:
    target: str
    rows: list[dict] = field(default_factory=list)  # oldest first (:func:`_row`)
    turns: list[Turn] = field(default_factory=list)
    builds: int = 0
    renders: int = 0
    reused: int = 0
    already: int = 0  # commits taken from the earlier record

    def record(self) -> dict:
        return {"report": "record", "target": self.target, "rows": self.rows,
                "turns": [t.record() for t in self.turns], "builds": self.builds, "renders": self.renders,
                "reused": self.reused, "already_recorded": self.already,
                "unbuilt": [r["commit"] for r in self.rows if r["build_error"]]}

    def table(self) -> list[str]:
        """commit, date, cases rendered, cases at parity, min r, seconds: a line per measured commit or commit
        where a case turns; a run of other commits that took another's results is one line."""
        lines = [f"{'commit':<10} {'date':<10} {'rendered':>8} {'parity':>6} {'min r':>12} {'seconds':>8}  note"]
        turned = {t.commit for t in self.turns}
        quiet: list[dict] = []
        for row in self.rows:
            if row["reused_from"] and row["commit"] not in turned:
                if quiet and quiet[-1]["reused_from"] != row["reused_from"]:
                    lines.append(_reused_line(quiet))
                    quiet = []
                quiet.append(row)
                continue
            if quiet:
                lines.append(_reused_line(quiet))
                quiet = []
            lines.append(self._line(row))
        if quiet:
            lines.append(_reused_line(quiet))
        return lines

    def _line(self, row: Mapping) -> str:
        outcomes = [CaseOutcome.from_record(o) for o in row["cases"].values()]
        images = [o for o in outcomes if not o.status.is_failure]
        rs = [o.r for o in images if o.r is not None]
        seconds = sum(o.seconds for o in images if o.seconds is not None)
        note = (f"does not build: {row['build_error']}" if row["build_error"]
                else f"reused from {row['reused_from'][:8]} ({row['reused_by']})" if row["reused_from"] else "")
        note += "".join(f"; {t.kind.value} {t.case}" for t in self.turns if t.commit == row["commit"])
        return (f"{row['commit'][:10]:<10} {row['date'][:10]:<10} {len(images):>5}/{len(outcomes):<2} "
                f"{sum(o.at_parity for o in outcomes):>6} {min(rs) if rs else float('nan'):>12.8f} "
                f"{seconds:>8.1f}  {note.lstrip('; ')}")


def _reused_line(rows: Sequence[Mapping]) -> str:
    first, last = rows[0], rows[-1]
    span = first["commit"][:8] + ("" if len(rows) == 1 else f"..{last['commit'][:8]}")
    return (f"{'':10} {'':10} {len(rows)} commit(s) {span}: the results of {first['reused_from'][:8]} "
            f"(same {first['reused_by']})")


def turns(rows: Sequence[Mapping]) -> list[Turn]:
    """Where each case turns bad along ``rows``: wherever a second process does not reproduce its image, and
    against the last commit before that rendered it reproducibly (BROKEN, PARITY, CHANGED: the first that
    turns; an image that does not reproduce has no hash to compare, and is no commit to compare with)."""
    found: list[Turn] = []
    last: dict[str, tuple[str, CaseOutcome]] = {}  # case -> the latest commit and outcome that built
    for row in rows:
        for case, rec in row["cases"].items():
            now = CaseOutcome.from_record(rec)
            steady = now.reproduced is not False
            if not steady:
                found.append(Turn(Kind.IRREPRODUCIBLE, case, row["commit"], None,
                                  f"hashes {', '.join(h[:12] for h in now.hashes)}"))
            if case in last:
                previous, before = last[case]
                for kind in JUDGED if steady else JUDGED[:-1]:
                    criterion = Criterion(kind, case)
                    if criterion.unusable_good(before) is None:
                        judged = criterion.judge(before, now)
                        if judged.mark is Mark.BAD:
                            found.append(Turn(kind, case, row["commit"], previous, judged.why))
                            break
            if steady:
                last[case] = (row["commit"], now)
    return found
