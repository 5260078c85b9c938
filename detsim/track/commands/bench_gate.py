"""``detsim-track bench-gate``: a noise-proof gate over pytest-benchmark results, judged and printed as the asv
verdict is (checks and exit codes: docs/bench-gate.md)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from detsim.track.commands import refuse
from detsim.track.judge.stored_baselines import GATE_BASELINE
from detsim.track.judge.bench import BaselineVerdict, GateInputError, judge, load_results
from detsim.track.judge.text import View, finding_line, to_act
from detsim.track.judge.thresholds import BENCH_SUITE, BENCH_TIMING, COST_THRESHOLD, PARITY_LINE

HELP = "gate a pytest-benchmark run against the baseline: calibrated time, parity, cost, image sha256"

DEFAULT_BASELINE = GATE_BASELINE


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
    parser.add_argument("--threshold", type=threshold_value, default=BENCH_TIMING.value,
                        help="largest allowed growth of one benchmark's time/calibration, as a fraction "
                             f"or a percentage (default: {BENCH_TIMING.value * 100:.0f}%%)")
    parser.add_argument("--suite-threshold", type=threshold_value, default=BENCH_SUITE.value,
                        help="largest allowed geometric-mean growth over a device's benchmarks "
                             f"(default: {BENCH_SUITE.value * 100:.0f}%%)")


def verdict_lines(verdict: BaselineVerdict) -> list[str]:
    """What passed, the findings in the verdict's words, what was not measured, the notes, the summary."""
    unmeasured = verdict.of("not measured")
    return [*(f"passed {name}: {text}" for name, text in verdict.of("passed").items()),
            *(finding_line(f, view=View.GATE) for f in verdict.findings),
            *(f"NOT MEASURED {name}: {text}" for name, text in unmeasured.items()),
            *(f"note: {line.name}: {line.text}" for line in verdict.lines if line.kind == "note"),
            f"summary: {to_act(verdict.findings, len(unmeasured), bool(unmeasured))}; {verdict.gated} benchmarks "
            f"gated; exit {int(verdict.exit)}"]


def run(args: argparse.Namespace) -> int:
    try:
        baseline = load_results(args.baseline)
        results = load_results(args.results)
    except GateInputError as exc:
        return refuse(f"bench-gate: {exc}")
    verdict = judge(baseline, results, threshold=args.threshold, suite_threshold=args.suite_threshold)
    print(f"bench-gate: {args.results} against {args.baseline} (limits: timing +{args.threshold:.0%} per benchmark, "
          f"+{args.suite_threshold:.0%} suite mean, in calibrations; parity r >= {PARITY_LINE.value}; "
          f"cost +{COST_THRESHOLD:.0%}; image hash: any change within one machine class)")
    print("\n".join(verdict_lines(verdict)))
    return verdict.exit
