"""detsim.track.base.baseline_file: validation, lookup by machine class, fields that differ from holds_for."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from detsim.track.base import baseline_file as baselines
from detsim.track.base.baseline_file import BASELINE, class_path, differing_fields, for_class, problems
from detsim.track.base.provenance import MachineClass

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


def _write(root: Path, path: Path, machine: MachineClass, digit: str) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(json.dumps({"schema": 1, "holds_for": machine.as_record(), "cases": {"a": digit * 64}}))


def test_for_class_finds_a_class_own_file_before_the_single_file_of_earlier_versions(tmp_path):
    intel = replace(HERE, cpu_class="x86_64 GenuineIntel AVX512")
    assert for_class(tmp_path, HERE) is None
    _write(tmp_path, BASELINE, HERE, "1")
    assert for_class(tmp_path, HERE) == (BASELINE, json.loads((tmp_path / BASELINE).read_text()))
    assert for_class(tmp_path, intel) is None
    _write(tmp_path, class_path(intel), intel, "2")
    _write(tmp_path, class_path(HERE), HERE, "3")
    assert for_class(tmp_path, HERE)[1]["cases"] == {"a": "3" * 64}
    assert for_class(tmp_path, intel) == (class_path(intel), json.loads((tmp_path / class_path(intel)).read_text()))
    _write(tmp_path, class_path(intel), HERE, "2")  # a file named for one class holding another's hashes
    with pytest.raises(baselines.BaselineError, match="holds_for does not describe"):
        for_class(tmp_path, HERE)
