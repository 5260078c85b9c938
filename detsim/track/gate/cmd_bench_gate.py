"""``detsim-track bench-gate``: a noise-proof gate over pytest-benchmark results.

Reads the ``--benchmark-json`` file of a ``pytest bench`` run and the committed baseline (a file of the
same format, ``results/baselines/pytest-baseline.json``) and checks every benchmark of the baseline:

* **time**: ``min(benchmark) / min(calibration)``, with the calibration benchmark of the same device
  from the same file, against the same ratio in the baseline. A benchmark fails when its ratio grew
  by more than ``--threshold`` (default +75 %); a device's suite fails when the geometric mean of
  its benchmarks' growth exceeds ``--suite-threshold`` (default +50 %), and then names every
  benchmark that grew beyond that. A slowdown of the engine moves all benchmarks together, while
  the noise of a shared runner moves them apart, so the mean separates the two far better than any
  single benchmark can (docs/bench-gate.md has the measurements behind both defaults).
* **parity**: fails when ``extra_info.pearson_r`` is missing, not a number, or below
  :data:`PARITY_MIN_R`.
* **hash**: fails when ``extra_info.sha256`` differs from the baseline's. Image bits are only
  reproducible for one device, dtype, thread count, torch version and CPU capability; when these differ
  from the baseline's, the hashes are not compared and a note says which field differs.

A benchmark of the baseline that the run lacks is reported as missing; one the baseline lacks is
listed as new and not gated. Exit codes (shared by ``detsim-track``): 0 passed, 1 slower, parity
dropped or image hash changed, 2 unreadable input, no calibration or a missing benchmark.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

HELP = "gate a pytest-benchmark run against the baseline: calibrated time, parity, image sha256"

PARITY_MIN_R = 0.9995  # acceptance threshold of every golden case (tests/_tolerances.py)
DEFAULT_THRESHOLD = 0.75  # one benchmark's calibrated time may grow by this much
DEFAULT_SUITE_THRESHOLD = 0.50  # the geometric mean over a device's benchmarks, by this much
DEFAULT_BASELINE = Path("results/baselines/pytest-baseline.json")
CALIBRATION = "calibration"
# extra_info fields that must agree for two image hashes to be comparable
HASH_ENVIRONMENT = ("device", "dtype", "threads", "torch", "cpu_capability")

FAILED = ("slower", "parity", "hash")
UNMEASURED = ("missing", "unmeasured")


class GateInputError(Exception):
    """A results file that cannot be read or is not a pytest-benchmark JSON file (one-line message)."""


@dataclass(frozen=True)
class Benchmark:
    """One benchmark of a results file."""

    fullname: str
    name: str
    min_s: float
    extra: dict = field(default_factory=dict)

    @property
    def is_calibration(self) -> bool:
        return self.extra.get("role") == CALIBRATION

    @property
    def device(self) -> str:
        return str(self.extra.get("device", "cpu"))


@dataclass(frozen=True)
class Finding:
    """One line of the verdict: a status (see FAILED / UNMEASURED), the benchmark and what was seen."""

    status: str
    name: str
    message: str

    def line(self) -> str:
        return f"{self.status.upper():<10} {self.name}: {self.message}"


def _reject_constant(token: str):
    raise ValueError(f"{token} is not strict JSON")


def load_results(path: Path) -> dict[str, Benchmark]:
    """The benchmarks of a ``--benchmark-json`` file, by full name.

    Raises:
        GateInputError: the file is missing, unreadable, not strict JSON, or not shaped like
            pytest-benchmark output (the message names the file).
    """
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
    for index, entry in enumerate(data["benchmarks"]):
        bench = _parse_benchmark(entry)
        if bench is None:
            raise GateInputError(f"{path}: benchmarks[{index}] lacks a name, a positive stats.min or extra_info")
        if bench.fullname in results:
            raise GateInputError(f"{path}: benchmark {bench.fullname} appears twice")
        results[bench.fullname] = bench
    return results


def _parse_benchmark(entry) -> Benchmark | None:
    if not isinstance(entry, dict):
        return None
    fullname, stats, extra = entry.get("fullname"), entry.get("stats"), entry.get("extra_info", {})
    minimum = stats.get("min") if isinstance(stats, dict) else None
    if not isinstance(fullname, str) or not isinstance(extra, dict) or not _positive(minimum):
        return None
    return Benchmark(fullname=fullname, name=str(entry.get("name", fullname)), min_s=float(minimum), extra=extra)


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def calibration_times(results: dict[str, Benchmark]) -> dict[str, float]:
    """Min time of the calibration workload per device (the smallest if a device has several)."""
    times: dict[str, float] = {}
    for bench in results.values():
        if bench.is_calibration:
            times[bench.device] = min(bench.min_s, times.get(bench.device, math.inf))
    return times


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


def gate(baseline: dict[str, Benchmark], run: dict[str, Benchmark], *,
         threshold: float = DEFAULT_THRESHOLD, suite_threshold: float = DEFAULT_SUITE_THRESHOLD,
         parity_min: float = PARITY_MIN_R) -> list[Finding]:
    """Compare a run with the baseline: calibrations, then each benchmark, then each device's suite.

    A benchmark is slower when its calibrated time grew by more than ``threshold``. A device's suite
    is slower when the geometric mean of its benchmarks' growth exceeds ``suite_threshold``; every
    benchmark of that device that grew by more than ``suite_threshold`` is then named as slower too.
    """
    base_cal, run_cal = calibration_times(baseline), calibration_times(run)
    findings = [_calibration_finding(device, base_cal.get(device), run_cal.get(device))
                for device in sorted(set(base_cal) | set(run_cal))]
    timings = {t.old.fullname: t for t in _timings(baseline, run, base_cal, run_cal)}
    means = _suite_means(timings.values())
    for fullname, old in sorted(baseline.items()):
        if old.is_calibration:
            continue
        new = run.get(fullname)
        if new is None:
            findings.append(Finding("missing", old.name, "in the baseline but not in the run "
                                    "(it failed before timing, was skipped or deselected)"))
            continue
        suite_slow = means.get(old.device, 1.0) > 1 + suite_threshold
        limit = 1 + (min(threshold, suite_threshold) if suite_slow else threshold)
        checks = [_time_finding(old, timings.get(fullname), limit, threshold),
                  _parity_finding(old, new, parity_min), _hash_finding(old, new)]
        checks = [f for f in checks if f is not None]
        findings.extend(f for f in checks if f.status != "ok")
        if all(f.status == "ok" for f in checks):
            findings.append(Finding("ok", old.name, "; ".join(f.message for f in checks)))
    for device, mean in sorted(means.items()):
        group = [t for t in timings.values() if t.old.device == device]
        listed = ", ".join(f"{t.old.name} x{t.change:.2f}" for t in group)
        findings.append(Finding("slower" if mean > 1 + suite_threshold else "ok", f"suite[{device}]",
                                f"geometric mean of the time/calibration changes x{mean:.2f} "
                                f"(limit x{1 + suite_threshold:.2f}) over {len(group)}: {listed}"))
    for fullname in sorted(set(run) - set(baseline)):
        if not run[fullname].is_calibration:
            findings.append(Finding("new", run[fullname].name, "not in the baseline, not gated "
                                    "(refresh the baseline to include it)"))
    return findings


def _timings(baseline: dict[str, Benchmark], run: dict[str, Benchmark],
             base_cal: dict[str, float], run_cal: dict[str, float]) -> list[Timing]:
    """Calibrated timings of the benchmarks present in both files whose device has both calibrations."""
    out = []
    for fullname, old in sorted(baseline.items()):
        new = run.get(fullname)
        if old.is_calibration or new is None or old.device not in base_cal or new.device not in run_cal:
            continue
        out.append(Timing(old, new, base_cal[old.device], run_cal[new.device]))
    return out


def _suite_means(timings) -> dict[str, float]:
    """Geometric mean of the time/calibration changes per device."""
    logs: dict[str, list[float]] = {}
    for timing in timings:
        logs.setdefault(timing.old.device, []).append(math.log(timing.change))
    return {device: math.exp(sum(values) / len(values)) for device, values in logs.items()}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _calibration_finding(device: str, old: float | None, new: float | None) -> Finding:
    name = f"calibration[{device}]"
    if old is None:
        return Finding("new", name, f"no calibration on {device} in the baseline, so none of its "
                       "benchmarks are gated")
    if new is None:
        return Finding("unmeasured", name, f"no calibration benchmark on {device} in the run")
    return Finding("info", name, f"min {_ms(old)} -> {_ms(new)} (x{new / old:.2f}, the runner's speed now)")


def _time_finding(old: Benchmark, timing: Timing | None, limit: float, threshold: float) -> Finding:
    if timing is None:
        return Finding("unmeasured", old.name, f"no calibration on {old.device} in the baseline or the run; "
                       f"its min {_ms(old.min_s)} cannot be compared")
    if timing.change > limit:
        return Finding("slower", old.name, timing.figures(limit))
    if timing.change < 1 / (1 + threshold):
        return Finding("ok", old.name, timing.figures(limit) + "; faster than the baseline, "
                       "refresh it to keep the gain")
    return Finding("ok", old.name, timing.figures(limit))


def _parity_finding(old: Benchmark, new: Benchmark, parity_min: float) -> Finding | None:
    if "pearson_r" not in old.extra and "pearson_r" not in new.extra:
        return None
    before, after = old.extra.get("pearson_r"), new.extra.get("pearson_r")
    shown = f"{before:.8f}" if _is_number(before) else str(before)
    if not _is_number(after):
        return Finding("parity", old.name, f"Pearson r {shown} -> {after} (not a number; "
                       f"an image with NaN/inf pixels or no parity check)")
    if after < parity_min:
        return Finding("parity", old.name, f"Pearson r {shown} -> {after:.8f} (below {parity_min}) "
                       f"against golden case {new.extra.get('case', '?')}")
    return Finding("ok", old.name, f"Pearson r {after:.8f}")


def _hash_finding(old: Benchmark, new: Benchmark) -> Finding | None:
    before, after = old.extra.get("sha256"), new.extra.get("sha256")
    if before is None:
        return None
    differs = [f"{key} {old.extra.get(key)} -> {new.extra.get(key)}" for key in HASH_ENVIRONMENT
               if old.extra.get(key) != new.extra.get(key)]
    if differs:
        return Finding("note", old.name, "image sha256 not compared, the hash environment differs: "
                       + ", ".join(differs))
    if after != before:
        r = new.extra.get("pearson_r")
        return Finding("hash", old.name, f"image sha256 {str(before)[:16]}... -> {str(after)[:16]}... "
                       f"(same device, dtype, threads, torch and CPU capability; Pearson r now "
                       f"{f'{r:.8f}' if _is_number(r) else r})")
    return Finding("ok", old.name, "image sha256 unchanged")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def exit_code(findings: list[Finding]) -> int:
    """1 when something regressed, else 2 when something could not be measured, else 0."""
    if any(f.status in FAILED for f in findings):
        return 1
    if any(f.status in UNMEASURED for f in findings):
        return 2
    return 0


def threshold_value(text: str) -> float:
    """A growth limit from the command line: ``0.5``, or ``50%``."""
    value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"threshold must be positive, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", type=Path, help="the --benchmark-json file of the run to gate")
    parser.add_argument("--baseline", type=Path, default=DEFAULT_BASELINE,
                        help=f"baseline results file (default: {DEFAULT_BASELINE})")
    parser.add_argument("--threshold", type=threshold_value, default=DEFAULT_THRESHOLD,
                        help="largest allowed growth of one benchmark's time/calibration, as a fraction "
                             f"or a percentage (default: {DEFAULT_THRESHOLD * 100:.0f}%%)")
    parser.add_argument("--suite-threshold", type=threshold_value, default=DEFAULT_SUITE_THRESHOLD,
                        help="largest allowed geometric-mean growth over a device's benchmarks "
                             f"(default: {DEFAULT_SUITE_THRESHOLD * 100:.0f}%%)")


def run(args: argparse.Namespace) -> int:
    try:
        baseline = load_results(args.baseline)
        results = load_results(args.results)
    except GateInputError as exc:
        print(f"bench-gate: {exc}", file=sys.stderr)
        return 2
    findings = gate(baseline, results, threshold=args.threshold, suite_threshold=args.suite_threshold)
    print(f"bench-gate: {args.results} against {args.baseline} (time/calibration limits: "
          f"+{args.threshold:.0%} per benchmark, +{args.suite_threshold:.0%} suite mean; "
          f"Pearson r >= {PARITY_MIN_R})")
    for finding in findings:
        print(finding.line())
    code = exit_code(findings)
    counts = {status: sum(f.status == status for f in findings) for status in FAILED + UNMEASURED}
    summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    verdict = {0: "passed", 1: "FAILED", 2: "UNMEASURED"}[code]
    gated = sum(1 for b in baseline.values() if not b.is_calibration)
    print(f"bench-gate: {verdict} ({gated} benchmarks gated{'; findings: ' + summary if summary else ''})")
    return code
