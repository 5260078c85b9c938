"""One frame on a worker: the same files as ``detsim`` for its line, an unchanged setup reused, a failure
returned with its reason and nothing left behind."""

from __future__ import annotations

import os

import pytest

from detsim.batch import worker
from detsim.batch.frames import BatchFrame
from detsim.batch.manifest import FrameStatus
from detsim.batch.plan import FrameJob
from detsim.commandline.command import main

LINE = ("-cell", "100", "100", "100", "90", "90", "90", "-default_F", "100", "-N", "2", "-detpixels", "16",
        "-seed", "7")


def detsim_files(folder, argv) -> dict[str, bytes]:
    """What ``detsim ARGV`` run in ``folder`` writes, by file name."""
    folder.mkdir(parents=True)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        assert main(list(argv)) == 0
    finally:
        os.chdir(cwd)
    return {p.name: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def prepared(monkeypatch) -> list:
    """Counts the engine's prepares, with a fresh setup cache."""
    from detsim.rendering import engine

    calls = []
    real_prepare = engine.prepare
    monkeypatch.setattr(engine, "prepare", lambda *a, **k: calls.append(1) or real_prepare(*a, **k))
    monkeypatch.setattr(worker, "_local", type(worker._local)())
    return calls


def test_a_frame_writes_what_detsim_writes_for_its_line_and_reuses_an_unchanged_setup(tmp_path, prepared):
    out = tmp_path / "out"
    frames = [BatchFrame("line0001", "l:1", LINE),
              BatchFrame("line0002", "l:2", LINE + ("-seed", "8", "-floatfile", "b.bin")),
              BatchFrame("line0003", "l:3", LINE + ("-distance", "90"))]
    entries = [worker.render_frame(FrameJob(frame, str(out), str(tmp_path)), 1) for frame in frames]
    assert [e.status for e in entries] == [FrameStatus.OK] * 3
    assert len(prepared) == 2  # line 2 differs from line 1 only in what it writes: line 1's setup
    for frame, entry in zip(frames, entries):
        written = {o.path.removeprefix(frame.name + "/"): (out / o.path).read_bytes() for o in entry.outputs}
        assert written == detsim_files(tmp_path / "detsim" / frame.name, frame.argv)
        assert len(written) == 4 and entry.tries == 1 and entry.reason == ""


def test_a_changed_input_file_makes_a_new_setup(tmp_path, prepared):
    hkl = tmp_path / "f.hkl"
    hkl.write_text("0 0 0 10\n1 0 0 20\n")
    frame = BatchFrame("line0001", "l:1", LINE + ("-hkl", "f.hkl", "-nonoise", "-nopgm"))
    first = worker.render_frame(FrameJob(frame, str(tmp_path / "a"), str(tmp_path)), 1)
    hkl.write_text("0 0 0 10\n1 0 0 30\n")
    os.utime(hkl, ns=(1, 1))  # another modification time, whatever the clock's resolution
    second = worker.render_frame(FrameJob(frame, str(tmp_path / "b"), str(tmp_path)), 1)
    assert len(prepared) == 2 and first.status is second.status is FrameStatus.OK


def test_a_failing_frame_returns_its_reason_and_leaves_no_folder(tmp_path, prepared):
    frame = BatchFrame("line0004", "l:4", LINE + ("-distance", "-5", "-floatfile", "sub/f.bin"))
    entry = worker.render_frame(FrameJob(frame, str(tmp_path / "out"), str(tmp_path)), 2)
    assert entry.status is FrameStatus.FAILED and entry.tries == 2 and entry.outputs == ()
    assert "-distance" in entry.reason and "\n" not in entry.reason
    assert not (tmp_path / "out" / "line0004").exists()


def test_a_try_that_finds_its_files_takes_them_as_written_and_one_that_finds_some_fails(tmp_path, prepared):
    job = FrameJob(BatchFrame("line0001", "l:1", LINE), str(tmp_path / "out"), str(tmp_path))
    first = worker.render_frame(job, 1)
    files = [tmp_path / "out" / o.path for o in first.outputs]
    written = [(f.stat().st_ino, f.stat().st_mtime_ns) for f in files]
    again = worker.render_frame(job, 1)  # as Dask reruns a task whose worker died before its result came back
    assert again.status is FrameStatus.OK and again.outputs == first.outputs and len(prepared) == 1
    assert [(f.stat().st_ino, f.stat().st_mtime_ns) for f in files] == written
    files[0].unlink()
    partial = worker.render_frame(job, 2)
    assert partial.status is FrameStatus.FAILED and "an earlier try left 3 of the frame's 4 files" in partial.reason
    assert [(f.stat().st_ino, f.stat().st_mtime_ns) for f in files[1:]] == written[1:]


def test_the_batchs_device_replaces_the_lines_own(tmp_path, prepared):
    import torch

    frame = BatchFrame("line0001", "l:1", LINE + ("-device", "cuda"))
    entry = worker.render_frame(FrameJob(frame, str(tmp_path / "out"), str(tmp_path), "cpu"), 1)
    assert entry.status is FrameStatus.OK  # rendered on the CPU whatever the line said
    written = {o.path.removeprefix("line0001/"): (tmp_path / "out" / o.path).read_bytes() for o in entry.outputs}
    assert written == detsim_files(tmp_path / "detsim", LINE)
    if not torch.cuda.is_available():  # the line alone asks for a GPU that is not here
        failed = worker.render_frame(FrameJob(frame, str(tmp_path / "alone"), str(tmp_path)), 1)
        assert failed.status is FrameStatus.FAILED and "no CUDA device" in failed.reason
