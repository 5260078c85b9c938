"""The golden baseline file: validation, and which machine-class fields differ from its holds_for."""

from __future__ import annotations

from pathlib import Path

import pytest

from detsim.track.base.provenance import MachineClass
from detsim.track.baselines import baseline_file as baselines
from detsim.track.baselines.baseline_file import differing_fields, problems

DATA = Path(__file__).resolve().parents[2] / "data" / "asv"
HERE = MachineClass(cpu_class="x86_64 AuthenticAMD AVX512", torch="2.13.0+cpu", threads=1, dtype="float64", device="cpu")


def test_baseline_files_are_validated(tmp_path):
    with pytest.raises(baselines.BaselineError, match="no baseline file"):
        baselines.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": 1, "holds_for": {}, "cases": {"a": "not-a-hash"}}')
    with pytest.raises(baselines.BaselineError, match="malformed baseline"):
        baselines.load(bad)
    assert baselines.load(DATA / "good" / "results" / "baselines" / "golden_hashes.json")["schema"] == 1


def test_every_problem_is_named(tmp_path):
    sha = "a" * 64
    assert problems({"schema": 1, "holds_for": {}, "cases": {"a": sha}}) == []  # cases_compiled is optional
    assert problems({"schema": 2}) == ["schema is not 1"]
    assert problems({"schema": 1, "cases": {"a": sha.upper()}, "cases_compiled": []}) == [
        "no holds_for record", "cases is not a map of case id -> sha256 hex digest",
        "cases_compiled is not a map of case id -> sha256 hex digest"]
    cut = tmp_path / "cut.json"
    cut.write_text('{"schema": ')
    with pytest.raises(baselines.BaselineError, match="not readable JSON"):
        baselines.load(cut)


def test_differing_fields_compare_machine_classes():
    record = HERE.as_record()
    assert differing_fields(HERE, record) == []
    assert differing_fields(HERE, {**record, "cpu_class": "x86_64 GenuineIntel AVX2", "threads": 2}) == [
        "cpu_class", "threads"]
    assert differing_fields(HERE, {"torch": "2.13.0+cpu"}) == ["cpu_class", "device", "dtype", "threads"]
