"""detsim.track.recorder.target: a twin commit taking the measured commit's asv results under its own hash and
date, and what a target's recording leaves out, with why (the recording through asv itself:
tests/track/commands/test_commands_record.py, slow)."""

from __future__ import annotations

import json
from pathlib import Path

from detsim.track.base.status import Status
from detsim.track.recorder import target as recording
from detsim.track.recorder.target import TargetRecorder
from detsim.track.target.build import Measured
from detsim.track.target.project import Project
from detsim.track.target.render import CaseOutcome
from detsim.track.target.spec import load_spec
from planted_history import git
from planted_port import CASE, make_port

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
ENV = "existing-py_x_bin_python"



def test_a_twin_takes_the_measured_commits_asv_results_under_its_own_hash_and_date(tmp_path):
    port = make_port(tmp_path, GOLDEN, render="copy")
    spec = load_spec(port.root)
    base, docs = port.commits["base"], port.commits["docs1"]
    project = Project.of(spec, tmp_path)
    results = project.results("m1")
    results.mkdir(parents=True)
    asv_file = {"version": 2, "commit_hash": base, "env_name": ENV, "date": 1, "result_columns": ["result"],
                "results": {"bench_target.Case.track_sum_ratio": [[1.0]]}}
    (results / f"{base[:8]}-{ENV}.json").write_text(json.dumps(asv_file))
    image = CaseOutcome(CASE, Status.OK, sha256="a" * 64, hashes=("a" * 64,) * 2, parity={"r": 1.0}).to_dict()
    recorder = TargetRecorder(spec, project, tmp_path, "m1")
    measured = recorder._store(base, {"build_error": None, "keys": ["k"], "cases": {CASE: image}})
    row = recorder._reused(docs, Measured(docs, measured["cases"], base, "sources", keys=("k",)))
    twin = json.loads((results / f"{docs[:8]}-{ENV}.json").read_text())
    assert twin["commit_hash"] == docs and twin["results"] == asv_file["results"]
    assert twin["date"] == int(git(port.root, "log", "-1", "--format=%at", docs)) * 1000
    assert (row["reused_from"], row["reused_by"], row["cases"]) == (base, "sources", {CASE: image})
    assert recorder.recorded(docs) == row and recorder.recorded(port.commits["edge"]) is None
    assert sorted(r["commit"] for r in project.rows("m1")) == sorted([base, docs])
    again = TargetRecorder(spec, project, tmp_path, "m1")  # a later run's table of twins holds what was measured
    assert again.reuse.get("k")[0] == base



def test_what_a_recording_leaves_out_says_why_the_counts_are_missing(tmp_path, monkeypatch):
    off = load_spec(make_port(tmp_path / "off", GOLDEN, render="copy", count=False).root)
    on = load_spec(make_port(tmp_path / "on", GOLDEN, render="copy").root)
    monkeypatch.setattr(recording, "not_counted_reason", lambda: None)
    assert recording.not_measured(off).startswith(f"instruction counts (off in {off.source}; count_instructions = "
                                                  "true turns them on")
    assert recording.not_measured(on) == recording.PATHS_NOT_MEASURED
    monkeypatch.setattr(recording, "not_counted_reason", lambda: "valgrind is not installed")
    said = recording.not_measured(on)
    assert said == f"instruction counts (valgrind is not installed); {recording.PATHS_NOT_MEASURED}"
