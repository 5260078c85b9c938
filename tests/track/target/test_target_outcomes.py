"""detsim.track.target.outcomes: every case of a commit measured apart from its timings, each outcome stored as
its record, a departure where the image differs from the reference (a 4x4 case, a stand-in command)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from detsim.track.base.golden import GoldenCase
from detsim.track.base.status import Status
from detsim.track.target.outcomes import RUNS, measure_cases
from detsim.track.target.spec import TargetSpec

REFERENCE = np.arange(1, 17, dtype="<f4").reshape(4, 4)

# a nanoBragg-compatible stand-in: writes the image its MODE says to -floatfile
PROGRAM = '''import os, sys
import numpy as np
args = sys.argv[1:]
out = args[args.index("-floatfile") + 1]
image = np.arange(1, 17, dtype="<f4").reshape(4, 4)
if os.environ["MODE"] == "crash":
    sys.exit("ValueError: bad -mat file")
if os.environ["MODE"] == "edge":
    image[0, :] *= 1.5
image.tofile(out)
'''


@pytest.fixture
def cases(tmp_path) -> list[GoldenCase]:
    made = []
    for name in ("t01_tiny", "t02_tiny"):
        folder = tmp_path / name
        folder.mkdir()
        REFERENCE.tofile(folder / "image.bin")
        made.append(GoldenCase(name, folder, ("-floatfile", "image.bin"), (4, 4)))
    return made


def _measure(tmp_path, cases, mode: str) -> dict:
    program = tmp_path / "fake_nanobragg.py"
    program.write_text(PROGRAM)
    spec = TargetSpec("fake", tmp_path, (sys.executable, str(program)), env={"MODE": mode})
    return measure_cases(spec, cases, tmp_path, tmp_path / "count")


def test_an_exact_image_is_a_record_per_case_reproduced_by_a_second_process_with_no_departure(tmp_path, cases):
    records = _measure(tmp_path, cases, "exact")
    assert sorted(records) == ["t01_tiny", "t02_tiny"]
    for record in records.values():
        assert record["status"] == Status.OK.value and record["reproduced"] is True and RUNS == 2
        assert record["parity"]["max_abs"] == 0 and "departure" not in record
        assert json.loads(json.dumps(record)) == record  # stored as strict JSON


def test_a_departing_image_carries_where_it_departs(tmp_path, cases):
    record = _measure(tmp_path, cases[:1], "edge")["t01_tiny"]
    assert record["status"] == Status.OK.value and record["parity"]["max_abs"] > 0
    assert record["departure"]  # the rows, columns or pixels where it differs


def test_a_crash_is_its_record_never_an_exception_and_has_no_departure(tmp_path, cases):
    record = _measure(tmp_path, cases[:1], "crash")["t01_tiny"]
    assert record["status"] == Status.CRASHED.value and "departure" not in record
