"""detsim.track.target.asvsuite.bench_target: asv's suite for targets turns a case's outcome into tracks named as
detsim's own (parity 1 - r rounded as detsim's, the image fingerprint, whether a second process reproduces it,
max relative error, sum ratio, peak memory); a failed case fails its parity track with its ending and the last
line of its stderr, and skips the others."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from detsim.track.base.hashing import fingerprint
from detsim.track.target.asvsuite import bench_target
from detsim.track.target.render import CaseOutcome
from detsim.track.base.status import Status
from detsim.track.judge.benchmarks import COST_UNIT
from detsim.track.target.build import SUITE_VAR
from detsim.track.target.project import Project
from detsim.track.target.spec import load_spec
from planted_port import CASE, make_port

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden"


def test_the_suites_tracks_read_an_outcome_and_a_failed_case_fails_its_parity_track_alone():
    image = CaseOutcome(CASE, Status.OK, sha256="ab" * 32, hashes=("ab" * 32, "cd" * 32), peak_mb=250.0,
                        parity={"r": 1 - 3.21e-6, "max_rel": 0.02, "sum_ratio": 1.001}).to_dict()
    crash = CaseOutcome("k", Status.CRASHED, "exited 1: boom", stderr_tail=("reading", "RuntimeError: boom")).to_dict()
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


def test_a_count_is_a_cost_track_skipped_without_valgrind_and_failed_when_it_failed(monkeypatch):
    counted = CaseOutcome(CASE, Status.OK, sha256="ab" * 32, hashes=("ab" * 32,) * 2, parity={"r": 1.0},
                          instructions=374_434_551).to_dict()
    failed = {**counted, "instructions": None, "not_counted": "the counted render exited 1: boom"}
    crash = CaseOutcome("k", Status.CRASHED, "exited 1: boom").to_dict()
    cache = {CASE: counted, "f": failed, "k": crash}
    assert bench_target.instructions(cache, CASE) == 374_434_551
    assert CaseOutcome.from_record(counted).instructions == 374_434_551
    with pytest.raises(RuntimeError, match="f: the counted render exited 1: boom"):
        bench_target.instructions(cache, "f")
    with pytest.raises(bench_target.Skip):  # a failed case is its parity track's finding, not its count's
        bench_target.instructions(cache, "k")
    monkeypatch.setattr(bench_target, "not_counted_reason", lambda: "valgrind is not installed")
    with pytest.raises(bench_target.Skip, match="f: not counted: valgrind is not installed"):
        bench_target.instructions(cache, "f")


@pytest.mark.parametrize("count", [True, False])
def test_the_cost_benchmark_exists_only_where_the_spec_turns_counts_on(tmp_path, monkeypatch, count):
    port = make_port(tmp_path, GOLDEN, render="copy", count=count)
    spec = load_spec(port.root)
    project = Project.of(spec, tmp_path / "detsim")
    project.write(spec, ROOT, "m1")
    monkeypatch.setenv(SUITE_VAR, str(project.folder))
    try:
        suite = importlib.reload(bench_target)
        assert suite.CASE_IDS == [CASE] and hasattr(suite, "Cost") is count
        if count:
            assert suite.Cost.params == ([CASE],) and suite.Cost.track_instructions.unit == COST_UNIT
    finally:
        monkeypatch.delenv(SUITE_VAR)
        importlib.reload(bench_target)
