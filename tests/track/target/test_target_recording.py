"""detsim.track.target.recording: a target's asv project (its config names the target, the suite for targets
and the thresholds table's rows), a twin commit taking the measured commit's asv results under its own hash
and date, the rows read back, and asv's suite for targets turning an outcome into tracks (a failed case
fails its parity track with its ending, skips the rest: tests/track/asvsuite/). The recording through asv itself:
tests/track/commands/test_commands_record.py (slow).

Also where each case turns bad along a recorded window, and the window's table.

Also slices recorded on several machines merged into one history in the
repository's order, disagreeing hashes of a commit both measured named, the turns found across the seams."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from detsim.track.target.build import Measured
from detsim.track.target.criteria import Kind
from detsim.track.target.departure import departure, stored
from detsim.track.target.recording import MergeError, Project, TargetRecorder, SUITE_DIR, Window, merge_rows, turns
from detsim.track.target.render import CaseOutcome
from detsim.track.base.status import Status
from detsim.track.target.spec import load_spec
from detsim.track.judge.results_files import TARGET_SPEC
from detsim.track.judge.thresholds import TARGET_COST, TARGET_MEMORY, TARGET_PARITY, TARGET_TIMING
from planted_history import git
from planted_port import CASE, make_port


GOLDEN = Path(__file__).resolve().parents[2] / "golden"
ENV = "existing-py_x_bin_python"


def test_the_project_names_the_target_the_suite_and_the_tables_thresholds(tmp_path):
    port = make_port(tmp_path, GOLDEN, render="copy")
    spec = load_spec(port.root)
    project = Project.of(spec, tmp_path / "detsim")
    project.write(spec, tmp_path / "detsim", "m1")
    conf = json.loads(project.config.read_text())
    assert project.folder == (tmp_path / "detsim" / "results" / "targets" / "port").resolve()
    assert (conf["repo"], conf["benchmark_dir"], conf["environment_type"], conf["branches"]) == (
        str(port.root.resolve()), str(SUITE_DIR), "existing", ["main"])
    assert conf["regressions_thresholds"] == {r"bench_target\.Case\.track_parity_": TARGET_PARITY.value - 1,
                                              r"bench_target\.Case\.track_peak_memory": TARGET_MEMORY.value,
                                              r"bench_target\.Timing\.": TARGET_TIMING.value,
                                              r"bench_target\.Cost\.": TARGET_COST.value}
    assert conf[TARGET_SPEC] is None  # the repository's own spec: bisect finds it without --spec
    suite = json.loads((project.folder / "suite.json").read_text())
    assert suite["target"] == str(port.root.resolve()) and suite["spec"] == str(port.root / "detsim-target.toml")
    assert suite["outcomes"] == str(project.folder / "outcomes" / "m1")
    elsewhere = tmp_path / "specs" / "port.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text((port.root / "detsim-target.toml").read_text())
    project.write(load_spec(port.root, elsewhere), tmp_path / "detsim", "m1")
    assert json.loads(project.config.read_text())[TARGET_SPEC] == str(elsewhere.resolve())


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
    image = CaseOutcome(CASE, Status.OK, sha256="a" * 64, hashes=("a" * 64,) * 2, parity={"r": 1.0}).record()
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


def test_a_departing_image_is_stored_and_read_back_by_commit_and_case(tmp_path):
    reference = 1.0 + np.random.default_rng(1).random((32, 32))
    image = reference.copy()
    image[:2, :] *= 1.5
    record = departure(image, reference)
    folder = Project(tmp_path).outcomes("m1")
    folder.mkdir(parents=True)
    (folder / f"{'c' * 40}.json").write_text(json.dumps({"commit": "c" * 40, "cases": {
        CASE: {"status": "image", "departure": record}, "other": {"status": "crashed"}}}))
    assert stored(tmp_path, "c" * 40, CASE) == record and stored(tmp_path, "cccccccc", CASE)["where"] == "edges"
    assert stored(tmp_path, "c" * 40, "other") is None and stored(tmp_path, "d" * 40, CASE) is None
    (folder / f"{'e' * 40}.json").write_text("{")
    with pytest.raises(ValueError, match="not a readable row"):
        stored(tmp_path, "e" * 40, CASE)



def _image(one_minus_r=1e-9, sha="a", hashes=None) -> dict:
    return CaseOutcome("c02", Status.OK, seconds=1.0, sha256=sha * 64,
                       hashes=tuple(h * 64 for h in hashes or sha * 2), parity={"r": 1 - one_minus_r}).record()


def _row(commit: str, outcome: dict | None) -> dict:
    return {"commit": commit * 40, "date": "2025-09-18T11:55:00-07:00", "subject": commit, "build_error": None,
            "reused_from": None, "reused_by": None, "keys": [], "cases": {} if outcome is None else {"c02": outcome}}


def test_each_case_turns_at_its_commit_against_the_last_commit_that_rendered_it():
    crash = CaseOutcome("c02", Status.CRASHED, "exited 1: boom").record()
    rows = [_row("a", _image()), _row("b", _image()), _row("c", _image(5e-8, sha="c")), _row("d", crash),
            _row("e", _image(5e-8, sha="c")), _row("f", _image(5e-8, sha="f", hashes="fg")), _row("g", None),
            _row("h", _image(5e-8, sha="h"))]
    found = [(t.kind, t.commit[0], t.previous and t.previous[0]) for t in turns(rows)]
    assert found == [(Kind.PARITY, "c", "b"),  # parity first: its hash changed too, one turn names it
                     (Kind.BROKEN, "d", "c"),  # the fix at e is no turn
                     (Kind.IRREPRODUCIBLE, "f", None),  # its hash is no fact: no CHANGED turn, and
                     (Kind.CHANGED, "h", "e")]  # h is compared with e (g rendered nothing of c02)


def test_the_table_has_a_line_per_measured_commit_and_one_per_run_of_reused_ones():
    reused = [{**_row(c, _image()), "reused_from": "a" * 40, "reused_by": "sources"} for c in "cde"]
    window = Window("port", rows=[_row("a", _image()), *reused[:2], _row("b", CaseOutcome("c02", Status.NO_IMAGE, "x")
                                                                         .record()), reused[2]])
    window.turns = turns(window.rows)
    head, first, run, second, last = window.table()
    assert head.split()[:6] == ["commit", "date", "rendered", "parity", "min", "r"]
    assert first.split()[:5] == ["aaaaaaaaaa", "2025-09-18", "1/1", "1", "1.00000000"]
    assert run.split() == ["2", "commit(s)", "cccccccc..dddddddd:", "the", "results", "of", "aaaaaaaa", "(same",
                           "sources)"]
    assert second.split()[2:4] == ["0/1", "0"] and second.endswith("broken c02")
    assert "1 commit(s) eeeeeeee: the results of aaaaaaaa" in last


def _machine_row(commit: str, machine: str, sha: str = "a", status: Status = Status.OK) -> dict:
    outcome = (CaseOutcome("c02", status, "wrote 4 bytes") if status.is_failure else
               CaseOutcome("c02", status, seconds=1.0, sha256=sha * 64, hashes=(sha * 64,) * 2, parity={"r": 1.0}))
    return {"commit": commit, "machine": machine, "date": "", "subject": "", "build_error": None, "reused_from": None,
            "reused_by": None, "keys": [], "cases": {"c02": outcome.record()}}


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    return make_port(tmp_path_factory.mktemp("merge"), GOLDEN, render="copy")


def test_slices_merge_in_history_order_and_turn_across_their_seam(port):
    c = port.commits
    later = {"target": "port", "rows": [_machine_row(c["docs3"], "m2"), _machine_row(c["shrink"], "m2", status=Status.WRONG_SIZE)]}
    earlier = {"target": "port", "rows": [_machine_row(c["base"], "m1"), _machine_row(c["docs1"], "m1"), _machine_row(c["docs3"], "m1", "b")]}
    rows, notes = merge_rows(port.root, [later, earlier])
    assert [r["commit"] for r in rows] == [c["base"], c["docs1"], c["docs3"], c["shrink"]]
    assert rows[2]["machine"] == "m2"  # the first slice's row is kept
    assert notes == [f"{c['docs3'][:10]} c02: image {'a' * 12} on m2, {'b' * 12} on m1"]
    assert [(t.kind, t.commit) for t in turns(rows)] == [(Kind.BROKEN, c["shrink"])]


def test_slices_of_other_targets_or_commits_are_refused(port):
    with pytest.raises(MergeError, match="different targets"):
        merge_rows(port.root, [{"target": "port", "rows": []}, {"target": "other", "rows": []}])
    with pytest.raises(MergeError, match="does not have"):
        merge_rows(port.root, [{"target": "port", "rows": [_machine_row("f" * 40, "m1")]}])
    assert merge_rows(port.root, [{"target": "port", "rows": []}]) == ([], [])


def test_what_a_recording_leaves_out_says_why_the_counts_are_missing(tmp_path, monkeypatch):
    from detsim.track.target import recording

    off = load_spec(make_port(tmp_path / "off", GOLDEN, render="copy", count=False).root)
    on = load_spec(make_port(tmp_path / "on", GOLDEN, render="copy").root)
    monkeypatch.setattr(recording, "not_counted_reason", lambda: None)
    assert recording.not_measured(off).startswith(f"instruction counts (off in {off.source}; count_instructions = "
                                                  "true turns them on")
    assert recording.not_measured(on) == recording.PATHS_NOT_MEASURED
    monkeypatch.setattr(recording, "not_counted_reason", lambda: "valgrind is not installed")
    said = recording.not_measured(on)
    assert said == f"instruction counts (valgrind is not installed); {recording.PATHS_NOT_MEASURED}"
