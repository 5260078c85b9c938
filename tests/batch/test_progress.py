"""The progress line: frames done, failed, retried and left, and the time left at the pace so far."""

from __future__ import annotations

import io

from detsim.batch import progress as progress_module
from detsim.batch.progress import TaskProgress


def test_the_line_counts_frames_and_projects_the_time_left(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: now[0])
    stream = io.StringIO()
    shown = TaskProgress(5, stream, every_s=0)
    assert shown.line() == "detsim batch: 0 done, 0 failed, 5 left, ? to go"
    now[0] = 110.0
    shown.finished(ok=True)  # 1 frame in 10 s, 4 left
    shown.retrying()
    now[0] = 130.0
    shown.finished(ok=False)  # 2 frames in 30 s, 3 left
    assert stream.getvalue().splitlines() == ["detsim batch: 1 done, 0 failed, 4 left, ~0:40 to go",
                                              "detsim batch: 1 done, 1 failed, 1 retried, 3 left, ~0:45 to go"]


def test_off_a_terminal_a_line_is_written_only_every_few_seconds_and_the_last_always(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: now[0])
    stream = io.StringIO()
    shown = TaskProgress(3, stream, every_s=5.0)
    for t in (1.0, 2.0, 3.0):
        now[0] = t
        shown.finished(ok=True)
    shown.close()
    assert [line.split(",")[0] for line in stream.getvalue().splitlines()] == ["detsim batch: 1 done",
                                                                              "detsim batch: 3 done"]
