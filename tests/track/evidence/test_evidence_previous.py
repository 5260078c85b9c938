"""Bundle stamps, finding the previous bundle, and the comparison with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from detsim.track.evidence import previous as prev
from detsim.track.evidence.manifest import write_manifest
from detsim.track.evidence.bundle import RETIME_HEADER
from detsim.track.base.exitcodes import BadInput
from detsim.track.evidence.outcomes import Outcomes


def test_stamps_never_collide_and_sort_in_order(tmp_path, monkeypatch):
    monkeypatch.setattr(prev, "utc_stamp", lambda: "20260101T000000Z")
    (tmp_path / "20260101T000000Z").mkdir()
    (tmp_path / ".20260101T000000Z-2.abc.partial").mkdir()
    assert prev.free_stamp(tmp_path) == "20260101T000000Z-3"
    names = ["20260101T000000Z-10", "20260101T000001Z", "20260101T000000Z-2", "20260101T000000Z"]
    assert sorted(names, key=prev.stamp_key) == [
        "20260101T000000Z", "20260101T000000Z-2", "20260101T000000Z-10", "20260101T000001Z"]


def _results(*tests, warnings=()):
    """A results.json of one cpu run: tests as (node id, outcome, seconds, *re-timings)."""
    return {"runs": {"cpu": {"status": "ok", "warnings": [{"text": w, "location": "x.py:1"} for w in warnings]}},
            "tests": [{"device": "cpu", "nodeid": n, "outcome": o, "duration_s": d, "retimed_s": list(r),
                       "retime_factors": [1.0] * len(r)} for n, o, d, *r in tests]}


def compare(current: dict, before: dict, history: list[dict]) -> dict:
    """:func:`prev.compare` on results.json data, as the record results.json holds."""
    return json.loads(json.dumps(prev.compare(Outcomes.from_record(current), Outcomes.from_record(before),
                                              [Outcomes.from_record(h).tests for h in history]).as_record()))


def test_compare_lists_fixed_gone_warnings_added_and_removed():
    previous = _results(("a", "failed", 0.1), ("b", "passed", 0.1), ("c", "passed", 0.1), warnings=["W: old 0x7f00"])
    current = _results(("a", "passed", 0.1), ("b", "skipped", 0.0), ("d", "error", 0.1), warnings=["W: old 0x7e11"])
    comparison = compare(current, previous, [previous])
    assert [(t["nodeid"], t["was"]) for t in comparison["fixed"]] == [("a", "failed")]
    assert [(t["nodeid"], t["was"]) for t in comparison["new_failures"]] == [("d", None)]
    assert [(t["nodeid"], t["was"], t["now"]) for t in comparison["outcome_changes"]] == [("b", "passed", "skipped")]
    assert [t["nodeid"] for t in comparison["added"]] == ["d"]
    assert [t["nodeid"] for t in comparison["removed"]] == ["c"]
    assert comparison["new_warnings"] == comparison["gone_warnings"] == []  # same text, other address


def test_stable_artifacts_ignore_timings_and_retiming():
    one = b"a.py::t\n\n1 test collected in 0.53s\n"
    two = b"a.py::t\n\n1 test collected in 12.01s (0:00:12)\n"
    assert prev.stable_text("collect.log", one) == prev.stable_text("collect.log", two)
    assert prev.stable_text("collect.log", one) != prev.stable_text("collect.log", b"b.py::t\n\n1 test")
    commands = b"cd /x\npython -m pytest a\n"
    rerun = b"# made by: detsim-track evidence a --area x --retime 1\n" + commands
    assert prev.stable_text("commands.txt", rerun + RETIME_HEADER.encode() + b"\nretime\n") == \
        prev.stable_text("commands.txt", commands)
    assert prev.stable_text("commands.txt", commands.replace(b"/x", b"/y")) != \
        prev.stable_text("commands.txt", commands)


def test_warnings_and_runs_that_changed_are_listed():
    before = _results(("a", "passed", 0.1), warnings=["UserWarning: gone"])
    before["runs"]["cuda"] = {"status": "crashed"}
    now = _results(("a", "passed", 0.1), warnings=["UserWarning: new"])
    comparison = prev.compare(Outcomes.from_record(now), Outcomes.from_record(before), [])
    assert [(w.text, w.devices) for w in comparison.new_warnings] == [("UserWarning: new", ("cpu",))]
    assert [w.text for w in comparison.gone_warnings] == ["UserWarning: gone"]
    assert [(r.device, r.was, r.now) for r in comparison.run_changes] == [("cuda", "crashed", "not run")]
    assert comparison.changed and not prev.compare(Outcomes.from_record(now), Outcomes.from_record(now), []).changed


def test_tests_are_added_only_where_the_previous_run_measured():
    before = _results(("a", "passed", 0.1))
    before["runs"]["cpu"]["status"] = "crashed"
    comparison = prev.compare(Outcomes.from_record(_results(("a", "passed", 0.1), ("b", "passed", 0.1))),
                                  Outcomes.from_record(before), [])
    assert comparison.added == ()  # the previous cpu run crashed: b may have existed


def _bundle(area: Path, name: str, measured: bool = True, text: str | None = None) -> Path:
    folder = area / name
    folder.mkdir(parents=True)
    results = {**_results(("a", "passed", float(len(name)))), "measured": measured}
    (folder / "results.json").write_text(text if text is not None else json.dumps(results))
    return folder


def test_history_is_older_measured_bundles_newest_first(tmp_path):
    for name in ("20260101T000000Z", "20260101T000000Z-2", "20260102T000000Z", "20260103T000000Z"):
        _bundle(tmp_path, name)
    _bundle(tmp_path, "20260101T000000Z-3", measured=False)  # recorded a crash only
    _bundle(tmp_path, "notes", measured=True)  # not a stamp
    found = prev.history(tmp_path, "20260102T000000Z")
    assert [b.name for b in found] == ["20260101T000000Z-2", "20260101T000000Z"]
    assert found[0].path == tmp_path / "20260101T000000Z-2"
    assert [t.nodeid for t in found[0].outcomes.tests] == ["a"]
    assert prev.history(tmp_path / "absent", "20260102T000000Z") == []


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"measured": true, "tests": 5}', None])
def test_a_previous_bundle_whose_results_cannot_be_read_is_named_not_passed_over(tmp_path, text):
    _bundle(tmp_path, "20260101T000000Z")
    broken = _bundle(tmp_path, "20260102T000000Z", text=text or "")
    if text is None:
        (broken / "results.json").unlink()
    with pytest.raises(BadInput, match=f"{broken / 'results.json'}: the previous bundle's results cannot be read"):
        prev.history(tmp_path, "20260103T000000Z")
    assert len(prev.history(tmp_path, "20260102T000000Z")) == 1  # older than the broken one: not reached


def test_history_keeps_the_newest_few(tmp_path):
    names = [f"2026010{d}T000000Z" for d in range(1, 9)]
    for name in names:
        _bundle(tmp_path, name)
    found = prev.history(tmp_path, "20260109T000000Z")
    assert [b.name for b in found] == names[::-1][:prev.HISTORY]


def test_changed_artifacts_name_the_differing_keys_and_lines(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    for folder, torch_version, selection in ((old, "2.1", "a.py::t"), (new, "2.2", "b.py::t")):
        folder.mkdir()
        (folder / "env.json").write_text(json.dumps({"torch": torch_version, "cuda": {"available": False}}))
        (folder / "collect.log").write_text(f"{selection}\n\n1 test collected in 0.5s\n")
    (old / "commands.txt").write_text("cd /x\n")
    changes = {c.file: c for c in prev.changed_artifacts(old, new)}
    assert changes["env.json"].detail == ('torch: "2.1" -> "2.2"',)
    assert changes["collect.log"].detail == ("-a.py::t", "+b.py::t")
    assert changes["commands.txt"].detail == ("missing now",) and changes["commands.txt"].was is None
    assert changes["env.json"].was != changes["env.json"].now


def test_artifacts_one_bundle_lacks_are_named_in_the_order_of_the_bundle_files(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    (old / "collect.log").write_text("a.py::t\n")
    (new / "commands.txt").write_text("cd /x\n")
    (old / "env.json").write_text("{}")
    (new / "env.json").write_text("{}")
    changes = prev.changed_artifacts(old, new)
    assert [(c.file, c.detail) for c in changes] == [("collect.log", ("missing now",)),
                                                     ("commands.txt", ("missing in the previous bundle",))]


def test_compare_with_reports_a_previous_bundle_that_no_longer_verifies(tmp_path):
    before = _bundle(tmp_path, "20260101T000000Z")
    write_manifest(before)
    (before / "results.json").write_text(json.dumps({**_results(("a", "failed", 0.1)), "measured": True}))
    past = prev.history(tmp_path, "20260102T000000Z")
    comparison = prev.compare_with(past[0], Outcomes.from_record(_results(("a", "failed", 0.1))), tmp_path, past)
    assert comparison.previous == "20260101T000000Z"
    assert comparison.previous_problems == ("modified: results.json",)
    assert comparison.new_failures == ()  # it failed before too
