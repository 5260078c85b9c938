"""Golden renders and hashes: the same bits the asv tracks hash, failures per case, one thread."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import detsim

from detsim.track.base.golden import GoldenCase, find_case
from detsim.track.base import hashing
from detsim.track.base.runtime import thread_count
from detsim.track.base import golden_hashes
from detsim.track.base.golden_hashes import machine_class, render_hashes

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden"


def test_suite_hash_definition_and_coverage_guard(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    threads = torch.get_num_threads()
    try:
        common = importlib.import_module("benchmarks.common")  # pins torch to 1 thread, as asv runs it
    finally:
        torch.set_num_threads(threads)
    assert Path(common.hashing.__file__) == Path(hashing.__file__)  # the asv tracks hash with the base's definition
    parity = importlib.import_module("benchmarks.bench_parity")
    names = {common.case_attr(case.id) for case in common.CASES}
    assert {n for n in dir(parity) if n.startswith("track_parity_")} == {f"track_parity_{n}" for n in names}
    cases = common.CASES
    monkeypatch.setattr(common, "CASES", [SimpleNamespace(id="x.1"), SimpleNamespace(id="x_1")])
    with pytest.raises(ImportError, match="bench_parity"):
        importlib.reload(parity)
    monkeypatch.setattr(common, "CASES", cases)
    importlib.reload(parity)


def test_a_golden_hash_is_the_asv_tracks_hash(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    with thread_count(torch.get_num_threads()):
        common = importlib.import_module("benchmarks.common")
        case = next(c for c in common.CASES if c.id == "a01_cubic_mosflm_center")
        common.pin_threads()
        expected = common.render_case(case)["sha256"]
    result = render_hashes([find_case("a01_cubic_mosflm_center", GOLDEN)])
    assert result.hashes == {"a01_cubic_mosflm_center": expected} and result.failures == {}
    assert result.mode == golden_hashes.EAGER


def test_renders_use_one_thread_and_restore_the_count(monkeypatch):
    seen = []
    monkeypatch.setattr(detsim, "simulate", lambda *a, **k: seen.append(torch.get_num_threads()) or torch.zeros(1))
    with thread_count(2):
        render_hashes([find_case("a01", GOLDEN)])
        assert torch.get_num_threads() == 2
    assert seen == [golden_hashes.THREADS] == [1]


def test_a_case_that_fails_is_recorded_not_raised(tmp_path):
    (tmp_path / "args.txt").write_text("-mat missing.mat -N 1")
    broken = GoldenCase.from_folder(tmp_path, {"id": "broken", "shape": [4, 4]})
    result = render_hashes([broken, find_case("a01", GOLDEN)])
    assert list(result.failures) == ["broken"] and list(result.hashes) == ["a01_cubic_mosflm_center"]
    assert result.failures["broken"].startswith("ConfigError: no structure factors") and "\n" not in result.failures["broken"]


def test_a_wrong_shape_or_a_non_finite_image_fails_the_case(monkeypatch):
    case = find_case("a01", GOLDEN)
    wrong = GoldenCase(id=case.id, folder=case.folder, args=case.args, shape=(3, 3))
    assert render_hashes([wrong]).failures[case.id].startswith("GoldenError: ")  # not the reference's shape
    assert "expected a 3x3 image" in render_hashes([wrong]).failures[case.id]
    monkeypatch.setattr(detsim, "simulate", lambda *a, **k: torch.full(case.shape, float("nan"), dtype=torch.float64))
    assert dict(render_hashes([case]).failures) == {case.id: "ValueError: the image has non-finite values"}


def test_an_unavailable_path_raises():
    with pytest.raises(NotImplementedError, match="no warp path"):
        render_hashes([], mode="warp")


def test_failures_are_one_line_and_the_machine_class_is_the_renders(monkeypatch):
    raised = iter([ValueError("first\nsecond"), KeyError()])
    monkeypatch.setattr(detsim, "simulate", lambda *a, **k: (_ for _ in ()).throw(next(raised)))
    a01, c02 = find_case("a01", GOLDEN), find_case("c02", GOLDEN)
    assert dict(render_hashes([a01, c02]).failures) == {a01.id: "ValueError: first", c02.id: "KeyError: "}
    here = machine_class()
    assert (here.threads, here.dtype, here.device) == (1, "float64", "cpu") and here.torch == torch.__version__
