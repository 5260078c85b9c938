"""The divergence finder across commits: records made in other packages, call sites without line numbers."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import torch

from detsim.track.divergence.across_commits import compare_commits, record_at, without_lines
from detsim.track.divergence.record_job import build_call, record_run
from detsim.track.divergence.recorder import record

ROOT = Path(__file__).resolve().parents[3]
TARGET = """import torch


def target(device="cpu", dtype=torch.float64):
{padding}    x = torch.linspace(0, 1, 8, dtype=dtype)
    return (x.unsqueeze(0) * {factor}).sum(0)
"""


def _target(tmp_path: Path, name: str, padding: int, factor: float) -> Path:
    path = tmp_path / name / "target.py"
    path.parent.mkdir()
    path.write_text(TARGET.format(padding="    pass\n" * padding, factor=factor))
    return path


def test_a_record_is_made_in_a_fresh_interpreter_with_the_given_package(tmp_path):
    path = _target(tmp_path, "a", 0, 2.0)
    rec = record_at({"call": f"{path}:target"}, tmp_path / "a.json", path=(ROOT,), python=sys.executable)
    assert (tmp_path / "a.json").is_file()
    assert any(e.name == "aten.linspace.default" for e in rec.events)
    assert rec.results and rec.results[0].hash


def _recorded_here(target: dict, run: str = "A"):
    """What :func:`record_at` records in its fresh interpreter (the test above), recorded in this one."""
    call, label = build_call(target)
    return record_run(call, label, threads=1, run=run)


def test_moved_lines_are_no_divergence_but_a_changed_constant_is(tmp_path):
    old = _recorded_here({"call": f"{_target(tmp_path, 'a', 0, 2.0)}:target"})
    moved = _recorded_here({"call": f"{_target(tmp_path, 'b', 3, 2.0)}:target"})
    changed = _recorded_here({"call": f"{_target(tmp_path, 'c', 0, 2.5)}:target"}, run="B")
    assert old.events[0].where != moved.events[0].where  # the line numbers differ ...
    assert not compare_commits(old, moved).diverged  # ... and that alone is no change
    report = compare_commits(old, changed)
    assert report.first.role == "culprit" and report.first.name == "aten.mul.Tensor"
    assert report.first.scalars == {"other": ["2.0", "2.5"]}


def test_without_lines_keeps_file_and_function_and_drops_views():
    def fn(x):
        return (x.unsqueeze(0) * 2).sum()

    rec = record(fn, torch.ones(3))
    computing = without_lines(rec)
    assert [e.name for e in computing.events] == [e.name for e in rec.events if e.name != "aten.unsqueeze.default"]
    assert all(":" not in e.where.split(" in ")[0] for e in computing.events)
    assert "aten.unsqueeze.default" in [e.name for e in rec.events]
    assert [e.index for e in computing.events] == list(range(len(computing.events)))
    assert rec.events[0].where and ":" in rec.events[0].where  # the original is left alone


def test_a_recording_past_its_time_limit_or_ending_its_process_is_one_line(tmp_path):
    import pytest

    from detsim.track.divergence.across_commits import RecordError

    path = tmp_path / "slow.py"
    path.write_text("import os, time\n\n\ndef target():\n    time.sleep(30)\n\n\ndef quits():\n    os._exit(0)\n")
    with pytest.raises(RecordError, match=rf"^recording at {re.escape(str(ROOT))} ran past 1 s$"):
        record_at({"call": f"{path}:target"}, tmp_path / "s.json", path=(ROOT,), timeout=1)
    with pytest.raises(RecordError, match=r"run A ended without a record: the target called os._exit\(0\)"):
        record_at({"call": f"{path}:quits"}, tmp_path / "q.json", layers=("ops",))
