"""detsim.track.target.cases: a target's cases, from its own folder or detsim's golden ones, found from any
working directory."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from detsim.track.base.golden import GoldenError, load_cases
from detsim.track.target.cases import golden_folder, target_case, target_cases
from detsim.track.target.spec import TargetSpec

ROOT = Path(__file__).resolve().parents[3]


def test_golden_cases_all_or_the_specs_subset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not from the checkout: the root given (or the installed suite's) is used
    every = target_cases(TargetSpec("port", tmp_path, ("nb",)), ROOT)
    assert [c.id for c in every] == [c.id for c in load_cases(ROOT / "tests" / "golden")]
    some = target_cases(TargetSpec("port", tmp_path, ("nb",), cases=("a01", "e01_triclinic_misset")), ROOT)
    assert [c.id for c in some] == ["a01_cubic_mosflm_center", "e01_triclinic_misset"]
    assert golden_folder(tmp_path) == ROOT / "tests" / "golden"  # no cases under tmp_path: beside the package
    assert target_case(TargetSpec("port", tmp_path, ("nb",)), "o02", ROOT).id == "o02_nopolar"


def test_a_folder_of_the_targets_own_cases(tmp_path):
    for name in ("x01_small", "x02_smaller"):
        (tmp_path / "cases" / name).mkdir(parents=True)
        (tmp_path / "cases" / name / "args.txt").write_text("-N 1 -floatfile image.bin\n")
        np.zeros(4, "<f4").tofile(tmp_path / "cases" / name / "image.bin")
    spec = TargetSpec("port", tmp_path, ("nb",), case_folder=tmp_path / "cases")
    with pytest.raises(GoldenError, match="the image shape is unknown"):  # refused before anything is built
        target_cases(spec, ROOT)
    (tmp_path / "cases" / "manifest.json").write_text(json.dumps([{"id": "x01_small", "shape": [2, 2]},
                                                                  {"id": "x02_smaller", "shape": [2, 2]}]))
    assert [c.id for c in target_cases(spec, ROOT)] == ["x01_small", "x02_smaller"]
    assert target_case(spec, "x02", ROOT).id == "x02_smaller"
    with pytest.raises(GoldenError, match="'x0' is ambiguous"):
        target_case(spec, "x0", ROOT)
    with pytest.raises(GoldenError, match="'a01' is not a case"):
        target_case(spec, "a01", ROOT)
