"""detsim.track.judge.history and .series: asv's results read once into one tidy frame, and the judge's series
read from it."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from detsim.track.judge.history import COLUMNS, frame_of, history_frame
from detsim.track.judge.series import series_of
from detsim.track.judge.results_files import ResultsError

DATA = Path(__file__).resolve().parents[2] / "data" / "asv"


def _file(commit: str, results: dict, date: int = 1_700_000_000_000) -> dict:
    return {"commit_hash": commit, "env_name": "env", "date": date,
            "result_columns": ["result", "params", "version", "samples", "stats_q_25", "stats_q_75"],
            "results": results}


BENCHMARKS = {"b.time_x": {"type": "time", "unit": "seconds", "version": "1", "params": [["1", "2"]],
                           "param_names": ["n"]},
              "b.track_old": {"type": "track", "unit": "unit", "version": "2"}}


def test_rows_become_points_per_parameter_combination():
    files = [_file("c1", {"b.time_x": [[1.0, 2.0], None, "1", [[0.9, 1.1], [2.0]], [0.9, 2.0], [1.1, 2.0]],
                          "b.track_old": [[5.0], None, "1"]}),
             _file("c2", {"b.time_x": [None, None, "1"], "gone.time_y": [[1.0]]})]
    series = {s.params: s for s in series_of(frame_of(files, BENCHMARKS, {"regressions_thresholds": {"b": 0.5}}))}
    assert set(series) == {"(n=1)", "(n=2)"}  # track_old: measured by an older version; gone: not in the suite
    one = series["(n=1)"]
    assert (one.label, one.family, one.unit, one.threshold) == ("b.time_x(n=1)", "timing", "seconds", 0.5)
    assert [p.commit for p in one.points] == ["c1", "c2"]
    assert one.points[0].samples == (0.9, 1.1) and series["(n=2)"].points[0].value == 2.0
    assert one.points[1].value is None  # c2: the whole benchmark failed
    with pytest.raises(ResultsError, match="1 values for 2 parameter combinations"):
        frame_of([_file("c" * 40, {"b.time_x": [[1.0], None, "1"]})], BENCHMARKS, {})


def test_a_failure_and_a_skip_are_told_apart_by_their_status_and_read_back_as_the_judge_reads_them():
    files = [_file("c1", {"b.time_x": [[1.0, float("nan")], None, "1"]}), _file("c2", {"b.time_x": [None, None, "1"]})]
    frame = frame_of(files, BENCHMARKS, {}, machine="m")
    assert list(frame["status"]) == ["ok", "skipped", "failed", "failed"]
    assert frame["value"].isna().tolist() == [False, True, True, True]
    points = {s.params: s.points for s in series_of(frame)}
    assert points["(n=1)"][1].value is None and math.isnan(points["(n=2)"][0].value)
    assert set(frame["machine"]) == {"m"} and frame["date"].dt.tz is not None


def test_the_spread_is_asvs_interquartile_range_and_nan_without_one():
    files = [_file("c1", {"b.time_x": [[1.0, 2.0], None, "1", None, [0.9, 1.5], [1.2, 2.5]]}),
             _file("c2", {"b.time_x": [[1.0, 2.0], None, "1"]})]
    spread = frame_of(files, BENCHMARKS, {})["spread"].tolist()
    assert spread[:2] == pytest.approx([0.3, 1.0]) and all(math.isnan(s) for s in spread[2:])


def test_a_fixture_history_is_one_tidy_frame_in_commit_order():
    frame = history_frame(DATA / "regressed")
    assert tuple(frame.columns) == COLUMNS and len(frame) > 0
    assert frame["date"].is_monotonic_increasing  # outside git: ordered by the dates asv stored
    assert frame["machine"].unique().tolist() == ["fixture-2cpu"]
    parity = frame[frame["family"] == "parity"]
    a01 = parity[parity["case"] == "a01_cubic_mosflm_center"]["value"].tolist()
    assert set(parity["case"]) == {"a01_cubic_mosflm_center", "o01_polar_0.9"} and a01[-1] == pytest.approx(0.0063)
    # one row per series and commit: nothing read twice
    assert not frame.duplicated(["commit", "environment", "benchmark", "parameters"]).any()
    assert len(series_of(frame)) == len(frame.groupby(["environment", "benchmark", "parameters"]))
    with pytest.raises(ResultsError, match="no results for machine 'elsewhere'"):
        history_frame(DATA / "regressed", "elsewhere")
    assert isinstance(frame["date"].iloc[0], pd.Timestamp)


def test_a_parity_no_threshold_row_names_is_exact_and_other_benchmarks_take_asvs_default():
    benchmarks = {"bench_target.Case.track_parity_one_minus_r": {"type": "track", "unit": "1 - r", "version": "1"},
                  "b.time_x": {"type": "time", "unit": "seconds", "version": "1"}}
    files = [_file("c1", {"bench_target.Case.track_parity_one_minus_r": [[1e-9], None, "1"],
                          "b.time_x": [[1.0], None, "1"]})]
    thresholds = dict(zip(frame_of(files, benchmarks, {})["family"], frame_of(files, benchmarks, {})["threshold"]))
    assert thresholds == {"parity": 0.0, "timing": 0.05}
    named = frame_of(files, benchmarks, {"regressions_thresholds": {r"bench_target\.Case\.track_parity_": 9.0}})
    assert named["threshold"].iloc[0] == 9.0
