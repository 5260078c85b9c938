"""Checking a batch before any render: each line's flags and input files, its outputs placed in its folder,
nothing overwritten, and a rerun skipping only frames finished with unchanged files."""

from __future__ import annotations

import pytest

from detsim.batch import manifest
from detsim.batch.frames import BatchInputError, BatchFrame
from detsim.batch.manifest import Entry, FrameStatus, OutputFile
from detsim.batch.plan import plan
from detsim.fileio.digest import sha256_file

LINE = ("-detpixels", "16", "-nonoise", "-nopgm")


def _frame(*extra: str, name: str = "line0001") -> BatchFrame:
    return BatchFrame(name, f"l.txt:{int(name[-4:])}", LINE + extra)


def test_outputs_go_to_the_frames_folder_under_their_own_names(tmp_path):
    jobs, skipped = plan([_frame("-floatfile", "sub/f.bin")], str(tmp_path / "out"), str(tmp_path))
    assert skipped == [] and jobs[0].frame_dir == str(tmp_path / "out" / "line0001")


@pytest.mark.parametrize("extra, named", [
    (("-bogus",), "l.txt:1: unknown flag -bogus"),
    (("-floatfile", "/tmp/x.bin"), "l.txt:1: -floatfile /tmp/x.bin: a batch writes each frame's files"),
    (("-intfile", "../x.img"), "l.txt:1: -intfile ../x.img: a batch writes"),
    (("-hkl", "missing.hkl"), "l.txt:1: -hkl missing.hkl: no such file"),
    (("-floatfile", "a.img", "-intfile", "a.img"), "l.txt:1: two outputs of the line name one file"),
])
def test_a_bad_line_is_refused_naming_it(extra, named, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BatchInputError) as caught:
        plan([_frame(), _frame(*extra, name="line0002")], "out", str(tmp_path))
    assert str(caught.value).startswith(named.replace("l.txt:1", "l.txt:2")), caught.value


def _finished(tmp_path, frame: BatchFrame) -> Entry:
    folder = tmp_path / "out" / frame.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "floatimage.bin").write_bytes(b"float")
    (folder / "intimage.img").write_bytes(b"int")
    outputs = tuple(OutputFile(flag, f"{frame.name}/{name}", sha256_file(str(folder / name)))
                    for flag, name in (("-floatfile", "floatimage.bin"), ("-intfile", "intimage.img")))
    return Entry(frame.name, frame.source, frame.command, FrameStatus.OK, 0.1, 1, outputs)


def test_a_rerun_skips_a_finished_frame_and_renders_the_rest(tmp_path):
    done, todo = _frame(), _frame("-distance", "90", name="line0002")
    manifest.write(str(tmp_path / "out"), {done.name: _finished(tmp_path, done)})
    jobs, skipped = plan([done, todo], str(tmp_path / "out"), str(tmp_path))
    assert [j.frame.name for j in jobs] == ["line0002"] and [e.name for e in skipped] == ["line0001"]


@pytest.mark.parametrize("change", ["edited file", "edited line", "not in the manifest"])
def test_an_existing_output_that_is_not_this_lines_finished_work_refuses_the_batch(change, tmp_path):
    frame = _frame()
    entry = _finished(tmp_path, frame)
    if change == "edited file":
        (tmp_path / "out" / "line0001" / "intimage.img").write_bytes(b"other")
    if change == "edited line":
        frame = _frame("-distance", "90")
    if change != "not in the manifest":
        manifest.write(str(tmp_path / "out"), {frame.name: entry})
    with pytest.raises(BatchInputError, match="l.txt:1: -floatfile .*floatimage.bin exists .* never overwritten"):
        plan([frame], str(tmp_path / "out"), str(tmp_path))
