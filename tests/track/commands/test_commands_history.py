"""detsim-track history: the recorded history as a table (CSV, Parquet) a notebook reads, or its events; and
docs/history.md's notebook example, run on a fixture's table."""

from __future__ import annotations

import importlib.util
import io
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

import detsim.track
from detsim.track import cli
from detsim.track.judge.history import COLUMNS, history_frame

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data" / "asv"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["history", *argv])
    out = capsys.readouterr()
    return int(code), out.out, out.err


def test_the_csv_reads_back_as_the_frame(capsys, tmp_path):
    code, out, err = _run(capsys, "--repo", str(DATA / "regressed"))
    assert (code, err) == (0, "")
    table = pd.read_csv(io.StringIO(out), parse_dates=["date"])
    frame = history_frame(DATA / "regressed")
    assert tuple(table.columns) == COLUMNS and len(table) == len(frame)
    assert table["value"].tolist() == pytest.approx(frame["value"].tolist(), nan_ok=True)
    assert (table["commit"] == frame["commit"]).all() and (table["date"] == frame["date"]).all()
    timed = table[table["samples"].notna()]
    assert len(timed) and timed["samples"].iloc[0].startswith("[")  # the samples as a JSON list
    out_file = tmp_path / "history.csv"
    assert _run(capsys, "--repo", str(DATA / "regressed"), "--out", str(out_file))[:2] == (0, "")
    assert out_file.read_text() == out


def test_parquet_keeps_the_types(capsys, tmp_path):
    out_file = tmp_path / "h.parquet"
    assert _run(capsys, "--repo", str(DATA / "noisy"), "--format", "parquet", "--out", str(out_file))[0] == 0
    table = pd.read_parquet(out_file)
    frame = detsim.track.history(DATA / "noisy")
    assert tuple(table.columns) == COLUMNS and str(table["date"].dtype).endswith("UTC]")
    measured = frame["samples"].notna()
    assert [list(s) for s in table["samples"][measured]] == [list(s) for s in frame["samples"][measured]]


@pytest.mark.parametrize("argv, message", [
    (["--format", "parquet"], "--format parquet writes a binary file: give --out FILE"),
    (["--machine", "elsewhere"], "no results for machine 'elsewhere'"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = _run(capsys, "--repo", str(DATA / "regressed"), *argv)
    assert (code, out) == (2, "") and message in err and err.count("\n") == 1


def test_an_existing_file_is_never_replaced(capsys, tmp_path):
    taken = tmp_path / "mine.csv"
    taken.write_text("my notes\n")
    code, _, err = _run(capsys, "--repo", str(DATA / "regressed"), "--out", str(taken))
    assert code == 2 and "refusing to replace it" in err and taken.read_text() == "my notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.csv"]  # no temporary file left


def test_events_are_one_screen_decided_ones_in_commit_order_then_the_suspects_counted(capsys):
    code, out, _ = _run(capsys, "--repo", str(DATA / "regressed"), "--events")
    lines = out.splitlines()
    assert code == 0 and lines[1] == "events: 6 steps over 5 commits" and len(lines) == 6
    assert [line.split()[0] for line in lines[2:5]] == ["5432ab33", "5432ab33", "224b823e"]
    assert lines[5].startswith("  3 suspect timing steps at 1 commit (3 regressed)")
    assert lines[2] == "  5432ab33 regressed parity a01_cubic_mosflm_center: 1 - r 0 -> 0.0063 (after cf5345b8)"


def test_the_docs_notebook_example_runs_on_a_fixtures_table(capsys, tmp_path, monkeypatch):
    text = (ROOT / "docs" / "history.md").read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S)[1]
    shutil.copytree(DATA / "regressed", tmp_path / "project")
    monkeypatch.chdir(tmp_path)
    assert _run(capsys, "--repo", "project", "--out", "history.csv")[0] == 0
    lines = block.splitlines()
    if importlib.util.find_spec("matplotlib") is None:  # the plot, the last line, needs it
        assert ".plot(" in lines[-1] and not any(".plot(" in line for line in lines[:-1])
        lines = lines[:-1]
    exec(compile("\n".join(lines), "docs/history.md", "exec"), {})
    shown = capsys.readouterr().out
    assert "a01_cubic_mosflm_center" in shown and "o01_polar_0.9" in shown
