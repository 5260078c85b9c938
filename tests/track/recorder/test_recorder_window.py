"""detsim.track.recorder.window: where each case turns bad along a recorded window, and the window's table;
slices recorded on several machines merged into one history in the repository's order, disagreeing hashes of
a commit both measured named, the turns found across the seams."""

from __future__ import annotations

from pathlib import Path

import pytest

from detsim.track.base.status import Status
from detsim.track.recorder.window import MergeError, Window, merge_rows, turns
from detsim.track.target.criteria import Kind
from detsim.track.target.render import CaseOutcome
from planted_port import make_port

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
ENV = "existing-py_x_bin_python"



def _image(one_minus_r=1e-9, sha="a", hashes=None) -> dict:
    return CaseOutcome("c02", Status.OK, seconds=1.0, sha256=sha * 64,
                       hashes=tuple(h * 64 for h in hashes or sha * 2), parity={"r": 1 - one_minus_r}).to_dict()


def _row(commit: str, outcome: dict | None) -> dict:
    return {"commit": commit * 40, "date": "2025-09-18T11:55:00-07:00", "subject": commit, "build_error": None,
            "reused_from": None, "reused_by": None, "keys": [], "cases": {} if outcome is None else {"c02": outcome}}


def test_each_case_turns_at_its_commit_against_the_last_commit_that_rendered_it():
    crash = CaseOutcome("c02", Status.CRASHED, "exited 1: boom").to_dict()
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
                                                                         .to_dict()), reused[2]])
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
            "reused_by": None, "keys": [], "cases": {"c02": outcome.to_dict()}}


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

