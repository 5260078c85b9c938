"""A recorded window of a target's history, as the recorder accounts for it: its rows (one per commit, oldest
first), the :class:`Turn` s where a case turns bad (by :mod:`~detsim.track.target.criteria`), its table, and the
rows of slices recorded on several machines as one history (:func:`merge_rows`)."""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from detsim.track.base.git import GitError, git
from detsim.track.target.criteria import Criterion, Kind, Mark
from detsim.track.target.render import CaseOutcome

JUDGED = (Kind.BROKEN, Kind.PARITY, Kind.CHANGED)  # in this order: the first that turns names the change (last)


@dataclass(frozen=True)
class Turn:
    """A case that turns bad at ``commit`` against the commit recorded before it."""

    kind: Kind
    case: str
    commit: str
    previous: str | None  # None: a render that is not reproduced needs no previous commit
    why: str

    def to_dict(self) -> dict:
        return {**asdict(self), "kind": self.kind.value}


@dataclass
class Window:
    target: str
    rows: list[dict] = field(default_factory=list)  # oldest first (:func:`_row`)
    turns: list[Turn] = field(default_factory=list)
    builds: int = 0
    renders: int = 0
    reused: int = 0
    already: int = 0  # commits taken from the earlier record
    where: str = "every measure: here, one commit at a time"  # where the timings and the other measures ran

    def to_dict(self) -> dict:
        return {"report": "record", "target": self.target, "rows": self.rows,
                "turns": [t.to_dict() for t in self.turns], "builds": self.builds, "renders": self.renders,
                "reused": self.reused, "already_recorded": self.already, "where": self.where,
                "unbuilt": [r["commit"] for r in self.rows if r["build_error"]]}

    def table(self) -> list[str]:
        """commit, date, cases rendered, cases at parity, min r, seconds: a line per measured commit or commit
        where a case turns; a run of other commits that took one commit's results is one line."""
        lines = [f"{'commit':<10} {'date':<10} {'rendered':>8} {'parity':>6} {'min r':>12} {'seconds':>8}  note"]
        turned = {t.commit for t in self.turns}
        for twin, rows in itertools.groupby(self.rows, key=lambda row: row["commit"] not in turned
                                            and row["reused_from"]):
            rows = list(rows)
            lines += [_reused_line(rows)] if twin else [self._line(row) for row in rows]
        return lines

    def _line(self, row: Mapping) -> str:
        outcomes = [CaseOutcome.from_record(o) for o in row["cases"].values()]
        images = [o for o in outcomes if not o.status.is_failure]
        rs = [o.r for o in images if o.r is not None]
        seconds = sum(o.seconds for o in images if o.seconds is not None)
        note = how(row) + "".join(f"; {t.kind.value} {t.case}" for t in self.turns if t.commit == row["commit"])
        return (f"{row['commit'][:10]:<10} {row['date'][:10]:<10} {len(images):>5}/{len(outcomes):<2} "
                f"{sum(o.at_parity for o in outcomes):>6} {min(rs) if rs else float('nan'):>12.8f} "
                f"{seconds:>8.1f}  {note.lstrip('; ')}")


def how(row: Mapping) -> str:
    """How a commit that was not measured was recorded: it does not build, or took a twin's results ("")."""
    if row["build_error"]:
        return f"does not build: {row['build_error']}"
    return f"reused from {row['reused_from'][:8]} ({row['reused_by']})" if row["reused_from"] else ""


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


class MergeError(ValueError):
    """Slices that cannot be merged (one line)."""


def merge_rows(root: Path, records: Sequence[Mapping]) -> tuple[list[dict], list[str]]:
    """The rows of ``records`` as one history of ``root`` (see the module docstring)."""
    targets = {rec.get("target") for rec in records}
    if len(targets) != 1:
        raise MergeError(f"the slices are records of different targets: {', '.join(sorted(map(str, targets)))}")
    by_commit: dict[str, dict] = {}
    notes = []
    for rec in records:
        for row in rec["rows"]:
            have = by_commit.setdefault(row["commit"], row)
            if have is row:
                continue
            for case, outcome in row["cases"].items():
                other = have["cases"].get(case)
                if other and other.get("sha256") != outcome.get("sha256"):
                    notes.append(f"{row['commit'][:10]} {case}: image {str(other.get('sha256'))[:12]} on "
                                 f"{have.get('machine')}, {str(outcome.get('sha256'))[:12]} on {row.get('machine')}")
    if not by_commit:
        return [], notes
    try:
        order = git(root, "rev-list", "--reverse", "--topo-order", *by_commit).split()
    except GitError as exc:
        raise MergeError(f"the slices name commits {root} does not have ({exc})") from None
    position = {commit: i for i, commit in enumerate(order)}
    return sorted(by_commit.values(), key=lambda row: position[row["commit"]]), notes
