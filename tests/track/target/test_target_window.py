"""detsim.track.target.window: where each case turns bad along a recorded window, and the window's table."""

from __future__ import annotations

from detsim.track.target.criteria import Kind
from detsim.track.target.outcome import CaseOutcome, Ending
from detsim.track.target.window import Window, turns


def _image(one_minus_r=1e-9, sha="a", hashes=None) -> dict:
    return CaseOutcome("c02", Ending.IMAGE, seconds=1.0, sha256=sha * 64,
                       hashes=tuple(h * 64 for h in hashes or sha * 2), parity={"r": 1 - one_minus_r}).record()


def _row(commit: str, outcome: dict | None) -> dict:
    return {"commit": commit * 40, "date": "2025-09-18T11:55:00-07:00", "subject": commit, "build_error": None,
            "reused_from": None, "reused_by": None, "keys": [], "cases": {} if outcome is None else {"c02": outcome}}


def test_each_case_turns_at_its_commit_against_the_last_commit_that_rendered_it():
    crash = CaseOutcome("c02", Ending.CRASHED, "exited 1: boom").record()
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
    window = Window("port", rows=[_row("a", _image()), *reused[:2], _row("b", CaseOutcome("c02", Ending.NO_IMAGE, "x")
                                                                         .record()), reused[2]])
    window.turns = turns(window.rows)
    head, first, run, second, last = window.table()
    assert head.split()[:6] == ["commit", "date", "rendered", "parity", "min", "r"]
    assert first.split()[:5] == ["aaaaaaaaaa", "2025-09-18", "1/1", "1", "1.00000000"]
    assert run.split() == ["2", "commit(s)", "cccccccc..dddddddd:", "the", "results", "of", "aaaaaaaa", "(same",
                           "sources)"]
    assert second.split()[2:4] == ["0/1", "0"] and second.endswith("broken c02")
    assert "1 commit(s) eeeeeeee: the results of aaaaaaaa" in last
