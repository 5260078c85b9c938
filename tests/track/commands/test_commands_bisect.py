"""``detsim-track bisect``: bad input refused in one line with exit 2 before any build, the end of a hunt
printed from its record, and (slow) a planted target's broken commit found from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from detsim.track.cli import main
from detsim.track.commands.bisect import summary_lines
from detsim.track.target.spec import FILE
from planted_port import CASE, make_port

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden"


@pytest.mark.parametrize("argv, message", [
    (["--changed", "c02", "--factor", "3"], "--factor goes with --parity"),
    (["--parity", "c02", "--factor", "1"], "--factor 1.0: must be a number above 1"),
    (["--slower", "c02", "abc"], "--slower c02 abc: PCT must be a number"),
    (["--slower", "c02", "-5"], "--slower c02 -5: PCT must be a positive percentage"),
    (["--broken", "zz_nope"], "'zz_nope' is not a golden case"),
])
def test_bad_input_is_one_line_exit_2(argv, message, capsys):
    assert main(["bisect", "HEAD~1", "HEAD", "--root", str(ROOT), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bisect: ") and message in err and "\n" not in err


def test_a_bad_target_file_or_json_path_is_refused_before_any_build(tmp_path, capsys):
    (tmp_path / FILE).write_text('command = "x"\ntimeout_s = -1\n')
    assert main(["bisect", "A", "B", "--target", str(tmp_path), "--broken", "c02"]) == 2
    assert capsys.readouterr().err.strip() == (f"bisect: {tmp_path / FILE}: 'timeout_s' must be a positive number "
                                               "of seconds, not -1")
    taken = tmp_path / "notes.json"
    taken.write_text("{}")
    assert main(["bisect", "HEAD~1", "HEAD", "--root", str(ROOT), "--broken", "c02", "--json", str(taken)]) == 2
    assert "refusing to replace it" in capsys.readouterr().err and taken.read_text() == "{}"


def test_commits_that_are_not_in_line_are_one_line(tmp_path, capsys):
    assert main(["bisect", "no-such-rev", "HEAD", "--root", str(ROOT), "--broken", "c02"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("bisect: no-such-rev: not a commit")


def _record(**changes) -> dict:
    record = {"found": True, "first_bad": "b" * 40, "first_bad_subject": "faster sums", "last_good": "a" * 40,
              "bad": "c" * 40, "exact": True, "candidates": ["b" * 40], "commits": 100, "builds": 8,
              "build_bound": 10, "renders": 6, "reused": 2, "departure": None,
              "criterion": {"kind": "parity", "case": "a01_cubic_mosflm_center"}}
    return {**record, **changes}


def test_the_end_names_the_commits_and_hands_detsims_pair_to_explain():
    lines = summary_lines(_record(), on_detsim=True)
    assert lines[0] == f"first bad commit: {'b' * 40} faster sums" and lines[1] == f"last good commit: {'a' * 40}"
    assert "100 commits, 8 builds (at most 10 expected), 6 renders, 2 results reused" in lines
    assert lines[-1] == (f"next: detsim-track explain {'a' * 40} {'b' * 40} --kind parity "
                         "--case a01_cubic_mosflm_center --no-bisect")
    assert "explain traces detsim's own code only" in summary_lines(_record(), on_detsim=False)[-1]
    hidden = summary_lines(_record(exact=False, candidates=["d" * 40, "b" * 40]), on_detsim=False)
    assert any(line.endswith("one of dddddddd, bbbbbbbb") for line in hidden)
    assert summary_lines(_record(found=False), on_detsim=True)[0].startswith("no bad commit: cccccccccccc")


@pytest.mark.slow
def test_a_targets_broken_commit_is_found_from_the_command_line(tmp_path, capsys):
    port = make_port(tmp_path, GOLDEN, render="copy")
    out = tmp_path / "bisect.json"
    code = main(["bisect", port.commits["base"], port.commits["shrink"], "--target", str(port.root),
                 "--broken", CASE, "--json", str(out)])
    captured = capsys.readouterr()
    assert code == 1, captured.err
    assert f"first bad commit: {port.commits['shrink']} shrink" in captured.out
    record = json.loads(out.read_text())
    assert record["report"] == "bisect" and record["first_bad"] == port.commits["shrink"]
    assert "[BAD]" in captured.err and "wrong size" in captured.err


@pytest.mark.slow
def test_detsim_is_the_default_target_built_from_its_own_commits(tmp_path, capsys):
    """Two commits of this checkout built and rendered like a port's: c02's image does not change."""
    out = tmp_path / "bisect.json"
    assert main(["bisect", "HEAD~1", "HEAD", "--root", str(ROOT), "--changed", "c02", "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert not record["found"] and record["builds"] == 2
    assert [s["outcome"]["status"] for s in record["steps"]] == ["ok", "ok"]
    assert record["steps"][0]["outcome"]["parity"]["r"] == 1.0  # detsim's float64 image is nanoBragg.c's
    assert "no bad commit" in capsys.readouterr().out
