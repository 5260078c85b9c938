"""Where the judgement is kept: the link to the latest verdict swapped atomically, a foreign ``latest`` never
replaced, a stored verdict read back or refused in one line naming the file."""

from __future__ import annotations

import json
import os

import pytest

from detsim.track.verdict.stored import COMMAND, JSON_FILE, LATEST, VerdictError, check_latest, latest_file, \
    machines_of, point_latest, read_verdict


VERDICT = {"report": COMMAND, "machine": "m", "regressions": [], "latest": "c", "commits": ["c"], "notes": [],
           "exit": 0}


def _folder(reports, stamp, data):
    folder = reports / stamp
    folder.mkdir(parents=True)
    (folder / JSON_FILE).write_text(json.dumps(data))
    return folder


def test_the_link_follows_the_latest_verdict_and_leaves_nothing_beside_it(tmp_path):
    one = _folder(tmp_path, "20260101T000000Z", {**VERDICT, "n": 1})
    point_latest(one)
    assert read_verdict(latest_file(tmp_path))["n"] == 1
    two = _folder(tmp_path, "20260101T000001Z", {**VERDICT, "n": 2})
    point_latest(two)
    assert read_verdict(latest_file(tmp_path))["n"] == 2 and os.readlink(tmp_path / LATEST) == two.name
    assert sorted(p.name for p in tmp_path.iterdir()) == [one.name, two.name, LATEST]  # no temporary link left


def test_a_latest_that_is_not_the_link_is_refused(tmp_path):
    check_latest(tmp_path)  # nothing there: fine
    (tmp_path / LATEST).mkdir()
    with pytest.raises(VerdictError, match="is not the link to the latest verdict; refusing to replace it"):
        check_latest(tmp_path)


@pytest.mark.parametrize("text, why", [(None, "no verdict there"), ("{cut", "unreadable"),
                                       ('{"report": "detsim-track explain"}', "not a verdict"),
                                       (json.dumps({"report": COMMAND, "machines": {"m": {}}}), "no machine's findings"),
                                       (json.dumps({"report": COMMAND, "machine": "m", "regressions": []}),
                                        "the verdict on m has no latest, commits, notes, exit")])
def test_an_unusable_verdict_is_one_line_naming_it(tmp_path, text, why):
    path = tmp_path / JSON_FILE
    if text is not None:
        path.write_text(text)
    with pytest.raises(VerdictError) as raised:
        read_verdict(path)
    assert str(path) in str(raised.value) and why in str(raised.value) and "\n" not in str(raised.value)


def test_one_machine_is_a_fleet_of_one():
    one = {"report": COMMAND, "machine": "m", "regressions": []}
    fleet = {"report": COMMAND, "machines": {"a": {"machine": "a", "regressions": []},
                                             "b": {"machine": "b", "regressions": []}}}
    assert machines_of(one) == {"m": one} and list(machines_of(fleet)) == ["a", "b"]
