"""detsim.track.target.render: a case rendered by a foreign command in a folder of its own, every way it can
end typed (a tiny 4x4 case and a stand-in command: no torch is imported by the children).

Also a render's outcome, typed, summarised in one line and stored as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from detsim.track.base.golden import GoldenCase
from detsim.track.base.hashing import image_sha256
from detsim.track.target.render import CaseOutcome, output_name, render_case
from detsim.track.base.status import Status
from detsim.track.target.spec import TargetSpec


REFERENCE = np.arange(1, 17, dtype="<f4").reshape(4, 4)

# a nanoBragg-compatible stand-in: writes the image its MODE says to -floatfile
PROGRAM = '''import os, sys, time
import numpy as np
args = sys.argv[1:]
out = args[args.index("-floatfile") + 1]
mode = os.environ["MODE"]
image = np.arange(1, 17, dtype="<f4").reshape(4, 4)
if mode == "crash":
    print("reading the matrix", file=sys.stderr)
    sys.exit("ValueError: bad -mat file")
if mode == "sleep":
    time.sleep(30)
if mode == "pause":
    time.sleep(1.0)
if mode == "busy":
    while time.process_time() < 0.5:
        pass
if mode == "nothing" or os.path.exists(out):
    sys.exit(0)
if mode == "big":
    hold = bytearray(300 * 2**20)
    hold[::4096] = b"x" * len(hold[::4096])
if mode == "edge":
    image[0, :] *= 1.5
if mode == "small":
    image = image[:3, :3]
if mode == "varies":
    image[2, 2] += int.from_bytes(os.urandom(2), "little") / 7
image.tofile(out)
print(os.environ.get("PYTHONHASHSEED"), os.listdir("."), file=sys.stderr)
'''


@pytest.fixture
def case(tmp_path) -> GoldenCase:
    folder = tmp_path / "t01_tiny"
    folder.mkdir()
    REFERENCE.tofile(folder / "image.bin")
    (folder / "A.mat").write_text("1 0 0\n")
    return GoldenCase("t01_tiny", folder, ("-mat", "A.mat", "-floatfile", "image.bin"), (4, 4))


def _spec(tmp_path: Path, mode: str, timeout_s: float = 60) -> TargetSpec:
    program = tmp_path / "fake_nanobragg.py"
    program.write_text(PROGRAM)
    return TargetSpec("fake", tmp_path, (sys.executable, str(program)), env={"MODE": mode}, timeout_s=timeout_s)


def test_an_exact_image_is_judged_and_hashed_and_the_reference_never_reaches_the_command(tmp_path, case):
    rendered = render_case(_spec(tmp_path, "exact"), case)  # "exact" exits early if image.bin was copied
    out = rendered.outcome
    assert out.status is Status.OK and out.r == 1.0 and out.parity["max_rel"] == 0.0
    assert out.parity["shape"] == [4, 4] and out.sha256 == image_sha256(REFERENCE) and out.reproduced is None
    assert out.seconds > 0 and out.peak_mb > 5
    assert np.array_equal(rendered.image, REFERENCE)


def test_the_peak_memory_is_the_commands_own_not_the_suites(tmp_path, case):
    small = render_case(_spec(tmp_path, "exact"), case).outcome.peak_mb
    big = render_case(_spec(tmp_path, "big"), case).outcome.peak_mb
    assert small < 150 and big - small > 250  # the 300 MiB it touched; this process's memory is in neither


def test_cpu_seconds_are_the_commands_own_beside_its_wall_seconds(tmp_path, case):
    busy = render_case(_spec(tmp_path, "busy"), case).outcome
    paused = render_case(_spec(tmp_path, "pause"), case).outcome
    assert busy.cpu_s >= 0.5 and paused.cpu_s < 1.0 <= paused.seconds  # a sleep is wall time, not CPU time


def test_an_edge_change_is_a_parity_change_with_its_worst_pixel(tmp_path, case):
    out = render_case(_spec(tmp_path, "edge"), case).outcome
    assert out.status is Status.OK and out.one_minus_r > 1e-3 and out.parity["worst"]["s"] == 0


def test_a_second_process_with_another_hash_seed_must_reproduce_the_image(tmp_path, case):
    assert render_case(_spec(tmp_path, "exact"), case, runs=2).outcome.reproduced is True
    varies = render_case(_spec(tmp_path, "varies"), case, runs=2).outcome
    assert varies.reproduced is False and len(set(varies.hashes)) == 2


@pytest.mark.parametrize("mode, status, says", [
    ("crash", Status.CRASHED, "exited 1: ValueError: bad -mat file"),
    ("nothing", Status.NO_IMAGE, "exited 0 without writing image.bin"),
    ("small", Status.WRONG_SIZE, "wrote 36 bytes, 9 float32 values (3x3?), where the reference is 4x4"),
])
def test_each_failure_is_its_own_kind_never_an_exception(tmp_path, case, mode, status, says):
    out = render_case(_spec(tmp_path, mode), case).outcome
    assert (out.status, out.detail) == (status, says) and out.sha256 is None and not out.at_parity
    if mode == "crash":
        assert out.stderr_tail == ("reading the matrix", "ValueError: bad -mat file")


def test_past_its_timeout_a_render_is_timed_out(tmp_path, case):
    out = render_case(_spec(tmp_path, "sleep", timeout_s=1), case).outcome
    assert out.status is Status.TIMED_OUT and out.detail == "ran past 1 s"


def test_a_command_not_installed_is_a_crash_naming_it(tmp_path, case):
    spec = TargetSpec("fake", tmp_path, ("no-such-nanobragg",))
    out = render_case(spec, case, bin_dir=tmp_path).outcome
    assert (out.status, out.detail) == (Status.CRASHED, "command not found: no-such-nanobragg")


def test_with_a_baseline_each_run_is_timed_in_turns_with_the_baselines(tmp_path, case):
    program = tmp_path / "fake_nanobragg.py"
    program.write_text(PROGRAM)
    folders = {}
    for mode in ("exact", "pause"):
        folders[mode] = tmp_path / mode
        folders[mode].mkdir()
        script = folders[mode] / "fake-nb"
        script.write_text(f'#!/bin/sh\nMODE={mode} exec "{sys.executable}" "{program}" "$@"\n')
        script.chmod(0o755)
    spec = TargetSpec("fake", tmp_path, ("fake-nb",))
    rendered = render_case(spec, case, folders["pause"], runs=2, baseline=folders["exact"])
    out = rendered.outcome
    assert rendered.runs == 4 and len(out.hashes) == 2
    assert out.seconds - out.baseline_s > 0.5  # the pause, against the baseline's runs
    assert render_case(spec, case, folders["exact"]).outcome.baseline_s is None


def test_a_case_without_a_floatfile_gets_one():
    assert output_name(("-N", "5")) == (("-N", "5", "-floatfile", "image.bin"), "image.bin")
    assert output_name(("-floatfile", "f.bin", "-N", "5")) == (("-floatfile", "f.bin", "-N", "5"), "f.bin")


PARITY = {"r": 0.999, "max_rel": 0.25, "sum_ratio": 1.01, "shape": [4, 4]}


def test_an_image_knows_its_parity_and_whether_a_second_process_reproduced_it():
    once = CaseOutcome("a01", Status.OK, seconds=1.5, sha256="a" * 64, hashes=("a" * 64,), parity=PARITY)
    twice = CaseOutcome("a01", Status.OK, seconds=1.5, sha256="a" * 64, hashes=("a" * 64, "b" * 64), parity=PARITY)
    assert once.reproduced is None and twice.reproduced is False
    assert abs(once.one_minus_r - 0.001) < 1e-12 and not once.at_parity
    assert "NOT reproduced" in twice.summary() and "1 - r = 0.001" in once.summary()


def test_a_failure_is_its_own_kind_and_never_at_parity():
    crash = CaseOutcome("a01", Status.CRASHED, "exited 1: boom", stderr_tail=("Traceback", "boom"))
    assert crash.status.is_failure and not crash.at_parity and crash.reproduced is None and crash.r is None
    assert crash.summary() == "crashed: exited 1: boom"
    assert not Status.OK.is_failure and all(s.is_failure for s in (Status.CRASHED, Status.TIMED_OUT, Status.NO_IMAGE,
                                                                   Status.WRONG_SIZE))


def test_the_record_is_strict_json_and_reads_back_the_same():
    for outcome in (CaseOutcome("a01", Status.OK, seconds=2.0, peak_mb=300.0, sha256="c" * 64,
                                hashes=("c" * 64, "c" * 64), parity=PARITY),
                    CaseOutcome("b01", Status.WRONG_SIZE, "wrote 4 bytes", seconds=1.0)):
        record = json.loads(json.dumps(outcome.to_dict(), allow_nan=False))
        again = CaseOutcome.from_record(record)
        assert again == outcome and again.parity == outcome.parity
        assert record["status"] == outcome.status.value and record["reproduced"] == outcome.reproduced
