"""detsim.track.judge.thresholds: the one table, and asv.conf.json holding the same values."""

from __future__ import annotations

from pathlib import Path

from _tolerances import PARITY_MIN_R
from detsim.track.judge.results_files import load_config
from detsim.track.judge.family import FAMILY_ORDER
from detsim.track.judge import thresholds

ROOT = Path(__file__).resolve().parents[3]


def test_asv_conf_holds_the_tables_asv_rows():
    assert load_config(ROOT)["regressions_thresholds"] == thresholds.asv_thresholds()


def test_every_row_names_a_family_a_judge_and_a_reason():
    for row in thresholds.TABLE:
        assert row.family in FAMILY_ORDER and row.judge in thresholds.JUDGES, row
        assert row.reason and "\n" not in row.reason and row.value >= 0, row


def test_the_parity_line_is_the_test_suites():
    assert thresholds.PARITY_LINE.value == PARITY_MIN_R


def test_the_bench_gate_keeps_its_own_timing_rows_for_ci_noise():
    """The gate's calibrated timing limits differ from asv's on purpose (a runner's noise, not a history)."""
    bench = {row for row in thresholds.TABLE if row.family == "timing" and row.judge == "bench"}
    assert bench == {thresholds.BENCH_TIMING, thresholds.BENCH_SUITE}
    assert all("noise" in row.reason or "unchanged" in row.reason for row in bench)


def test_a_targets_parity_criterion_reads_the_tables_factor():
    from detsim.track.target import criteria

    assert criteria.PARITY_FACTOR == thresholds.TARGET_PARITY.value and thresholds.TARGET_PARITY.judge == "target"
