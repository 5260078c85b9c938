"""detsim.track.target.asvsuite.bench_target: asv's suite for targets turns a case's outcome into tracks named as
detsim's own (parity 1 - r rounded as detsim's, the image fingerprint, whether a second process reproduces it,
max relative error, sum ratio, peak memory); a failed case fails its parity track with its ending and the last
line of its stderr, and skips the others."""

from __future__ import annotations

import pytest

from detsim.track.base.hashing import fingerprint
from detsim.track.target.asvsuite import bench_target
from detsim.track.target.render import CaseOutcome, Ending
from planted_port import CASE


def test_the_suites_tracks_read_an_outcome_and_a_failed_case_fails_its_parity_track_alone():
    image = CaseOutcome(CASE, Ending.IMAGE, sha256="ab" * 32, hashes=("ab" * 32, "cd" * 32), peak_mb=250.0,
                        parity={"r": 1 - 3.21e-6, "max_rel": 0.02, "sum_ratio": 1.001}).record()
    crash = CaseOutcome("k", Ending.CRASHED, "exited 1: boom", stderr_tail=("reading", "RuntimeError: boom")).record()
    cache = {CASE: image, "k": crash}
    case, reproduced = bench_target.Case(), bench_target.Reproducibility()
    assert case.track_parity_one_minus_r(cache, CASE) == 3.21e-6
    assert case.track_fingerprint(cache, CASE) == fingerprint("ab" * 32)
    assert (case.track_max_relative_error(cache, CASE), case.track_sum_ratio(cache, CASE),
            case.track_peak_memory(cache, CASE)) == (0.02, 1.001, 250.0)
    assert reproduced.track_runs_differ(cache, "process", CASE) == 1.0
    with pytest.raises(RuntimeError, match="k: crashed: exited 1: boom RuntimeError: boom"):
        case.track_parity_one_minus_r(cache, "k")
    with pytest.raises(bench_target.Skip):
        case.track_fingerprint(cache, "k")
