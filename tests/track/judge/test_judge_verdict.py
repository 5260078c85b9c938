"""detsim.track.judge.verdict, .analysis and .skips: the judgement of a history, why series were skipped, and the
stored verdict."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from detsim.track.base.exitcodes import ExitCode
from detsim.track.judge.history import Point, Series
from detsim.track.judge.analysis import analyse, determinism_note, judge
from detsim.track.judge.skips import CASE_FAILED, NO_BASELINE, NO_CUDA, NO_VALGRIND, TRITON_ON_CPU, UNKNOWN, \
    group_skips, skip_reason
from detsim.track.judge.verdict import COMMAND, JSON_FILE, LATEST, Report, VerdictError, check_latest, latest_file, \
    machines_of, point_latest, read_verdict
from detsim.track.base.output import json_text


DATA = Path(__file__).resolve().parents[2] / "data" / "asv"
HOLDS = {"cpu_class": "x86_64 GenuineIntel AVX512", "device": "cpu", "dtype": "float64", "threads": 1, "torch": "2"}


def _series(name: str, family: str, values, unit: str = "seconds", case: str | None = None) -> Series:
    return Series(env="e", name=name, params="", family=family, unit=unit, case=case,
                  points=tuple(Point(c, v) for c, v in zip(("c1", "c2", "c3"), values)))


def test_the_latest_point_decides_what_is_judged():
    series = [_series("failed", "timing", [1.0, 1.0, None]), _series("skipped", "timing", [1.0, 1.0, float("nan")]),
              _series("gone", "timing", [1.0, 1.0]), _series("p", "parity", [0.0, 0.0, 1e-3], unit="1 - r", case="a"),
              _series("h", "hash count", [0.0, 0.0, 1.0], unit="cases changed")]
    judged = judge(series, "c3", {}, {}, {})
    assert [f.series.name for f in judged.findings] == ["p", "h"]  # sorted by family order
    assert (judged.unmeasured, [s.name for s in judged.skipped], judged.measured) == (["failed"], ["skipped"], 2)
    off = {"regressions_first_commits": {"p": None}}
    assert [f.series.name for f in judge(series, "c3", off, {}, {}).findings] == ["h"]


def test_skipped_hashes_are_explained_by_the_machine_class():
    series = [_series("d", "determinism", [0.0, 0.0, float("nan")], unit="changed (0/1)", case="a")]
    here = {**HOLDS, "cpu_class": "x86_64 AuthenticAMD AVX2"}
    stored = {"b.json": {"holds_for": HOLDS}}
    note = determinism_note(series, "c3", {"c3": {"holds_for": here}}, stored, None)
    assert note == ("image hashes not compared at c3: no stored baseline of this machine's class (b.json holds "
                    "for cpu_class=x86_64 GenuineIntel AVX512 where this machine has cpu_class=x86_64 AuthenticAMD "
                    "AVX2 (another machine class: a fact, not a failure)); store one with "
                    "`detsim-track baselines --refresh` on this machine class")
    assert determinism_note(series, "c3", {"c3": {"holds_for": HOLDS}}, stored, ("b.json", stored["b.json"])) is None
    assert determinism_note(series, "c3", {"c3": {"holds_for": here}}, {}, None) is None


def test_the_report_is_strict_json_with_the_exit_code_as_a_number():
    judgement = analyse(DATA / "regressed")
    report = judgement.single
    assert isinstance(report, Report) and report.exit is judgement.exit is ExitCode.REGRESSED
    data = json.loads(json_text(judgement.as_json()))  # one machine: its verdict as it is, a fleet of one
    assert set(data) == {"generated_at", "machine", "envs", "commits", "latest", "subjects", "regressions",
                         "unmeasured", "measured", "skipped", "skips", "built", "notes", "exit", "machine_class",
                         "unbuilt", "families", "history"}
    assert data["exit"] == 1 and data["latest"] == data["commits"][-1] == report.latest
    assert [r["family"] for r in data["regressions"]] == [f.series.family for f in report.regressions]
    with pytest.raises(AttributeError):
        report.exit = ExitCode.OK


def test_unmeasured_wins_over_regressed():
    assert analyse(DATA / "unmeasured").exit is ExitCode.UNMEASURED
    assert analyse(DATA / "good").exit is ExitCode.OK


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


def _runs_differ(axis: str, case: str, values) -> Series:
    return Series(env="e", name="bench_reproducibility.Reproducibility.track_runs_differ",
                  params=f"(axis='{axis}', case='{case}')", family="reproducibility", unit="runs differ (0/1)",
                  case=case, points=tuple(Point(c, v) for c, v in zip(("c1", "c2", "c3"), values)))


def test_image_changes_first_seen_where_images_do_not_reproduce_are_withheld_with_a_note():
    from detsim.track.judge.analysis import without_irreproducible

    series = [_runs_differ("process", "a01", [0.0, 0.0, 1.0]), _runs_differ("compiled", "a01", [0.0, 0.0, 0.0]),
              _series("h1", "determinism", [0.0, 0.0, 1.0], unit="changed (0/1)", case="a01"),
              _series("h2", "determinism", [0.0, 1.0, 1.0], unit="changed (0/1)", case="b02"),
              _series("cc", "hash count", [0.0, 0.0, 1.0], unit="cases changed")]
    findings = judge(series, "c3", {}, {}, {}).findings
    assert [f.label for f in findings] == ["NONDETERMINISTIC", "CHANGED", "CHANGED", "CHANGED"]
    kept, note = without_irreproducible(findings, series)
    # a01's eager hash changed at c3, where eager images did not reproduce: withheld; b02 changed at c2, a real
    # change; the compiled path reproduced at c3, so its count is still reported
    assert [(f.series.name, f.first_bad) for f in kept] == [
        ("bench_reproducibility.Reproducibility.track_runs_differ", "c3"), ("h2", "c2"), ("cc", "c3")]
    assert note.startswith("1 image-hash change not reported (at c3): the images there do not reproduce")
    assert without_irreproducible(kept[1:], series[2:]) == (kept[1:], None)
    # no compiled baseline here: the compiled path's fingerprint (no case) is judged by the compiled axis too
    compiled = [*series[:2], _series("cf", "fingerprint", [7.0, 7.0, 9.0], unit="sha256[:13] as a number")]
    findings = judge(compiled, "c3", {}, {}, {}).findings
    assert [f.label for f in findings] == ["NONDETERMINISTIC", "CHANGED"]
    assert without_irreproducible(findings, compiled) == (findings, None)


def test_the_skips_at_the_latest_commit_are_counted_with_their_reason():
    report = analyse(DATA / "otherhost").single
    assert report.skipped == 2 and report.measured > 0
    [skipped] = report.skips
    assert skipped.text().startswith("2 image hashes (") and "no baseline for this machine class" in skipped.reason.why
    assert sorted(skipped.labels) == ["bench_determinism.track_hash_changed_a01_cubic_mosflm_center",
                                      "bench_determinism.track_hash_changed_o01_polar_0_9"]
    assert report.as_json()["skips"] == [skipped.record()]


def test_the_page_history_is_strict_json_a_skip_kept_apart_from_a_failure():
    from detsim.track.judge.history import Point, Series
    from detsim.track.judge.analysis import page_history

    points = (Point("c1", 0.0), Point("c2", float("nan")), Point("c3", None), Point("c4", 1e-9))
    parity = Series(env="e", name="bench_parity.track_parity_a01", params="", family="parity", unit="1 - r",
                    case="a01", points=points)
    drawn = json.loads(json_text(page_history([parity], ["c1", "c2", "c3", "c4"], {})))
    assert drawn["parity"] == [["a01", "bench_parity.track_parity_a01",
                                [["c1", 0.0], ["c2", "nan"], ["c3", None], ["c4", 1e-9]]]]


def _skip_series(name: str, family: str, params: str = "", case: str | None = None) -> Series:
    return Series(env="e", name=name, params=params, family=family, unit="", case=case)


CUDA = _skip_series("bench_engine.EngineModes.time_simulate", "timing", "(mode='eager', dtype='float64', device='cuda')")
TRITON_CUDA = _skip_series("bench_engine.EngineModes.time_simulate", "timing",
                      "(mode='triton', dtype='float64', device='cuda')")
TRITON_CPU = _skip_series("bench_engine.EngineModes.time_simulate", "timing",
                     "(mode='triton', dtype='float64', device='cpu')")
HASH = _skip_series("bench_determinism.track_hash_changed_a01", "determinism", case="a01")
COUNT = _skip_series("bench_determinism.CompiledHashes.track_cases_changed", "hash count")
COST = _skip_series("bench_cost.InstructionCounts.track_instructions", "cost", "(workload='P1@64')")
CLI = _skip_series("bench_cli.DetsimCommand.time_process", "timing")


def test_each_skip_is_given_the_reason_its_benchmark_skips_for():
    assert [skip_reason(s, class_baseline=False) for s in (CUDA, TRITON_CUDA, TRITON_CPU, HASH, COUNT, COST, CLI)] \
        == [NO_CUDA, NO_CUDA, TRITON_ON_CPU, NO_BASELINE, NO_BASELINE, NO_VALGRIND, UNKNOWN]
    # with a baseline of this machine's class stored, a skipped hash is not for want of one
    assert skip_reason(HASH, class_baseline=True) == UNKNOWN


def test_the_other_tracks_of_a_case_that_failed_are_skipped_for_that_reason():
    parity_b01 = _skip_series("bench_target.Case.track_fingerprint", "fingerprint", "(case='b01')", case="b01")
    timing_b01 = _skip_series("bench_target.Timing.time_render", "timing", "(case='b01')", case="b01")
    timing_a01 = _skip_series("bench_target.Timing.time_render", "timing", "(case='a01')", case="a01")
    groups = group_skips([parity_b01, timing_b01, timing_a01, CUDA], class_baseline=True, failed_cases={"b01"})
    assert [(g.reason, len(g.labels)) for g in groups] == [(CASE_FAILED, 2), (NO_CUDA, 1), (UNKNOWN, 1)]
    assert groups[0].text() == "2 tracks of failed cases (their case failed: see NOT MEASURED)"


def test_skips_are_grouped_by_reason_largest_first_the_unknown_last():
    groups = group_skips([CLI, CUDA, HASH, TRITON_CUDA, HASH, HASH, TRITON_CPU], class_baseline=False)
    assert [(g.reason, len(g.labels)) for g in groups] == [(NO_BASELINE, 3), (NO_CUDA, 2), (TRITON_ON_CPU, 1),
                                                      (UNKNOWN, 1)]
    assert groups[0].text() == "3 image hashes (no baseline for this machine class)"
    assert groups[2].text() == "1 triton benchmark (GPU only)"
    assert groups[1].record() == {"what": "CUDA benchmarks", "why": "no GPU here",
                                  "benchmarks": [CUDA.label, TRITON_CUDA.label]}
    assert group_skips([], class_baseline=False) == ()


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
