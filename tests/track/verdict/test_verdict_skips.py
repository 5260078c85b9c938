"""Why a series was skipped, read from the series (asv keeps no reason): CUDA parameters, triton on a CPU,
image hashes of a machine class with no baseline, counts without valgrind; grouped largest first."""

from __future__ import annotations

from detsim.track.history.series import Series
from detsim.track.verdict.skips import NO_BASELINE, NO_CUDA, NO_VALGRIND, TRITON_ON_CPU, UNKNOWN, group_skips, \
    skip_reason


def _series(name: str, family: str, params: str = "", case: str | None = None) -> Series:
    return Series(env="e", name=name, params=params, family=family, unit="", case=case)


CUDA = _series("bench_engine.EngineModes.time_simulate", "timing", "(mode='eager', dtype='float64', device='cuda')")
TRITON_CUDA = _series("bench_engine.EngineModes.time_simulate", "timing",
                      "(mode='triton', dtype='float64', device='cuda')")
TRITON_CPU = _series("bench_engine.EngineModes.time_simulate", "timing",
                     "(mode='triton', dtype='float64', device='cpu')")
HASH = _series("bench_determinism.track_hash_changed_a01", "determinism", case="a01")
COUNT = _series("bench_determinism.CompiledHashes.track_cases_changed", "hash count")
COST = _series("bench_cost.InstructionCounts.track_instructions", "cost", "(workload='P1@64')")
CLI = _series("bench_cli.DetsimCommand.time_process", "timing")


def test_each_skip_is_given_the_reason_its_benchmark_skips_for():
    assert [skip_reason(s, class_baseline=False) for s in (CUDA, TRITON_CUDA, TRITON_CPU, HASH, COUNT, COST, CLI)] \
        == [NO_CUDA, NO_CUDA, TRITON_ON_CPU, NO_BASELINE, NO_BASELINE, NO_VALGRIND, UNKNOWN]
    # with a baseline of this machine's class stored, a skipped hash is not for want of one
    assert skip_reason(HASH, class_baseline=True) == UNKNOWN


def test_skips_are_grouped_by_reason_largest_first_the_unknown_last():
    groups = group_skips([CLI, CUDA, HASH, TRITON_CUDA, HASH, HASH, TRITON_CPU], class_baseline=False)
    assert [(g.reason, len(g.labels)) for g in groups] == [(NO_BASELINE, 3), (NO_CUDA, 2), (TRITON_ON_CPU, 1),
                                                      (UNKNOWN, 1)]
    assert groups[0].text() == "3 image hashes (no baseline for this machine class)"
    assert groups[2].text() == "1 triton benchmark (GPU only)"
    assert groups[1].record() == {"what": "CUDA benchmarks", "why": "no GPU here",
                                  "benchmarks": [CUDA.label, TRITON_CUDA.label]}
    assert group_skips([], class_baseline=False) == ()
