"""detsim.track.judge.skips: why each series was skipped, grouped by reason, as the verdict counts them."""

from __future__ import annotations

from pathlib import Path

from detsim.track.judge.analysis import analyse
from detsim.track.judge.series import Series
from detsim.track.judge.skips import CASE_FAILED, NO_BASELINE, NO_CUDA, NO_DEVICE_COST, NO_VALGRIND, TRITON_ON_CPU, \
    UNKNOWN, group_skips, skip_reason

DATA = Path(__file__).resolve().parents[2] / "data" / "asv"


def test_the_skips_at_the_latest_commit_are_counted_with_their_reason():
    report = analyse(DATA / "otherhost").single
    assert report.skipped == 2 and report.measured > 0
    [skipped] = report.skips
    assert skipped.text().startswith("2 image hashes (") and "no baseline for this machine class" in skipped.reason.why
    assert sorted(skipped.labels) == ["bench_determinism.track_hash_changed_a01_cubic_mosflm_center",
                                      "bench_determinism.track_hash_changed_o01_polar_0_9"]
    assert report.as_json()["skips"] == [skipped.to_dict()]


def _skip_series(name: str, family: str, params: str = "", case: str | None = None) -> Series:
    return Series(env="e", name=name, params=params, family=family, unit="", case=case)


CUDA = _skip_series("bench_engine.EngineModes.time_simulate", "timing", "(mode='eager', dtype='float64', device='cuda')")
TRITON_CUDA = _skip_series("bench_engine.EngineModes.time_simulate", "timing",
                      "(mode='triton', dtype='float64', device='cuda')")
TRITON_CPU = _skip_series("bench_engine.EngineModes.time_simulate", "timing",
                     "(mode='triton', dtype='float64', device='cpu')")
HASH = _skip_series("bench_determinism.track_hash_changed_a01", "determinism", case="a01")
COUNT = _skip_series("bench_determinism.CompiledHashes.track_cases_changed", "hash count")
COST = _skip_series("bench_cost.InstructionCounts.track_instructions", "cost", "(workload='P1@64')")
CLI = _skip_series("bench_cli.DetsimCommand.time_process", "timing")


def test_each_skip_is_given_the_reason_its_benchmark_skips_for():
    assert [skip_reason(s, class_baseline=False) for s in (CUDA, TRITON_CUDA, TRITON_CPU, HASH, COUNT, COST, CLI)] \
        == [NO_CUDA, NO_CUDA, TRITON_ON_CPU, NO_BASELINE, NO_BASELINE, NO_VALGRIND, UNKNOWN]
    # with a baseline of this machine's class stored, a skipped hash is not for want of one
    assert skip_reason(HASH, class_baseline=True) == UNKNOWN


def test_the_other_tracks_of_a_case_that_failed_are_skipped_for_that_reason():
    parity_b01 = _skip_series("bench_target.Case.track_fingerprint", "fingerprint", "(case='b01')", case="b01")
    timing_b01 = _skip_series("bench_target.Timing.time_render", "timing", "(case='b01')", case="b01")
    timing_a01 = _skip_series("bench_target.Timing.time_render", "timing", "(case='a01')", case="a01")
    groups = group_skips([parity_b01, timing_b01, timing_a01, CUDA], class_baseline=True, failed_cases={"b01"})
    assert [(g.reason, len(g.labels)) for g in groups] == [(CASE_FAILED, 2), (NO_CUDA, 1), (UNKNOWN, 1)]
    assert groups[0].text() == "2 tracks of failed cases (their case failed: see NOT MEASURED)"


def test_skips_are_grouped_by_reason_largest_first_the_unknown_last():
    groups = group_skips([CLI, CUDA, HASH, TRITON_CUDA, HASH, HASH, TRITON_CPU], class_baseline=False)
    assert [(g.reason, len(g.labels)) for g in groups] == [(NO_BASELINE, 3), (NO_CUDA, 2), (TRITON_ON_CPU, 1),
                                                      (UNKNOWN, 1)]
    assert groups[0].text() == "3 image hashes (no baseline for this machine class)"
    assert groups[2].text() == "1 triton benchmark (GPU only)"
    assert groups[1].to_dict() == {"what": "CUDA benchmarks", "why": "no GPU here",
                                  "benchmarks": [CUDA.label, TRITON_CUDA.label]}
    assert group_skips([], class_baseline=False) == ()


def test_a_device_cost_skipped_is_its_own_reason_not_valgrind_nor_a_gpu():
    launches = Series(env="e", name="bench_device_cost.LaunchesPerRender.track_launches", params="(mode='triton')",
                      family="cost", unit="launches")
    kernel = Series(env="e", name="bench_device_cost.FusedKernel.track_registers", params="(dtype='float32')",
                    family="cost", unit="registers")
    assert skip_reason(launches, True) is skip_reason(kernel, True) is NO_DEVICE_COST
