"""detsim.track.judge.commits: where asv.conf.json's regressions_first_commits starts judging a benchmark."""

from __future__ import annotations


import pytest

from detsim.track.judge.results_files import ResultsError
from detsim.track.judge.commits import first_commit_cut, resolve_first_commits
from planted_history import empty_commits


def test_first_commits_start_detection_after_the_named_commit():
    order = ["aaa1", "bbb2", "ccc3", "ddd4"]
    conf = {"regressions_first_commits": {r"bench_engine\.": "bbb", r"bench_engine\.Engine": "ccc3",
                                          r"bench_engine\.MachineReference\.": None,
                                          r"bench_engine\.Throughput\.": None}}
    assert first_commit_cut(conf, "bench_engine.EngineSweep.time_simulate", "timing", order) == 3  # the latest wins
    assert first_commit_cut(conf, "bench_engine.Other.time_x", "timing", order) == 2
    assert first_commit_cut(conf, "bench_cli.DetsimCommand.time_x", "timing", order) == 0
    assert first_commit_cut(conf, "bench_engine.MachineReference.time_reference", "reference", order) is None
    # null switches asv's own detection off; throughput is still checked here (the right way up)
    assert first_commit_cut(conf, "bench_engine.Throughput.track_x", "throughput", order) == 2
    assert first_commit_cut({}, "x", "timing", order) == 0


def test_a_first_commit_git_knows_but_did_not_record_starts_detection_after_it(tmp_path):
    c = empty_commits(tmp_path, ["zero", "one", "two", "three"])
    order = [c[0], c[1], c[3]]  # c[2] was never recorded
    conf = {"regressions_first_commits": {"a": c[2][:8], "b": c[0][:8], "off": None}}
    resolved = resolve_first_commits(tmp_path, conf, order)
    assert resolved == {"a": c[1], "b": c[0][:8], "off": None}
    assert first_commit_cut({"regressions_first_commits": resolved}, "a.x", "timing", order) == 2
    early = resolve_first_commits(tmp_path, conf, [c[1], c[3]])["b"]  # named before anything recorded
    assert first_commit_cut({"regressions_first_commits": {"b": early}}, "b.x", "timing", [c[1], c[3]]) == 0


def test_an_unknown_first_commit_is_refused_naming_it(tmp_path):
    c = empty_commits(tmp_path, ["zero"])
    with pytest.raises(ResultsError, match=r"asv.conf.json: regressions_first_commits\['x'\] = 'deadbeef': no such"):
        resolve_first_commits(tmp_path, {"regressions_first_commits": {"x": "deadbeef"}}, c)
