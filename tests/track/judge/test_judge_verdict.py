"""detsim.track.judge.verdict: the report of one machine or a fleet, its exit code, and the stored verdict."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from detsim.track.base.exitcodes import ExitCode
from detsim.track.base.output import json_text
from detsim.track.judge.analysis import analyse
from detsim.track.judge.family import Family
from detsim.track.judge.finding import Confirmation
from detsim.track.judge.verdict import COMMAND, JSON_FILE, LATEST, Judgement, Report, VerdictError, check_latest, \
    latest_file, point_latest, read_verdict

DATA = Path(__file__).resolve().parents[2] / "data" / "asv"


def test_the_report_is_strict_json_with_the_exit_code_as_a_number():
    judgement = analyse(DATA / "regressed")
    report = judgement.single
    assert isinstance(report, Report) and report.exit is judgement.exit is ExitCode.REGRESSED
    whole = json.loads(json_text(judgement.as_json()))  # one machine: a fleet of one, one shape
    assert set(whole) == {"report", "machines", "not_judged", "agreement", "facts", "exit"}
    assert whole["report"] == COMMAND and list(whole["machines"]) == [report.machine] and whole["exit"] == 1
    data = whole["machines"][report.machine]
    assert set(data) == {"generated_at", "machine", "envs", "commits", "latest", "subjects", "regressions",
                         "unmeasured", "measured", "skipped", "skips", "built", "notes", "exit", "machine_class",
                         "unbuilt", "families", "history", "events"}
    assert data["exit"] == 1 and data["latest"] == data["commits"][-1] == report.latest
    assert [r["family"] for r in data["regressions"]] == [f.series.family for f in report.regressions]
    with pytest.raises(AttributeError):
        report.exit = ExitCode.OK


def test_machines_of_other_classes_are_a_fact_and_one_class_is_compared():
    from detsim.track.judge.verdict import agreement_lines, fleet_facts

    def report(machine, cls, prints):
        return Report(generated_at="t", machine=machine, envs=("e",), commits=("c1",), latest="c1", subjects={},
                      regressions=(), unmeasured=(), skipped=0, built=True, notes=(), exit=ExitCode.OK,
                      machine_class=cls, fingerprints=prints)

    intel, amd, amd2 = report("intel", 1.0, {"a": 5.0}), report("amd", 2.0, {"a": 6.0}), report("amd2", 2.0, {"a": 7.0})
    assert fleet_facts({"intel": intel, "amd": amd}) == [
        "amd and intel are different machine classes: their images are not compared with each other "
        "(a fact, not a failure)"]
    assert fleet_facts({"amd": amd, "amd2": amd2}) == [
        "amd and amd2 share a machine class; at c1 their images differ in 1 golden cases (a)"]
    assert agreement_lines({"intel": intel, "amd": amd}) == ["timing: both machines agree, nothing regressed",
                                                             "determinism: both machines agree, nothing regressed"]


def _folder(reports, stamp):
    folder = reports / stamp
    folder.mkdir(parents=True)
    report = Report(generated_at=stamp, machine="m", envs=("e",), commits=("c",), latest="c", subjects={},
                    regressions=(), unmeasured=(), skipped=0, built=True, notes=(), exit=ExitCode.OK)
    (folder / JSON_FILE).write_text(json_text(Judgement({"m": report}, {}, (), (), ExitCode.OK).as_json()))
    return folder


def test_the_link_follows_the_latest_verdict_and_leaves_nothing_beside_it(tmp_path):
    one = _folder(tmp_path, "20260101T000000Z")
    point_latest(one)
    assert read_verdict(latest_file(tmp_path)).reports["m"].generated_at == one.name
    two = _folder(tmp_path, "20260101T000001Z")
    point_latest(two)
    assert read_verdict(latest_file(tmp_path)).reports["m"].generated_at == two.name
    assert os.readlink(tmp_path / LATEST) == two.name
    assert sorted(p.name for p in tmp_path.iterdir()) == [one.name, two.name, LATEST]  # no temporary link left


def test_a_latest_that_is_not_the_link_is_refused(tmp_path):
    check_latest(tmp_path)  # nothing there: fine
    (tmp_path / LATEST).mkdir()
    with pytest.raises(VerdictError, match="is not the link to the latest verdict; refusing to replace it"):
        check_latest(tmp_path)


@pytest.mark.parametrize("text, why", [(None, "no verdict there"), ("{cut", "unreadable"),
                                       ('{"report": "detsim-track explain"}', "not a verdict"),
                                       (json.dumps({"report": COMMAND, "machines": {"m": {}}}), "no 'generated_at'"),
                                       (json.dumps({"report": COMMAND, "machine": "m", "regressions": []}),
                                        "no machine's verdict")])
def test_an_unusable_verdict_is_one_line_naming_it(tmp_path, text, why):
    path = tmp_path / JSON_FILE
    if text is not None:
        path.write_text(text)
    with pytest.raises(VerdictError) as raised:
        read_verdict(path)
    assert str(path) in str(raised.value) and why in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize("fixture", ["regressed", "unbuilt", "otherhost"])
def test_the_stored_verdict_reads_back_typed_and_writes_the_same_json(fixture):
    data = json.loads(json_text(analyse(DATA / fixture).as_json()))
    judgement = Judgement.from_json(data)
    assert json.loads(json_text(judgement.as_json())) == data
    for report in judgement.reports.values():
        assert isinstance(report.exit, ExitCode)
        named = (*(f.series for f in report.regressions), *(e.series for e in report.events))
        assert all(type(s.family) is Family for s in named)
        assert all(type(f.detail["confirmation"]) is Confirmation for f in report.regressions
                   if "confirmation" in f.detail)


def test_a_stored_family_that_is_no_family_is_refused(tmp_path):
    data = json.loads(json_text(analyse(DATA / "regressed").as_json()))
    next(iter(data["machines"].values()))["regressions"][0]["family"] = "speed"
    (tmp_path / JSON_FILE).write_text(json.dumps(data))
    with pytest.raises(VerdictError, match="'speed' is not a valid Family"):
        read_verdict(tmp_path / JSON_FILE)
