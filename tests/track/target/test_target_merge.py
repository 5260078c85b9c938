"""detsim.track.target.merge: slices recorded on several machines merged into one history in the
repository's order, disagreeing hashes of a commit both measured named, the turns found across the seams."""

from __future__ import annotations

from pathlib import Path

import pytest

from detsim.track.target.criteria import Kind
from detsim.track.target.merge import MergeError, merge_rows
from detsim.track.target.outcome import CaseOutcome, Ending
from detsim.track.target.window import turns
from planted_port import make_port

GOLDEN = Path(__file__).resolve().parents[2] / "golden"


def _row(commit: str, machine: str, sha: str = "a", status: Ending = Ending.IMAGE) -> dict:
    outcome = (CaseOutcome("c02", status, "wrote 4 bytes") if status.is_failure else
               CaseOutcome("c02", status, seconds=1.0, sha256=sha * 64, hashes=(sha * 64,) * 2, parity={"r": 1.0}))
    return {"commit": commit, "machine": machine, "date": "", "subject": "", "build_error": None, "reused_from": None,
            "reused_by": None, "keys": [], "cases": {"c02": outcome.record()}}


@pytest.fixture(scope="module")
def port(tmp_path_factory):
    return make_port(tmp_path_factory.mktemp("merge"), GOLDEN, render="copy")


def test_slices_merge_in_history_order_and_turn_across_their_seam(port):
    c = port.commits
    later = {"target": "port", "rows": [_row(c["docs3"], "m2"), _row(c["shrink"], "m2", status=Ending.WRONG_SIZE)]}
    earlier = {"target": "port", "rows": [_row(c["base"], "m1"), _row(c["docs1"], "m1"), _row(c["docs3"], "m1", "b")]}
    rows, notes = merge_rows(port.root, [later, earlier])
    assert [r["commit"] for r in rows] == [c["base"], c["docs1"], c["docs3"], c["shrink"]]
    assert rows[2]["machine"] == "m2"  # the first slice's row is kept
    assert notes == [f"{c['docs3'][:10]} c02: image {'a' * 12} on m2, {'b' * 12} on m1"]
    assert [(t.kind, t.commit) for t in turns(rows)] == [(Kind.BROKEN, c["shrink"])]


def test_slices_of_other_targets_or_commits_are_refused(port):
    with pytest.raises(MergeError, match="different targets"):
        merge_rows(port.root, [{"target": "port", "rows": []}, {"target": "other", "rows": []}])
    with pytest.raises(MergeError, match="does not have"):
        merge_rows(port.root, [{"target": "port", "rows": [_row("f" * 40, "m1")]}])
    assert merge_rows(port.root, [{"target": "port", "rows": []}]) == ([], [])
