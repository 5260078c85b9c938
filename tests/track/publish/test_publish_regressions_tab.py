"""asv's Regressions tab from the verdict: exactly the flagged findings, in asv's own format (the same entries
asv writes for a benchmark both list), graph paths asv's way, the feed by asv's writer; bad files refused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from detsim.track.judge import confirm as apply
from detsim.track.judge.confirm import confirm
from detsim.track.publish.regressions_tab import LIST, TabError, _graph_path, flagged, has_tab, read_index, tab, \
    tab_json
from detsim.track.judge.verdict import analyse
from publish_assets import asv_published


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A project whose page ``asv publish`` wrote, and asv's own list of regressions there."""
    root = asv_published(tmp_path_factory.mktemp("tab"))
    html = root / "reports" / "html"
    return root, html, json.loads((html / LIST).read_text())["regressions"]


@pytest.fixture(autouse=True)
def _outcomes_kept_per_test(monkeypatch, tmp_path):
    """Each test re-measures afresh: the outcomes go to its own folder, never into the shared project."""
    monkeypatch.setattr(apply, "CACHE", tmp_path / "confirmations.json")


def _verdict(root: Path, remeasured_as, ratio: float):
    """The one machine's verdict, and all machines' as ``verdict.json`` stores them (machine -> verdict)."""
    remeasured_as(default=ratio)
    judgement = confirm(analyse(root), root)
    return judgement.single, {m: r.as_json() for m, r in judgement.reports.items()}


def test_graph_paths_are_asvs():
    from asv.graph import Graph

    params = {"machine": "m/1", "python": "3.11", "numpy": "", "torch": None, "branch": "main"}
    assert _graph_path(params, "bench_x.Y.time_z") == Graph.get_file_path(params, "bench_x.Y.time_z") + ".json"


def test_the_tab_lists_exactly_the_findings_the_verdict_flags(published, remeasured_as):
    root, html, asvs = published
    report, stored = _verdict(root, remeasured_as, 2.0)  # the timing steps re-measured: confirmed
    listed = tab(stored, read_index(html), html)
    names = [entry[0] for entry in listed.entries]
    assert len(names) == len(flagged(stored)) == sum(f.is_verdict for f in report.regressions) == 6
    assert "bench_engine.Throughput.track_pixel_steps_per_second" in names  # asv's page does not judge it
    own = {entry[0]: entry for entry in asvs}
    for entry in listed.entries:
        assert (html / entry[1]).is_file()  # the row's hover graph loads it
        if entry[0] in own:  # a benchmark both list: asv's own entry, field for field (its values aside)
            assert entry[:4] == own[entry[0]][:4]
            assert [jump[:2] for jump in entry[6]] == [jump[:2] for jump in own[entry[0]][6]]
    assert own.keys() <= set(names)
    assert listed.missing == ()
    assert json.loads(tab_json(listed.entries)) == {"regressions": [list(e) for e in listed.entries]}


def test_timing_steps_found_to_be_noise_are_not_listed_and_the_feed_follows(published, remeasured_as):
    root, html, asvs = published
    report, stored = _verdict(root, remeasured_as, 1.0)  # re-measuring finds no step: noise
    listed = tab(stored, read_index(html), html)
    assert {e[0] for e in asvs} - {e[0] for e in listed.entries} == {
        "bench_engine.EngineSweep.time_simulate(128, 'float64')", "bench_engine.EngineSweep.time_simulate(256, 'float64')"}
    assert not any(e[0].startswith("bench_engine.") for e in listed.entries)
    feed = listed.feed.decode()
    assert feed.count("<entry>") == len(listed.entries) == 3 and "REGRESSED parity a01_cubic_mosflm_center" in feed
    assert "EngineSweep" not in feed


def test_a_finding_the_page_has_no_graph_of_is_named_not_listed(published, remeasured_as, tmp_path):
    root, html, _ = published
    report, stored = _verdict(root, remeasured_as, 1.0)
    index = read_index(html)
    index = {**index, "graph_param_list": [{**p, "machine": "elsewhere"} for p in index["graph_param_list"]]}
    listed = tab(stored, index, html)
    assert listed.entries == () and len(listed.missing) == 3
    assert "bench_parity.track_parity_a01_cubic_mosflm_center on fixture-2cpu" in listed.missing


@pytest.mark.parametrize("name, text, message", [
    ("regressions.json", '{"mine": 1}', "regressions.json: not asv's (no regressions)"),
    ("regressions.json", "not json", "regressions.json: not asv's"),
    ("index.json", '{"revision_to_hash": {}}', "index.json: not asv's (no revision_to_hash, benchmarks"),
])
def test_files_that_are_not_asvs_are_refused(tmp_path, name, text, message):
    (tmp_path / "index.json").write_text(json.dumps({k: {} for k in ("revision_to_hash", "benchmarks", "params")}
                                                    | {"graph_param_list": []}))
    (tmp_path / "regressions.json").write_text('{"regressions": []}')
    assert has_tab(tmp_path) and read_index(tmp_path)["graph_param_list"] == []
    (tmp_path / name).write_text(text)
    with pytest.raises(TabError) as raised:
        read_index(tmp_path)
    assert message in str(raised.value) and str(tmp_path / name) in str(raised.value)
    assert not has_tab(tmp_path / "nothing")


def test_with_two_machines_each_entry_is_its_machines_graph_as_asv_lists_it(tmp_path, remeasured_as):
    root = asv_published(tmp_path)
    asv = root / "results" / "asv"
    shutil.copytree(asv / "fixture-2cpu", asv / "fixture-b")
    (asv / "fixture-b" / "machine.json").write_text(json.dumps({"machine": "fixture-b", "version": 1}))
    for path in (asv / "fixture-b").glob("*-virtualenv*.json"):
        data = json.loads(path.read_text())
        data["params"]["machine"] = "fixture-b"
        path.write_text(json.dumps(data))
    done = subprocess.run([sys.executable, "-m", "asv", "publish"], cwd=root, capture_output=True, text=True,
                          env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    html = root / "reports" / "html"
    own = {(e[0], e[2]["machine"]): e for e in json.loads((html / LIST).read_text())["regressions"]}
    remeasured_as(default=1.0)
    judgement = confirm(analyse(root), root)
    listed = tab({m: r.as_json() for m, r in judgement.reports.items()}, read_index(html), html)
    noise = {key for key in own if key[0].startswith("bench_engine.")}  # asv's timing steps, noise here
    assert len(noise) == 4 and sorted((e[0], e[2]["machine"]) for e in listed.entries) == sorted(set(own) - noise)
    for entry in listed.entries:
        mine = own[(entry[0], entry[2]["machine"])]
        assert entry[:4] == mine[:4] and f"machine-{entry[2]['machine']}" in entry[1] and (html / entry[1]).is_file()
