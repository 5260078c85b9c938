"""The bench gate's judge (docs/bench-gate.md, "The gate"): one pytest-benchmark run against the stored baseline
file, by the asv verdict's families (timing, parity, cost, image hash, reproducibility), its thresholds table and its
finding type. What differs from the asv verdict is only the comparison: a stored baseline file instead of a history,
times in units of a calibration run with the CI-noise rows of :mod:`detsim.track.judge.thresholds`.

Input: two ``--benchmark-json`` files (the committed baseline is one too), read into :class:`Benchmark` records
(:func:`load_results`). Each benchmark's ``extra_info`` holds what ``bench/conftest.py`` records: its role, the
machine class, the Pearson r, the image sha256. The **calibration** benchmark is a fixed torch workload that does
not use detsim; its min time per device (:func:`calibration_times`) is the unit every other benchmark's time is
measured in. Output: a :class:`BaselineVerdict`, each :class:`~detsim.track.judge.finding.Finding` written in the
verdict's words by :func:`detsim.track.judge.text.finding_line` (``view=View.GATE``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Iterable, Mapping, NamedTuple

from detsim.track.base.exitcodes import ExitCode, worst
from detsim.track.base.provenance import MachineClass
from detsim.track.judge.family import Family
from detsim.track.judge.finding import Finding, Confirmation
from detsim.track.judge.benchmarks import COST_UNIT
from detsim.track.judge.series import Series
from detsim.track.judge.text import fmt
from detsim.track.judge.thresholds import BENCH_SUITE, BENCH_TIMING, COST_THRESHOLD, DETERMINISM, PARITY_LINE, \
    REPRODUCIBILITY

CALIBRATION = "calibration"  # extra_info role of the calibration workload


class GateInputError(Exception):
    """A results file that cannot be read or is not a pytest-benchmark JSON file (one-line message)."""


@dataclass(frozen=True)
class Benchmark:
    """One benchmark of a results file."""

    fullname: str  # "test_bench_simulate.py::test_simulate[p1_small-cpu-float64]"
    name: str  # "test_simulate[p1_small-cpu-float64]"
    min_s: float  # fastest round, seconds
    extra: Mapping = field(default_factory=dict)  # its extra_info
    commit: str = ""  # the file's commit_info.id: the commit it measured ("" where not recorded)

    @property
    def is_calibration(self) -> bool:
        return self.extra.get("role") == CALIBRATION

    @property
    def device(self) -> str:
        return str(self.extra.get("device", "cpu"))

    @property
    def machine_class(self) -> MachineClass | None:
        """The machine class it recorded, or None (files written before benchmarks recorded one)."""
        return MachineClass.from_record(self.extra)


def _reject_constant(token: str):
    raise ValueError(f"{token} is not strict JSON")


def load_results(path: Path) -> dict[str, Benchmark]:
    """The benchmarks of a ``--benchmark-json`` file, by full name; :class:`GateInputError` naming the file when
    it is missing, unreadable, not strict JSON or not shaped like pytest-benchmark output."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except OSError as exc:
        raise GateInputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise GateInputError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise GateInputError(f"{path}: not a pytest-benchmark JSON file (no 'benchmarks' list)")
    results: dict[str, Benchmark] = {}
    info = data.get("commit_info")
    commit = info.get("id") if isinstance(info, dict) and isinstance(info.get("id"), str) else ""
    for index, entry in enumerate(data["benchmarks"]):
        bench = parse_benchmark(entry, commit)
        if bench is None:
            raise GateInputError(f"{path}: benchmarks[{index}] lacks a name, a positive stats.min or extra_info")
        r = bench.extra.get("pearson_r")
        if _is_real(r) and not -1.0 <= r <= 1.0:
            raise GateInputError(f"{path}: benchmarks[{index}] ({bench.fullname}): extra_info.pearson_r = {r!r} "
                                 "is impossible (a correlation lies in [-1, 1])")
        if bench.fullname in results:
            raise GateInputError(f"{path}: benchmark {bench.fullname} appears twice")
        results[bench.fullname] = bench
    return results


def parse_benchmark(entry, commit: str = "") -> Benchmark | None:
    """One entry of the file's ``benchmarks`` list, or None when it lacks what the gate needs."""
    if not isinstance(entry, dict):
        return None
    fullname, stats, extra = entry.get("fullname"), entry.get("stats"), entry.get("extra_info", {})
    minimum = stats.get("min") if isinstance(stats, dict) else None
    if not isinstance(fullname, str) or not isinstance(extra, dict) or not (is_number(minimum) and minimum > 0):
        return None
    return Benchmark(fullname=fullname, name=str(entry.get("name", fullname)), min_s=float(minimum), extra=extra,
                     commit=commit)


def _is_real(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_number(value) -> bool:
    """A finite int or float (not a bool)."""
    return _is_real(value) and math.isfinite(value)


def calibration_times(results: Mapping[str, Benchmark]) -> dict[str, float]:
    """Min time of the calibration workload per device (the smallest if a device has several), seconds."""
    times: dict[str, float] = {}
    for bench in results.values():
        if bench.is_calibration:
            times[bench.device] = min(bench.min_s, times.get(bench.device, math.inf))
    return times


MACHINE_CLASS_FIELDS = tuple(f.name for f in fields(MachineClass))
CALIBRATIONS = "calibrations"  # the unit of a gated time: the benchmark's min over its device's calibration min


class GateLine(NamedTuple):
    """A line of the gate that is not a finding: a benchmark that ``passed``, a ``note`` or ``not measured``."""

    kind: str
    name: str
    text: str


@dataclass(frozen=True)
class BaselineVerdict:
    """The gate's verdict: the findings, then what passed, what could not be measured, and the notes."""

    findings: tuple[Finding, ...]
    lines: tuple[GateLine, ...]
    gated: int  # benchmarks of the baseline, the calibrations aside

    def of(self, kind: str) -> dict[str, str]:
        return {line.name: line.text for line in self.lines if line.kind == kind}

    @property
    def exit(self) -> ExitCode:
        """UNMEASURED when something could not be measured (2 wins over 1, as for every command), else
        REGRESSED when something regressed, else OK."""
        return worst(*[ExitCode.REGRESSED] * any(f.is_verdict for f in self.findings),
                     *[ExitCode.UNMEASURED] * bool(self.of("not measured")))


@dataclass(frozen=True)
class CalibratedTiming:
    """A benchmark's min time in the baseline and in the run, each over its device's calibration min."""

    old: Benchmark
    new: Benchmark
    calibrations_s: tuple[float, float]

    @property
    def ratios(self) -> tuple[float, float]:
        return self.old.min_s / self.calibrations_s[0], self.new.min_s / self.calibrations_s[1]

    @property
    def change(self) -> float:
        return self.ratios[1] / self.ratios[0]

    def evidence(self, limit: float) -> str:
        (old_cal, new_cal), seconds = self.calibrations_s, "seconds"
        return (f"limit x{limit:.2f}; min {fmt(self.old.min_s, seconds)} -> {fmt(self.new.min_s, seconds)}, "
                f"calibration {fmt(old_cal, seconds)} -> {fmt(new_cal, seconds)}")


def finding(old: Benchmark, new: Benchmark, family: Family, before: float | None, after: float, unit: str = "",
            threshold: float = 0.0, name: str | None = None, **detail) -> Finding:
    """A finding of the gate: the baseline's commit is the last good, the run's the first bad."""
    series = Series(env=new.device, name=name or old.name, params="", family=family, unit=unit, threshold=threshold)
    return Finding(series, old.commit or None, new.commit, before, after, detail)


def judge(baseline: Mapping[str, Benchmark], run: Mapping[str, Benchmark], *,
          threshold: float = BENCH_TIMING.value, suite_threshold: float = BENCH_SUITE.value) -> BaselineVerdict:
    """Compare a run with the baseline: calibrations, then each benchmark, then each device's suite (where a
    suite is slower, every benchmark of it that grew by more than ``suite_threshold`` is slower too)."""
    base_cal, run_cal = calibration_times(baseline), calibration_times(run)
    out: list[Finding | GateLine] = [calibration_line(device, base_cal.get(device), run_cal.get(device))
                                 for device in sorted(set(base_cal) | set(run_cal))]
    timings = {name: CalibratedTiming(old, run[name], (base_cal[old.device], run_cal[run[name].device]))
               for name, old in sorted(baseline.items()) if not old.is_calibration and name in run
               and old.device in base_cal and run[name].device in run_cal}
    suites: dict[str, list[CalibratedTiming]] = {}
    for timing in timings.values():
        suites.setdefault(timing.old.device, []).append(timing)
    slow = {device for device, group in suites.items() if _geomean(t.change for t in group) > 1 + suite_threshold}
    for fullname, old in sorted(baseline.items()):
        if old.is_calibration:
            continue
        if fullname not in run:
            out.append(GateLine("not measured", old.name, "in the baseline but not in the run "
                            "(it failed before timing, was skipped or deselected)"))
            continue
        limit = 1 + (min(threshold, suite_threshold) if old.device in slow else threshold)
        out.extend(_benchmark_checks(old, run[fullname], timings.get(fullname), limit, threshold))
    out.extend(_suite_check(device, group, suite_threshold) for device, group in sorted(suites.items()))
    out.extend(hash_facts((old, run[name]) for name, old in sorted(baseline.items()) if name in run))
    out.extend(GateLine("note", run[name].name, "not in the baseline, not gated (refresh the baseline to include it)")
               for name in sorted(set(run) - set(baseline)) if not run[name].is_calibration)
    return BaselineVerdict(tuple(f for f in out if isinstance(f, Finding)),
                           tuple(f for f in out if isinstance(f, GateLine)),
                           sum(1 for b in baseline.values() if not b.is_calibration))


def _benchmark_checks(old: Benchmark, new: Benchmark, timing: CalibratedTiming | None, limit: float,
                      threshold: float) -> list[Finding | GateLine]:
    """The time, parity, cost, reproducibility and hash checks of one benchmark; the passes as one line, unless
    another check found something or could not be made."""
    reproducible = reproducibility_check(old, new)
    checks = [time_check(old, new, timing, limit, threshold), parity_check(old, new), cost_check(old, new),
              reproducible, hash_check(old, new) if not isinstance(reproducible, Finding) else None]
    checks = [c for c in checks if c is not None]
    if all(isinstance(c, str) for c in checks):
        return [GateLine("passed", old.name, "; ".join(checks))]
    return [c for c in checks if not isinstance(c, str)]


def _geomean(values: Iterable[float]) -> float:
    logs = [math.log(v) for v in values]
    return math.exp(sum(logs) / len(logs))


def _suite_check(device: str, group: list[CalibratedTiming], suite_threshold: float) -> Finding | GateLine:
    """A device's suite: the geometric mean of its benchmarks' changes, each listed."""
    change, name = _geomean(t.change for t in group), f"suite[{device}]"
    listed = ", ".join(f"{t.old.name} x{t.change:.2f}" for t in group)
    evidence = f"limit x{1 + suite_threshold:.2f}; geometric mean over {len(group)}: {listed}"
    if change <= 1 + suite_threshold:
        return GateLine("passed", name, f"timing x{change:.2f} ({evidence})")
    before = _geomean(t.ratios[0] for t in group)
    return finding(group[0].old, group[0].new, Family.TIMING, before, before * change, CALIBRATIONS, suite_threshold,
                   name, confirmation=Confirmation.CONFIRMED, evidence=evidence)


def calibration_line(device: str, old: float | None, new: float | None) -> GateLine:
    """The calibration of one device: missing from either file, or its change (information only)."""
    name = f"calibration[{device}]"
    if old is None:
        return GateLine("note", name, f"no calibration on {device} in the baseline, so none of its benchmarks "
                        "are gated")
    if new is None:
        return GateLine("not measured", name, f"no calibration benchmark on {device} in the run")
    return GateLine("note", name, f"min {fmt(old, 'seconds')} -> {fmt(new, 'seconds')} (x{new / old:.2f}, "
                "the runner's speed now)")


def time_check(old: Benchmark, new: Benchmark, timing: CalibratedTiming | None, limit: float,
               threshold: float) -> Finding | GateLine | str:
    """Regressed when the calibrated time grew beyond ``limit`` (a factor); not measured without a calibration."""
    if timing is None:
        return GateLine("not measured", old.name, f"no calibration on {old.device} in the baseline or the run; its "
                    f"min {fmt(old.min_s, 'seconds')} cannot be compared")
    (before, after), change = timing.ratios, timing.change
    if change > limit:
        return finding(old, new, Family.TIMING, before, after, CALIBRATIONS, limit - 1,
                       confirmation=Confirmation.CONFIRMED, evidence=timing.evidence(limit))
    faster = "; faster than the baseline, refresh it to keep the gain" if change < 1 / (1 + threshold) else ""
    return (f"timing {fmt(before, CALIBRATIONS)} -> {fmt(after, CALIBRATIONS)}, x{change:.2f} "
            f"({timing.evidence(limit)}){faster}")


def parity_check(old: Benchmark, new: Benchmark) -> Finding | str | None:
    """The run's Pearson r against the acceptance line (None where neither file records one)."""
    if "pearson_r" not in old.extra and "pearson_r" not in new.extra:
        return None
    before, after = old.extra.get("pearson_r"), new.extra.get("pearson_r")
    old_value = 1 - before if is_number(before) else None
    if not is_number(after):
        return finding(old, new, Family.PARITY, old_value, math.nan, "1 - r", evidence=f"{after}, not a number: an "
                       "image with NaN/inf pixels or no parity check")
    if after < PARITY_LINE.value:
        against = new.extra.get("case") or new.extra.get("parity_reference", "?")
        return finding(old, new, Family.PARITY, old_value, 1 - after, "1 - r",
                       evidence=f"below {PARITY_LINE.value} against {against}")
    return f"parity r {after:.9f}"


def reproducibility_check(old: Benchmark, new: Benchmark) -> Finding | str | None:
    """Whether the run's rounds gave one image (None where the run records no round hashes)."""
    rounds = new.extra.get("sha256_rounds")
    if not isinstance(rounds, list) or not rounds:
        return None
    distinct = sorted(set(map(str, rounds)))
    if len(distinct) > 1 + REPRODUCIBILITY.value:
        shown = ", ".join(f"{sha[:12]}..." for sha in distinct[:3]) + (", ..." if len(distinct) > 3 else "")
        return finding(old, new, Family.RUNS_DIFFER, 1.0, float(len(distinct)), "images",
                       runs=f"the {len(rounds)} rounds of this run", axis="rounds",
                       evidence=f"{len(distinct)} distinct sha256: {shown}; its hash is not compared with the "
                                "baseline's")
    return f"image reproduced in {len(rounds)} rounds"


def hash_check(old: Benchmark, new: Benchmark) -> Finding | str | None:
    """The image sha256 against the baseline's, compared only within one machine class (None where the
    baseline records no hash, or the classes are not known to be equal: :func:`hash_facts` says so once)."""
    before, after = old.extra.get("sha256"), new.extra.get("sha256")
    if before is None or _not_comparable(old.machine_class, new.machine_class):
        return None
    if after == before:
        return "image hash unchanged"
    r = new.extra.get("pearson_r")
    return finding(old, new, Family.IMAGE_CHANGED, 0.0, 1.0, threshold=DETERMINISM.value, old_sha256=str(before),
                   new_sha256=str(after), evidence=f"same machine class: {old.machine_class.describe()}; Pearson r "
                   f"now {f'{r:.9f}' if is_number(r) else r}")


def hash_facts(pairs: Iterable[tuple[Benchmark, Benchmark]]) -> list[GateLine]:
    """One note per reason why image hashes were not compared (another machine class, a class not
    recorded), with how many benchmarks it covers: a fact, never a failure."""
    reasons: dict[str, list[str]] = {}
    for old, new in pairs:
        why = None if old.extra.get("sha256") is None else _not_comparable(old.machine_class, new.machine_class)
        if why:
            reasons.setdefault(why, []).append(old.name)
    return [GateLine("note", "image hashes", f"not compared for {len(names)} benchmark(s), {why} (a fact, not a "
                     "failure: the baseline holds no hashes of this run's machine class; `bash .ci/bench --refresh` "
                     "on this class records them)") for why, names in reasons.items()]


def cost_check(old: Benchmark, new: Benchmark) -> Finding | GateLine | str | None:
    """The run's instruction count against the baseline's (None where neither has one: no claim); a note, never
    a pass, when one side has no count, the counted regions differ, or the machine classes differ."""
    before, after = old.extra.get("instructions"), new.extra.get("instructions")
    if not _is_count(before) and not _is_count(after):  # never counted here (e.g. a compiled path): no claim
        return None
    if not _is_count(before):
        why = f"the baseline records no count ({old.extra.get('instructions_note', 'refresh it to record one')})"
    elif not _is_count(after):
        why = f"the run records no count ({new.extra.get('instructions_note', 'no reason recorded')})"
    elif old.extra.get("instructions_workload") != new.extra.get("instructions_workload"):
        why = f"counted region {old.extra.get('instructions_workload')} -> {new.extra.get('instructions_workload')}"
    else:
        why = _not_comparable(old.machine_class, new.machine_class)
    if why:
        return GateLine("note", old.name, f"cost not compared: {why}")
    change = after / before - 1
    evidence = f"{change:+.2%}, limit +{COST_THRESHOLD:.0%}, counted on {new.extra.get('instructions_workload')}"
    if change > COST_THRESHOLD:
        return finding(old, new, Family.COUNTED_COST, before, after, COST_UNIT, COST_THRESHOLD, evidence=evidence)
    return f"cost {fmt(before, COST_UNIT)} -> {fmt(after, COST_UNIT)} ({evidence})"


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _not_comparable(baseline: MachineClass | None, run: MachineClass | None) -> str | None:
    """Why two hashes cannot be compared (None when both files record the same machine class)."""
    recorded = ", ".join(MACHINE_CLASS_FIELDS)
    if baseline is None:
        return (f"the baseline does not record its machine class ({recorded}); "
                "refresh it to compare image hashes")
    if run is None:
        return f"the run does not record its machine class ({recorded})"
    differs = baseline.differences(run)
    if differs:
        return "the machine class differs: " + ", ".join(f"{key} {a} -> {b}" for key, (a, b) in differs.items())
    return None
