"""``detsim-track bench-gate``: a noise-proof gate over pytest-benchmark results (checks and exit codes:
docs/bench-gate.md)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from detsim.track.base.exitcodes import ExitCode
from detsim.track.commands import refuse
from detsim.track.base.metrics import PARITY_MIN_R
from detsim.track.gate.checks import (COST_THRESHOLD, DEFAULT_SUITE_THRESHOLD, DEFAULT_THRESHOLD, FAILED,
                                      UNMEASURED, Finding, exit_code, gate)
from detsim.track.gate.results import Benchmark, GateInputError, load_results

HELP = "gate a pytest-benchmark run against the baseline: calibrated time, parity, image sha256"

DEFAULT_BASELINE = Path("results/baselines/pytest-baseline.json")
VERDICTS = {ExitCode.OK: "passed", ExitCode.REGRESSED: "FAILED", ExitCode.UNMEASURED: "UNMEASURED"}


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


def verdict_line(code: ExitCode, findings: list[Finding], baseline: dict[str, Benchmark]) -> str:
    """The last line: passed / FAILED / UNMEASURED, how many benchmarks were gated, the failing counts."""
    counts = {status: sum(f.status == status for f in findings) for status in FAILED + UNMEASURED}
    summary = ", ".join(f"{n} {status.value}" for status, n in counts.items() if n)
    gated = sum(1 for b in baseline.values() if not b.is_calibration)
    return f"bench-gate: {VERDICTS[code]} ({gated} benchmarks gated{'; findings: ' + summary if summary else ''})"


def run(args: argparse.Namespace) -> int:
    try:
        baseline = load_results(args.baseline)
        results = load_results(args.results)
    except GateInputError as exc:
        return refuse(f"bench-gate: {exc}")
    findings = gate(baseline, results, threshold=args.threshold, suite_threshold=args.suite_threshold)
    print(f"bench-gate: {args.results} against {args.baseline} (time/calibration limits: "
          f"+{args.threshold:.0%} per benchmark, +{args.suite_threshold:.0%} suite mean; "
          f"Pearson r >= {PARITY_MIN_R}; instructions +{COST_THRESHOLD:.0%})")
    for finding in findings:
        print(finding.line())
    code = exit_code(findings)
    print(verdict_line(code, findings, baseline))
    return code
