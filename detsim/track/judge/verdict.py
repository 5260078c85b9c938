"""The verdict: one machine's (:class:`Report`), the machines' together with where they agree
(:class:`Judgement`), and its stored form. ``Judgement.as_json()`` is ``verdict.json``, one shape for one machine
or several (each machine's verdict under ``machines``), kept at ``<reports>/<STAMP>/verdict.json`` (with
``verdict.txt`` and ``verdict.md`` beside it) and ``<reports>/latest``, a link to the folder of the latest verdict,
swapped in atomically once all three are written. Views (``detsim-track publish``, ``explain``) read it back typed
(:func:`read_verdict`: :meth:`Judgement.from_json`) and nothing else of the history's judgement. The verdict is made
by :func:`.analysis.analyse`.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from detsim.track.base.exitcodes import ExitCode, worst
from detsim.track.base.hashing import fingerprint, fingerprint_hex
from detsim.track.judge.events import SHA_KEYS, EventStep, HistoryEvent
from detsim.track.judge.finding import Finding, series_of_record
from detsim.track.judge.family import FAMILY_ORDER, Family
from detsim.track.judge.skips import Skipped


@dataclass(frozen=True)
class Report:
    """One machine's verdict."""

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
    machine_class: float | None = None  # the class fingerprint of the latest commit's renders (None: unrecorded)
    fingerprints: Mapping[str, float] = field(default_factory=dict)  # case -> image fingerprint at the latest
    measured: int = 0  # series measured at the latest commit
    skips: tuple[Skipped, ...] = ()  # the ``skipped`` series by reason
    unbuilt: tuple[str, ...] = ()  # earlier commits that measured nothing (did not build, suite did not import)
    families: Mapping[Family, dict] = field(default_factory=dict)  # family -> measured, failed, skipped at the latest
    history: Mapping[str, object] = field(default_factory=dict)  # what the status page draws (:func:`page_history`)
    target_results: str | None = None  # a target's recording: its project folder (results_files.target_results)
    reused: tuple[str, ...] | None = None  # a target's commits that took a twin's results (None: not known)
    events: tuple[HistoryEvent, ...] = ()  # every series' steps over the recorded history, in commit order (.events)

    def as_json(self) -> dict:
        return {
            "generated_at": self.generated_at, "machine": self.machine, "envs": list(self.envs),
            "commits": list(self.commits), "latest": self.latest, "subjects": dict(self.subjects),
            "regressions": [f.to_dict() for f in self.regressions], "unmeasured": list(self.unmeasured),
            "measured": self.measured, "skipped": self.skipped, "skips": [s.to_dict() for s in self.skips],
            "built": self.built, "notes": list(self.notes), "exit": int(self.exit),
            "machine_class": None if self.machine_class is None else fingerprint_hex(self.machine_class),
            "unbuilt": list(self.unbuilt), "families": dict(self.families), "history": dict(self.history),
            **({"target_results": self.target_results} if self.target_results else {}),
            **({"reused": list(self.reused)} if self.reused is not None else {}),
            "events": [e.to_dict() for e in self.events],
        }

    @classmethod
    def from_json(cls, data: Mapping) -> Report:
        """One machine's verdict as :meth:`as_json` wrote it (KeyError, TypeError or ValueError where it is not)."""
        return cls(
            generated_at=data["generated_at"], machine=data["machine"], envs=tuple(data["envs"]),
            commits=tuple(data["commits"]), latest=data["latest"], subjects=dict(data["subjects"]),
            regressions=tuple(map(Finding.from_record, data["regressions"])), unmeasured=tuple(data["unmeasured"]),
            skipped=data["skipped"], built=data["built"], notes=tuple(data["notes"]), exit=ExitCode(data["exit"]),
            machine_class=None if data["machine_class"] is None else fingerprint(data["machine_class"]),
            measured=data["measured"], skips=tuple(map(Skipped.from_record, data["skips"])),
            unbuilt=tuple(data["unbuilt"]), families={Family(k): v for k, v in data["families"].items()},
            history=dict(data["history"]), target_results=data.get("target_results"),
            reused=tuple(data["reused"]) if "reused" in data else None, events=tuple(map(_event_of, data["events"])))


def _number(value) -> float | None:
    """A value :func:`~detsim.track.base.output.json_number` wrote: a number, its text (``nan``), or None."""
    return float(value) if isinstance(value, str) else value


def _event_of(record: Mapping) -> HistoryEvent:
    """An event as ``HistoryEvent.to_dict`` wrote it."""
    return HistoryEvent(series_of_record(record), EventStep(record["step"]), record["commit"], record["before"],
                        _number(record["old"]), _number(record["new"]), record["label"],
                        {k: record[k] for k in SHA_KEYS if k in record})


def exit_code(findings, unmeasured, built: bool) -> ExitCode:
    """UNMEASURED when something failed or nothing was built (it wins), REGRESSED for a finding that is a
    verdict (not a timing suspect, not noise), else OK."""
    if unmeasured or not built:
        return ExitCode.UNMEASURED
    return ExitCode.REGRESSED if any(f.is_verdict for f in findings) else ExitCode.OK


@dataclass(frozen=True)
class Judgement:
    """The verdicts of the machines judged on one history (one machine: a fleet of one), and where they agree."""

    reports: Mapping[str, Report]  # machine -> its verdict
    failed: Mapping[str, str]  # machine -> why it could not be judged (one line)
    agreement: tuple[str, ...]  # one line per family: which machines agree, which regressed (several machines)
    facts: tuple[str, ...]  # cross-machine facts (machine classes, images of one class that differ)
    exit: ExitCode

    @property
    def single(self) -> Report | None:
        """The verdict of the only machine, where one was judged and no other failed."""
        return next(iter(self.reports.values())) if len(self.reports) == 1 and not self.failed else None

    def as_json(self) -> dict:
        """``verdict.json``: each machine's verdict under ``machines`` (one machine's too), the machines not
        judged, the agreement and the facts (several machines'), and the exit."""
        return {"report": COMMAND, "machines": {m: r.as_json() for m, r in self.reports.items()},
                "not_judged": dict(self.failed), "agreement": list(self.agreement), "facts": list(self.facts),
                "exit": int(self.exit)}

    @classmethod
    def from_json(cls, data: Mapping) -> Judgement:
        """The judgement :meth:`as_json` wrote (KeyError, TypeError or ValueError where it is not one)."""
        return cls(reports={m: Report.from_json(r) for m, r in data["machines"].items()},
                   failed=dict(data["not_judged"]), agreement=tuple(data["agreement"]), facts=tuple(data["facts"]),
                   exit=ExitCode(data["exit"]))


def _both(names: list[str]) -> str:
    return "both machines" if len(names) == 2 else f"all {len(names)} machines"


def agreement_lines(reports: Mapping[str, Report]) -> list[str]:
    """Per family: whether every machine found the same regressions, or which machines found which."""
    machines = sorted(reports)
    found = {m: {} for m in machines}  # machine -> family -> {(benchmark, params)}
    for m, report in reports.items():
        for f in (f for f in report.regressions if f.is_verdict):
            found[m].setdefault(f.series.family, set()).add((f.series.name, f.series.params))
    families = [fam for fam in FAMILY_ORDER if fam in (Family.TIMING, Family.IMAGE_CHANGED)
                or any(fam in found[m] for m in machines)]
    lines = []
    for family in families:
        keys = {m: found[m].get(family, set()) for m in machines}
        regressed = [m for m in machines if keys[m]]
        counts = ", ".join(f"{m} {len(keys[m])}" for m in regressed)
        if not regressed:
            lines.append(f"{family}: {_both(machines)} agree, nothing regressed")
        elif regressed != machines:
            clean = ", ".join(m for m in machines if m not in regressed)
            lines.append(f"{family} regression on {', '.join(regressed)} only ({counts}; nothing on {clean})")
        elif all(keys[m] == keys[machines[0]] for m in machines):
            lines.append(f"{family}: {_both(machines)} agree, {len(keys[machines[0]])} regressed on each")
        else:
            lines.append(f"{family}: regressed on every machine, not in the same benchmarks ({counts})")
    return lines


def fleet_facts(reports: Mapping[str, Report]) -> list[str]:
    """What differs between machines without being a failure: their machine classes, and, within one class
    at one commit, images that differ (a class's images should agree across its machines)."""
    facts = []
    for a, b in itertools.combinations(sorted(reports), 2):
        ra, rb = reports[a], reports[b]
        if ra.machine_class is None or rb.machine_class is None:
            continue
        if ra.machine_class != rb.machine_class:
            facts.append(f"{a} and {b} are different machine classes: their images are not compared with "
                         "each other (a fact, not a failure)")
        elif ra.latest == rb.latest:
            differ = sorted(c for c in set(ra.fingerprints) & set(rb.fingerprints)
                            if ra.fingerprints[c] != rb.fingerprints[c])
            facts.append(f"{a} and {b} share a machine class; at {ra.latest[:8]} "
                         + (f"their images differ in {len(differ)} golden cases ({', '.join(differ[:5])}"
                            f"{', ...' if len(differ) > 5 else ''})" if differ else "their images are identical"))
    return facts


def judgement_of(reports: Mapping[str, Report], failed: Mapping[str, str] | None = None) -> Judgement:
    """The judgement of machines' verdicts (and of those that could not be judged); only several machines
    have an agreement and facts between them."""
    failed = dict(failed or {})
    several = len(reports) + len(failed) > 1
    code = worst(*(r.exit for r in reports.values()), *[ExitCode.UNMEASURED] * bool(failed))
    return Judgement(reports=reports, failed=failed, agreement=tuple(agreement_lines(reports)) if several else (),
                     facts=tuple(fleet_facts(reports)) if several else (), exit=code)


COMMAND = "detsim-track regressions"  # the "report" field of verdict.json
TEXT_FILE, JSON_FILE = "verdict.txt", "verdict.json"  # the full report, in each report folder
MARKDOWN_FILE = "verdict.md"  # beside them: the findings to act on, for CI summaries (detsim.track.report.markdown)
LATEST = "latest"  # the link, in the reports folder, to the latest verdict's folder


class VerdictError(Exception):
    """A verdict that cannot be read or used (one line naming the file)."""


def check_latest(reports: Path) -> None:
    """Refuse (:class:`VerdictError`) before the work when ``reports/latest`` is something other than this
    command's link, which is never replaced."""
    link = reports / LATEST
    if os.path.lexists(link) and not link.is_symlink():
        raise VerdictError(f"{link}: exists and is not the link to the latest verdict; refusing to replace it")


def point_latest(folder: Path) -> None:
    """Make ``folder.parent/latest`` point at ``folder`` (a new link renamed over the old one: atomic)."""
    link = folder.parent / LATEST
    new = folder.parent / f".{LATEST}.{os.getpid()}"
    new.unlink(missing_ok=True)
    os.symlink(folder.name, new)
    try:
        os.replace(new, link)
    except OSError:
        new.unlink(missing_ok=True)
        raise


def latest_file(reports: Path) -> Path:
    """The latest verdict's JSON file under ``reports``."""
    return reports / LATEST / JSON_FILE


def read_verdict(path: Path) -> Judgement:
    """The verdict stored at ``path``, read back typed (:class:`VerdictError`, one line, where it is not one)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise VerdictError(f"{path}: no verdict there (run `{COMMAND}` first)") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise VerdictError(f"{path}: unreadable ({getattr(exc, 'strerror', None) or exc})") from None
    if not isinstance(data, dict) or data.get("report") != COMMAND:
        raise VerdictError(f"{path}: not a verdict of `{COMMAND}`")
    if not isinstance(data.get("machines"), dict) or not data["machines"]:
        raise VerdictError(f"{path}: not a verdict of `{COMMAND}` (no machine's verdict)")
    try:
        return Judgement.from_json(data)
    except KeyError as exc:
        raise VerdictError(f"{path}: not a verdict of `{COMMAND}` (no {exc.args[0]!r})") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise VerdictError(f"{path}: not a verdict of `{COMMAND}` ({exc})") from None
