"""The records of an evidence bundle, as frozen dataclasses: what ``results.json`` holds, and its verdict.

A **status** (of the collection or a device's run) is a :class:`~detsim.track.base.status.Status`: ``ok``
(ran to completion), ``crashed``, ``nothing collected`` or ``not run``. Records of an earlier bundle are read
back with ``from_record()``, which tolerates absent optional keys."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Mapping

from detsim.track.base.exitcodes import ExitCode
from detsim.track.evidence.pytest_runs import FAILING, ProcessResult, warning_key
from detsim.track.base.status import Status

FORMAT = 1  # the version of results.json's layout

Key = tuple[str, str]  # (device, node id): one test on one device


@dataclass(frozen=True)
class Request:
    """One ``detsim-track evidence`` call: what to run, where, and how the bundle is judged."""

    area: str
    selection: tuple[str, ...]  # pytest arguments, passed on unchanged
    devices: tuple[str, ...]  # the devices to run on, resolved
    cwd: Path  # where pytest runs and paths resolve
    asked_devices: tuple[str, ...]  # the --device options as given (empty: the default)
    out_root: Path  # as given (relative to cwd unless absolute)
    timeout: float | None  # seconds per pytest process (None: no limit)
    retime: int  # re-timings of a test that looks slower


@dataclass(frozen=True)
class CollectResult(ProcessResult):
    status: Status
    why: str
    collected: int  # node ids listed
    log: str


@dataclass(frozen=True)
class LoggedWarning:
    """One text of a pytest log's warnings summary and the tests that emitted it."""

    text: str  # category and first line of the message
    location: str | None  # file:line
    tests: tuple[str, ...] = ()

    @classmethod
    def from_record(cls, m: Mapping) -> "LoggedWarning":
        return cls(m["text"], m.get("location"), tuple(m.get("tests", ())))


@dataclass(frozen=True)
class DeviceRun:
    """One device's pytest run; ``exit_code``, ``timed_out`` and ``wall_s`` are None when it did not run."""

    log: str
    junit: str
    counts: Mapping[str, int]  # outcome -> tests, in pytest_runs.OUTCOMES order
    status: Status
    why: str
    warnings: tuple[LoggedWarning, ...] = ()
    rootdir: str | None = None
    exit_code: int | None = None
    wall_s: float | None = None
    timed_out: bool | None = None

    @classmethod
    def from_record(cls, m: Mapping) -> "DeviceRun":
        return cls(log=m.get("log", ""), junit=m.get("junit", ""), counts=dict(m.get("counts", {})),
                   status=Status(m.get("status", Status.NOT_RUN)), why=m.get("why", ""),
                   warnings=tuple(LoggedWarning.from_record(w) for w in m.get("warnings", [])),
                   rootdir=m.get("rootdir"), exit_code=m.get("exit_code"), wall_s=m.get("wall_s"),
                   timed_out=m.get("timed_out"))

    def as_record(self) -> dict:
        record = asdict(self)
        if self.timed_out is None:  # a run that never started has no such key
            del record["timed_out"]
        return record


@dataclass(frozen=True)
class TestResult:
    """One test on one device."""

    __test__ = False  # not a pytest test class

    device: str
    nodeid: str
    outcome: str  # one of pytest_runs.OUTCOMES
    duration_s: float  # wall time, setup to teardown
    skip_reason: str | None = None  # skips and xfails
    message: str | None = None  # first line of a failure or error
    retimed_s: tuple[float, ...] = ()  # re-timings of a test that looked slower
    retime_factors: tuple[float, ...] = ()  # the load factor each re-timing's controls measured

    @property
    def key(self) -> Key:
        return self.device, self.nodeid

    @property
    def failing(self) -> bool:
        return self.outcome in FAILING

    @classmethod
    def from_record(cls, m: Mapping) -> "TestResult":
        return cls(m["device"], m["nodeid"], m.get("outcome"), m.get("duration_s", 0.0), m.get("skip_reason"),
                   m.get("message"), tuple(m.get("retimed_s", ())), tuple(m.get("retime_factors", ())))


@dataclass(frozen=True)
class WarningText:
    """A warning text as compared between bundles, with the devices whose runs logged it."""

    text: str
    location: str | None
    devices: tuple[str, ...]


@dataclass(frozen=True)
class Outcomes:
    """What a bundle measured, as compared with another: its tests and its runs by device."""

    tests: tuple[TestResult, ...]
    runs: Mapping[str, DeviceRun]

    @classmethod
    def from_record(cls, results: Mapping) -> "Outcomes":
        """From a ``results.json``; raises KeyError, TypeError or ValueError when it is not one."""
        return cls(tuple(TestResult.from_record(t) for t in results.get("tests", [])),
                   {d: DeviceRun.from_record(r) for d, r in results.get("runs", {}).items()})

    def outputs(self) -> dict[Key, TestResult]:
        """Its tests by (device, node id), in that order: the named outputs :func:`~detsim.track.compare.outputs.compare_outputs`
        pairs."""
        return dict(sorted({t.key: t for t in self.tests}.items()))

    def status(self, device: str) -> Status:
        run = self.runs.get(device)
        return run.status if run else Status.NOT_RUN

    def warning_texts(self) -> dict[str, WarningText]:
        """The warning texts of every run, keyed by text with memory addresses blanked."""
        found: dict[str, WarningText] = {}
        for device, run in sorted(self.runs.items()):
            for warning in run.warnings:
                key = warning_key(warning.text)
                first = found.get(key, WarningText(warning.text, warning.location, ()))
                found[key] = replace(first, devices=(*first.devices, device))
        return found


@dataclass(frozen=True)
class TestPresence:
    """A test on a device: added or removed since the previous bundle, and the start of every change of one."""

    __test__ = False

    device: str
    nodeid: str


@dataclass(frozen=True)
class NewFailure(TestPresence):
    outcome: str
    message: str | None
    was: str | None  # None: the test did not exist before


@dataclass(frozen=True)
class Fixed(TestPresence):
    now: str
    was: str


@dataclass(frozen=True)
class OutcomeChange(Fixed):
    skip_reason: str | None


@dataclass(frozen=True)
class RunChange:
    device: str
    now: Status
    was: Status


@dataclass(frozen=True)
class DurationMove(TestPresence):
    """A test slower or faster beyond the noise."""

    was_s: float
    now_s: float
    ratio: float  # now / was
    measurements: int  # slower: times now; faster: times before


@dataclass(frozen=True)
class ArtifactChange:
    """A stable artifact whose normalised content changed: its hashes and the differing keys or lines."""

    file: str
    was: str | None
    now: str | None
    detail: tuple[str, ...]


@dataclass(frozen=True)
class BundleChanges:
    """What changed since the previous bundle (docs/evidence.md, "Comparison with the previous bundle"): the
    differences :func:`~detsim.track.compare.outputs.compare_outputs` found (:func:`~.previous.compare`), as the bundle names them."""

    new_failures: tuple[NewFailure, ...] = ()
    fixed: tuple[Fixed, ...] = ()
    outcome_changes: tuple[OutcomeChange, ...] = ()
    added: tuple[TestPresence, ...] = ()
    removed: tuple[TestPresence, ...] = ()
    new_warnings: tuple[WarningText, ...] = ()
    gone_warnings: tuple[WarningText, ...] = ()
    run_changes: tuple[RunChange, ...] = ()
    slower: tuple[DurationMove, ...] = ()  # :func:`~.durations.judge_durations`, these four
    faster: tuple[DurationMove, ...] = ()
    faster_unjudged: int = 0  # faster-looking tests with too few earlier measurements
    load_factors: Mapping[str, float] = field(default_factory=dict)  # device -> median now / before
    previous: str = ""  # the previous bundle's name
    changed_artifacts: tuple[ArtifactChange, ...] = ()
    previous_problems: tuple[str, ...] = ()  # the previous bundle against its sha256.txt

    @property
    def changed(self) -> bool:
        return any((self.new_failures, self.fixed, self.new_warnings, self.slower, self.faster,
                    self.changed_artifacts, self.outcome_changes, self.added, self.removed, self.gone_warnings,
                    self.run_changes))

    def as_record(self) -> dict:
        return {**asdict(self), "changed": self.changed}


@dataclass(frozen=True)
class BundleResults:
    """A whole bundle's results: ``results.json``."""

    request: Request
    stamp: str
    collect: CollectResult
    outcomes: Outcomes  # tests sorted by (device, node id)
    comparison: BundleChanges | None

    @property
    def measured(self) -> bool:
        """At least one device ran to completion."""
        return any(r.status == Status.OK for r in self.outcomes.runs.values())

    def exit_code(self) -> ExitCode:
        """2 when something was not measured, else 1 on new failures (all, without a previous bundle), else 0."""
        return self._judgement()[0]

    def verdict(self) -> str:
        return self._judgement()[1]

    def _judgement(self) -> tuple[ExitCode, str]:
        collect, runs = self.collect, self.outcomes.runs
        failing = [t for t in self.outcomes.tests if t.failing]
        new = self.comparison.new_failures if self.comparison else failing
        news = f"{len(new)} new failure{'s' if len(new) != 1 else ''}"
        broken = [d for d, r in runs.items() if r.status != Status.OK]
        if collect.status != Status.OK or broken:
            what = [f"collection {collect.status}, {collect.why}; no device ran"] if collect.status != Status.OK else \
                [f"{d}: {runs[d].status}, {runs[d].why}" for d in broken]
            return ExitCode.UNMEASURED, "not measured: " + "; ".join(what) + (f" (and {news})" if new else "")
        if new:
            return ExitCode.REGRESSED, news
        return ExitCode.OK, f"ok: no new failures ({len(failing)} known)" if failing else "ok"

    def as_record(self) -> dict:
        request = self.request
        return {
            "format": FORMAT, "stamp": self.stamp, "area": request.area, "cwd": str(request.cwd),
            "selection": list(request.selection), "devices": list(request.devices),
            "measured": self.measured, "verdict": self.verdict(), "exit_code": int(self.exit_code()),
            "collect": asdict(self.collect),
            "runs": {d: r.as_record() for d, r in self.outcomes.runs.items()},
            "tests": [asdict(t) for t in self.outcomes.tests],
            "comparison": self.comparison.as_record() if self.comparison else None,
        }
