"""verdict.md from a fixture verdict: the exit status and its meaning, a line per finding to act on in the
terminal's words, what was not measured, the links; and the job summary appended to, never overwritten."""

from __future__ import annotations

import pytest

from detsim.track.base.exitcodes import MEANING, ExitCode
from detsim.track.judge.finding import Confirmation, Finding
from detsim.track.judge.series import Point, Series
from detsim.track.judge.text import finding_line
from detsim.track.judge.verdict import Judgement, Report
from detsim.track.report.markdown import SUMMARY_ENV, append_to_summary, markdown_lines, meaning, page_link

C1, C2, C3 = "1" * 40, "2" * 40, "3" * 40
SUBJECTS = {C1: "one", C2: "two", C3: "three ```not a fence```"}


def _series(name, family, values, params="", case=None, unit="seconds"):
    return Series(env="e", name=name, params=params, family=family, unit=unit, case=case,
                  points=tuple(Point(c, v) for c, v in zip((C1, C2, C3), values)))


SLOW = _series("bench_engine.EngineSweep.time_simulate", "timing", [1.0, 1.0, 2.0], "(pixels=256)")
NOISY = _series("bench_engine.EngineSweep.time_simulate", "timing", [1.0, 1.0, 1.3], "(pixels=128)")
PARITY = _series("bench_parity.track_parity_w01", "parity", [0.0, 0.0, 0.9], case="w01", unit="1 - r")
FINDINGS = (Finding(SLOW, C2, C3, 1.0, 2.0, {"confirmation": Confirmation.CONFIRMED}),
            Finding(NOISY, C2, C3, 1.0, 1.3, {"confirmation": Confirmation.NOISE}),
            Finding(PARITY, C2, C3, 0.0, 0.9))


def _verdict(findings=FINDINGS, unmeasured=("bench_engine.EngineMemory.peakmem_simulate",), code=ExitCode.UNMEASURED):
    report = Report(generated_at="20260101T000000Z", machine="ci-runner", envs=("e",), commits=(C1, C2, C3),
                    latest=C3, subjects=SUBJECTS, regressions=tuple(findings), unmeasured=tuple(unmeasured),
                    skipped=0, built=True, notes=(), exit=code)
    return Judgement({"ci-runner": report}, {}, (), (), code)


def test_the_findings_are_the_terminal_lines_and_the_exit_is_explained():
    verdict = _verdict()
    text = "\n".join(markdown_lines(verdict, "../html/status.html"))
    assert text.startswith("## detsim-track verdict: exit 2, something could not be measured\n")
    assert "The status page: [status.html](../html/status.html); the full report: [verdict.txt](verdict.txt)." in text
    records = verdict.single.regressions
    for acted in (records[0], records[2]):  # the noise step needs no action: not listed, counted
        assert "\n" + finding_line(acted, SUBJECTS) + "\n" in text
    assert finding_line(records[1], SUBJECTS) not in text
    assert "2 findings to act on, 1 noise, 1 not measured." in text
    assert f"\nNOT MEASURED at {C3[:8]}: bench_engine.EngineMemory.peakmem_simulate\n" in text
    assert "\n````text\n" in text  # the subject's ``` cannot end the block early


def test_a_clean_verdict_says_all_good_and_lists_nothing():
    lines = markdown_lines(_verdict((), (), ExitCode.OK), "status.html")
    assert lines[0] == f"## detsim-track verdict: exit 0, {MEANING[ExitCode.OK]}"
    assert not any(line.startswith("```") for line in lines)
    assert "0 findings to act on, 0 noise, 0 not measured." in "\n".join(lines)


def test_several_machines_each_get_their_section_and_the_unjudged_are_named():
    one, clean = _verdict().single, _verdict((), (), ExitCode.OK).single
    verdict = Judgement({"a": one, "b": clean}, {"c": "no results"}, (), (), ExitCode.UNMEASURED)
    text = "\n".join(markdown_lines(verdict, "status.html"))
    assert "### machine `a`: exit 2" in text and "### machine `b`: exit 0, all good" in text
    assert "Machine `c` not judged: no results" in text


def test_meaning_of_every_exit_status():
    assert meaning(1) == MEANING[ExitCode.REGRESSED] and meaning(130) == "interrupted"
    assert meaning(7) == "unknown exit status"


def test_page_link_is_relative_to_the_report_folder(tmp_path):
    assert page_link(tmp_path / "reports" / "20260101T000000Z", tmp_path / "reports" / "html" / "status.html") \
        == "../html/status.html"


def test_the_summary_is_appended_to_not_overwritten(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("# an earlier step's summary\n")
    assert append_to_summary("## verdict", {SUMMARY_ENV: str(summary)}) == summary
    append_to_summary("## again\n", {SUMMARY_ENV: str(summary)})
    assert summary.read_text() == "# an earlier step's summary\n## verdict\n## again\n"
    assert append_to_summary("x", {}) is None and append_to_summary("x", {SUMMARY_ENV: ""}) is None
    with pytest.raises(OSError):
        append_to_summary("x", {SUMMARY_ENV: str(tmp_path / "missing" / "summary.md")})


def test_the_command_that_decides_undecided_steps_is_given_once():
    decide = {"confirmation": Confirmation.UNDECIDED, "decide_command": "detsim-track regressions --machine ci-runner"}
    steps = (Finding(SLOW, C2, C3, 1.0, 2.0, decide), Finding(NOISY, C2, C3, 1.0, 1.3, decide))
    lines = markdown_lines(_verdict(steps, (), ExitCode.OK), "status.html")
    assert lines.count("decide: detsim-track regressions --machine ci-runner") == 1
    assert sum(line.startswith("UNDECIDED timing ") for line in lines) == 2
