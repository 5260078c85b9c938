"""The verdict on a project's stored history: what regressed at the latest recorded commit.

:func:`analyse` reads what was recorded (:mod:`.asvresults`), builds the series (:mod:`.series`) and
judges the latest point of each (:mod:`.detection`) into a :class:`Report`: the findings (sorted by
family, benchmark, parameters), the series not measured at the latest commit (failed there), how many
were skipped there, whether the latest commit built at all, notes, and the exit code:
:attr:`~detsim.track.base.exitcodes.ExitCode.UNMEASURED` when something failed or nothing was measured
(it wins), REGRESSED for a finding, else OK. :meth:`Report.as_json` is the ``--json`` form.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from detsim.track.base.exitcodes import ExitCode
from detsim.track.base.output import utc_stamp
from detsim.track.history.asvresults import load_recorded
from detsim.track.history.detection import Finding, detect
from detsim.track.history.jsonc import ResultsError
from detsim.track.history.ordering import checkout_head, first_commit_cut, resolve_first_commits, subjects
from detsim.track.history.series import FAMILY_ORDER, Series, build_series


@dataclass(frozen=True)
class Report:
    generated_at: str  # UTC stamp
    machine: str
    envs: tuple[str, ...]
    commits: tuple[str, ...]  # recorded commits, oldest first
    latest: str
    subjects: Mapping[str, str]  # commit -> subject line
    regressions: tuple[Finding, ...]
    unmeasured: tuple[str, ...]  # labels of the series that failed at the latest commit
    skipped: int  # series skipped at the latest commit
    built: bool  # whether anything was measured at the latest commit
    notes: tuple[str, ...]
    exit: ExitCode

    def as_json(self) -> dict:
        return {
            "generated_at": self.generated_at, "machine": self.machine, "envs": list(self.envs),
            "commits": list(self.commits), "latest": self.latest, "subjects": dict(self.subjects),
            "regressions": [f.record() for f in self.regressions], "unmeasured": list(self.unmeasured),
            "skipped": self.skipped, "built": self.built, "notes": list(self.notes), "exit": int(self.exit),
        }


def machine_references(series: list[Series]) -> dict[str, float]:
    """Commit -> the machine reference's seconds there (to correct timings for load)."""
    return {p.commit: p.value for s in series if s.family == "reference" and s.unit == "seconds"
            for p in s.points if p.measured}


def judge(series: list[Series], latest: str, conf: Mapping, baseline: Mapping,
          hashes: Mapping[str, dict]) -> tuple[list[Finding], list[str], int]:
    """The findings, the labels not measured at ``latest`` (failed) and the count skipped there."""
    references = machine_references(series)
    regressions, unmeasured, skipped = [], [], 0
    for s in series:
        at_latest = [p for p in s.points if p.commit == latest]
        if at_latest and at_latest[-1].value is None:
            unmeasured.append(s.label)
            continue
        if at_latest and not at_latest[-1].measured:
            skipped += 1
            continue
        start = first_commit_cut(conf, s.name, s.family, [p.commit for p in s.points])
        if start is None or not at_latest:
            continue
        finding = detect(s, start, references, baseline.get("cases", {}), hashes)
        if finding is not None:
            regressions.append(finding)
    regressions.sort(key=lambda f: (FAMILY_ORDER.index(f.series.family), f.series.name, f.series.params))
    return regressions, unmeasured, skipped


def determinism_note(series: list[Series], latest: str, hashes: Mapping[str, dict],
                     baseline: Mapping) -> str | None:
    """Why the image hashes were not compared at ``latest`` (the baseline holds for another machine)."""
    det = [s for s in series if s.family == "determinism"]
    if not det or not baseline:
        return None
    skipped = [s for s in det if any(p.commit == latest and p.value is not None and not p.measured for p in s.points)]
    here = (hashes.get(latest) or {}).get("holds_for")
    if not (skipped and here and here != baseline.get("holds_for")):
        return None
    stored = baseline.get("holds_for", {})
    differing = sorted(k for k in here if stored.get(k) != here[k])
    return ("image hashes not compared: the baseline holds for "
            + ", ".join(f"{k}={baseline['holds_for'].get(k)}" for k in differing)
            + ", this machine has " + ", ".join(f"{k}={here[k]}" for k in differing)
            + " (refresh it here with `detsim-track baselines --refresh`)")


def analyse(root: Path, machine: str | None = None) -> Report:
    """The report (raises :class:`~.jsonc.ResultsError` on unusable stored files)."""
    recorded = load_recorded(root, machine)
    files = recorded.files
    series = build_series(files, recorded.benchmarks, recorded.config)
    order = list(dict.fromkeys(f["commit_hash"] for f in files))
    latest = order[-1]
    required = checkout_head(root)
    if required and required != latest:
        raise ResultsError(f"HEAD {required[:8]} was not measured: {root} has no results for it on machine "
                           f"{recorded.machine} (the latest recorded commit is {latest[:8]}); record it first (`make run`, or `asv run --record-samples HEAD^!`)")
    conf = {**recorded.config,
            "regressions_first_commits": resolve_first_commits(root, recorded.config, order)}
    regressions, unmeasured, skipped = judge(series, latest, conf, recorded.baseline, recorded.hashes)
    notes = list(recorded.notes)
    note = determinism_note(series, latest, recorded.hashes, recorded.baseline)
    if note:
        notes.append(note)
    built = any(p.value is not None for s in series for p in s.points if p.commit == latest)
    if not built:
        notes.append(f"commit {latest[:8]} did not build or its suite did not import: nothing was measured")
    if required is None:
        notes.append(f"{root.name} is not a git checkout of its own: judged the latest recorded commit, not a HEAD")
    code = ExitCode.UNMEASURED if unmeasured or not built else ExitCode.REGRESSED if regressions else ExitCode.OK
    return Report(
        generated_at=utc_stamp(), machine=recorded.machine, envs=tuple(sorted({f["env_name"] for f in files})),
        commits=tuple(order), latest=latest, subjects=subjects(root, order), regressions=tuple(regressions),
        unmeasured=tuple(unmeasured), skipped=skipped, built=built, notes=tuple(notes), exit=code,
    )
