"""The bench gate's rules: a run checked against the baseline, as a list of findings (one line each).

The rules (time, parity, cost, hash, and reproducibility within the run), their defaults and the measurements
behind them are docs/bench-gate.md's ("The gate", "Reproducible within the run").
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, fields
from typing import Collection, Iterable, Mapping

from detsim.track.base.exitcodes import ExitCode
from detsim.track.base.metrics import PARITY_MIN_R
from detsim.track.base.provenance import MachineClass
from detsim.track.gate.results import Benchmark, calibration_times, is_number

DEFAULT_THRESHOLD = 0.75  # one benchmark's calibrated time may grow by this much
DEFAULT_SUITE_THRESHOLD = 0.50  # the geometric mean over a device's benchmarks, by this much
COST_THRESHOLD = 0.02  # a count may rise by this much (run-to-run spread ~0.1 %, docs/bench-gate.md)
MACHINE_CLASS_FIELDS = tuple(f.name for f in fields(MachineClass))


class Status(str, enum.Enum):
    """What a finding says; compares equal to its lower-case name (``Status.SLOWER == "slower"``)."""

    OK = "ok"
    INFO = "info"  # the calibration's own change: the runner's speed now
    NOTE = "note"  # something not checked, and why
    NEW = "new"  # in the run only, not gated
    SLOWER = "slower"
    PARITY = "parity"
    HASH = "hash"
    NONDETERMINISTIC = "nondeterministic"  # the image differs between rounds of one run
    COST = "cost"  # more instructions counted than the baseline
    MISSING = "missing"  # in the baseline, not in the run
    UNMEASURED = "unmeasured"


FAILED = (Status.SLOWER, Status.PARITY, Status.HASH, Status.NONDETERMINISTIC, Status.COST)
UNMEASURED = (Status.MISSING, Status.UNMEASURED)


@dataclass(frozen=True)
class Finding:
    """One line of the verdict: a status (see FAILED / UNMEASURED), the benchmark and what was seen."""

    status: Status
    name: str
    message: str

    def line(self) -> str:
        return f"{self.status.value.upper():<10} {self.name}: {self.message}"


@dataclass(frozen=True)
class Timing:
    """Calibrated times of one benchmark in the baseline and in the run."""

    old: Benchmark
    new: Benchmark
    old_calibration_s: float
    new_calibration_s: float

    @property
    def old_ratio(self) -> float:
        return self.old.min_s / self.old_calibration_s

    @property
    def new_ratio(self) -> float:
        return self.new.min_s / self.new_calibration_s

    @property
    def change(self) -> float:
        return self.new_ratio / self.old_ratio

    def figures(self, limit: float) -> str:
        return (f"time/calibration {self.old_ratio:.3f} -> {self.new_ratio:.3f} (x{self.change:.2f}, "
                f"limit x{limit:.2f}); min {_ms(self.old.min_s)} -> {_ms(self.new.min_s)}, "
                f"calibration {_ms(self.old_calibration_s)} -> {_ms(self.new_calibration_s)}")


def gate(baseline: Mapping[str, Benchmark], run: Mapping[str, Benchmark], *,
         threshold: float = DEFAULT_THRESHOLD, suite_threshold: float = DEFAULT_SUITE_THRESHOLD) -> list[Finding]:
    """Compare a run with the baseline: calibrations, then each benchmark, then each device's suite (where a
    suite is slower, every benchmark of it that grew by more than ``suite_threshold`` is slower too)."""
    base_cal, run_cal = calibration_times(baseline), calibration_times(run)
    findings = [calibration_finding(device, base_cal.get(device), run_cal.get(device))
                for device in sorted(set(base_cal) | set(run_cal))]
    timings = {t.old.fullname: t for t in timings_of(baseline, run, base_cal, run_cal)}
    means = suite_means(timings.values())
    for fullname, old in sorted(baseline.items()):
        if old.is_calibration:
            continue
        new = run.get(fullname)
        if new is None:
            findings.append(Finding(Status.MISSING, old.name, "in the baseline but not in the run "
                                    "(it failed before timing, was skipped or deselected)"))
            continue
        suite_slow = means.get(old.device, 1.0) > 1 + suite_threshold
        limit = 1 + (min(threshold, suite_threshold) if suite_slow else threshold)
        findings.extend(_benchmark_findings(old, new, timings.get(fullname), limit, threshold))
    findings.extend(_suite_findings(timings.values(), means, suite_threshold))
    findings.extend(hash_facts((old, run[name]) for name, old in sorted(baseline.items()) if name in run))
    for fullname in sorted(set(run) - set(baseline)):
        if not run[fullname].is_calibration:
            findings.append(Finding(Status.NEW, run[fullname].name, "not in the baseline, not gated "
                                    "(refresh the baseline to include it)"))
    return findings


def _benchmark_findings(old: Benchmark, new: Benchmark, timing: Timing | None, limit: float,
                        threshold: float) -> list[Finding]:
    """The time, parity and hash findings of one benchmark; all-ok ones merge into one OK line."""
    reproducible = reproducibility_finding(new)
    checks = [time_finding(old, timing, limit, threshold), parity_finding(old, new),
              cost_finding(old, new), reproducible,
              hash_finding(old, new) if reproducible is None or reproducible.status == Status.OK else None]
    checks = [f for f in checks if f is not None]
    if all(f.status == Status.OK for f in checks):
        return [Finding(Status.OK, old.name, "; ".join(f.message for f in checks))]
    return [f for f in checks if f.status != Status.OK]


def _suite_findings(timings: Collection[Timing], means: Mapping[str, float], suite_threshold: float) -> list[Finding]:
    """One finding per device: the geometric mean of its benchmarks' changes, each listed."""
    findings = []
    for device, mean in sorted(means.items()):
        group = [t for t in timings if t.old.device == device]
        listed = ", ".join(f"{t.old.name} x{t.change:.2f}" for t in group)
        status = Status.SLOWER if mean > 1 + suite_threshold else Status.OK
        findings.append(Finding(status, f"suite[{device}]", f"geometric mean of the time/calibration changes "
                                f"x{mean:.2f} (limit x{1 + suite_threshold:.2f}) over {len(group)}: {listed}"))
    return findings


def timings_of(baseline: Mapping[str, Benchmark], run: Mapping[str, Benchmark],
               base_cal: Mapping[str, float], run_cal: Mapping[str, float]) -> list[Timing]:
    """Calibrated timings of the benchmarks present in both files whose device has both calibrations."""
    out = []
    for fullname, old in sorted(baseline.items()):
        new = run.get(fullname)
        if old.is_calibration or new is None or old.device not in base_cal or new.device not in run_cal:
            continue
        out.append(Timing(old, new, base_cal[old.device], run_cal[new.device]))
    return out


def suite_means(timings: Iterable[Timing]) -> dict[str, float]:
    """Geometric mean of the time/calibration changes per device."""
    logs: dict[str, list[float]] = {}
    for timing in timings:
        logs.setdefault(timing.old.device, []).append(math.log(timing.change))
    return {device: math.exp(sum(values) / len(values)) for device, values in logs.items()}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def calibration_finding(device: str, old: float | None, new: float | None) -> Finding:
    """The calibration of one device: missing from either file, or its change (information only)."""
    name = f"calibration[{device}]"
    if old is None:
        return Finding(Status.NEW, name, f"no calibration on {device} in the baseline, so none of its "
                       "benchmarks are gated")
    if new is None:
        return Finding(Status.UNMEASURED, name, f"no calibration benchmark on {device} in the run")
    return Finding(Status.INFO, name, f"min {_ms(old)} -> {_ms(new)} (x{new / old:.2f}, the runner's speed now)")


def time_finding(old: Benchmark, timing: Timing | None, limit: float, threshold: float) -> Finding:
    """Slower when the calibrated time grew beyond ``limit`` (a factor); unmeasured without a calibration."""
    if timing is None:
        return Finding(Status.UNMEASURED, old.name, f"no calibration on {old.device} in the baseline or the "
                       f"run; its min {_ms(old.min_s)} cannot be compared")
    if timing.change > limit:
        return Finding(Status.SLOWER, old.name, timing.figures(limit))
    if timing.change < 1 / (1 + threshold):
        return Finding(Status.OK, old.name, timing.figures(limit) + "; faster than the baseline, "
                       "refresh it to keep the gain")
    return Finding(Status.OK, old.name, timing.figures(limit))


def parity_finding(old: Benchmark, new: Benchmark) -> Finding | None:
    """The run's Pearson r against the acceptance line (None where neither file records one)."""
    if "pearson_r" not in old.extra and "pearson_r" not in new.extra:
        return None
    before, after = old.extra.get("pearson_r"), new.extra.get("pearson_r")
    shown = f"{before:.8f}" if is_number(before) else str(before)
    if not is_number(after):
        return Finding(Status.PARITY, old.name, f"Pearson r {shown} -> {after} (not a number; "
                       f"an image with NaN/inf pixels or no parity check)")
    if after < PARITY_MIN_R:
        return Finding(Status.PARITY, old.name, f"Pearson r {shown} -> {after:.8f} (below {PARITY_MIN_R}) "
                       f"against golden case {new.extra.get('case', '?')}")
    return Finding(Status.OK, old.name, f"Pearson r {after:.8f}")


def reproducibility_finding(new: Benchmark) -> Finding | None:
    """Whether the run's rounds gave one image (None where the run records no round hashes)."""
    rounds = new.extra.get("sha256_rounds")
    if not isinstance(rounds, list) or not rounds:
        return None
    distinct = sorted(set(map(str, rounds)))
    if len(distinct) > 1:
        return Finding(Status.NONDETERMINISTIC, new.name, f"the image of one input differs between the {len(rounds)} "
                       f"rounds of this run ({len(distinct)} distinct sha256: "
                       + ", ".join(f"{sha[:12]}..." for sha in distinct[:3])
                       + f"{', ...' if len(distinct) > 3 else ''}); its hash is not compared with the baseline's")
    return Finding(Status.OK, new.name, f"image reproduced in {len(rounds)} rounds")


def hash_finding(old: Benchmark, new: Benchmark) -> Finding | None:
    """The image sha256 against the baseline's, compared only within one machine class (None where the
    baseline records no hash, or the classes are not known to be equal: :func:`hash_facts` says so once)."""
    before, after = old.extra.get("sha256"), new.extra.get("sha256")
    if before is None or _not_comparable(old.machine_class, new.machine_class):
        return None
    if after != before:
        r = new.extra.get("pearson_r")
        return Finding(Status.HASH, old.name, f"image sha256 {str(before)[:16]}... -> {str(after)[:16]}... "
                       f"(same machine class: {old.machine_class.describe()}; Pearson r now "
                       f"{f'{r:.8f}' if is_number(r) else r})")
    return Finding(Status.OK, old.name, "image sha256 unchanged")


def hash_facts(pairs: Iterable[tuple[Benchmark, Benchmark]]) -> list[Finding]:
    """One note per reason why image hashes were not compared (another machine class, a class not
    recorded), with how many benchmarks it covers: a fact, never a failure."""
    reasons: dict[str, list[str]] = {}
    for old, new in pairs:
        why = None if old.extra.get("sha256") is None else _not_comparable(old.machine_class, new.machine_class)
        if why:
            reasons.setdefault(why, []).append(old.name)
    return [Finding(Status.NOTE, "image hashes", f"not compared for {len(names)} benchmark(s), {why} (a fact, not a "
                    "failure: the baseline holds no hashes of this run's machine class; `bash .ci/bench --refresh` "
                    "on this class records them)") for why, names in reasons.items()]


def cost_finding(old: Benchmark, new: Benchmark) -> Finding | None:
    """The run's instruction count against the baseline's (None where neither has one: no claim); a note, never
    a pass, when one side has no count, the counted regions differ, or the machine classes differ."""
    before, after = old.extra.get("instructions"), new.extra.get("instructions")
    if not _is_count(before) and not _is_count(after):  # never counted here (e.g. a compiled path): no claim
        return None
    if not _is_count(before):
        return Finding(Status.NOTE, old.name, "instructions not compared: the baseline records no count "
                       f"({old.extra.get('instructions_note', 'refresh it to record one')})")
    if not _is_count(after):
        return Finding(Status.NOTE, old.name, "instructions not compared: the run records no count "
                       f"({new.extra.get('instructions_note', 'no reason recorded')})")
    region_before, region_after = old.extra.get("instructions_workload"), new.extra.get("instructions_workload")
    if region_before != region_after:
        return Finding(Status.NOTE, old.name, f"instructions not compared: counted region {region_before} -> "
                       f"{region_after}")
    unchecked = _not_comparable(old.machine_class, new.machine_class)
    if unchecked:
        return Finding(Status.NOTE, old.name, "instructions not compared, " + unchecked)
    change = after / before - 1
    figures = (f"instructions {before:,} -> {after:,} ({change:+.2%}, limit +{COST_THRESHOLD:.0%}) "
               f"counted on {region_after}")
    if change > COST_THRESHOLD:
        return Finding(Status.COST, old.name, figures)
    return Finding(Status.OK, old.name, figures)


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


def exit_code(findings: Iterable[Finding]) -> ExitCode:
    """REGRESSED when something regressed, else UNMEASURED when something could not be measured, else OK."""
    findings = list(findings)
    if any(f.status in FAILED for f in findings):
        return ExitCode.REGRESSED
    if any(f.status in UNMEASURED for f in findings):
        return ExitCode.UNMEASURED
    return ExitCode.OK
