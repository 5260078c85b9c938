"""Counting a region's instructions in a fresh valgrind process: what a count sees, keeps and leaves."""

from __future__ import annotations

import shutil

import pytest

from detsim.track.base.callgrind import CountError, not_measured_reason
from detsim.track.cost.counting import count

CAN_COUNT = not_measured_reason() is None
needs_valgrind = pytest.mark.skipif(not CAN_COUNT, reason=str(not_measured_reason()))


def test_a_count_without_valgrind_is_a_count_error_naming_it(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(CountError, match="valgrind"):
        count("x = 1", "x")


@needs_valgrind
def test_a_count_sees_the_region_and_keeps_the_callgrind_file(tmp_path):
    small = count("import math", "sum(math.sqrt(i) for i in range(1000))", out_dir=tmp_path)
    large = count("import math", "sum(math.sqrt(i) for i in range(100000))", out_dir=tmp_path)
    assert 0 < small.instructions < large.instructions
    assert 50 < large.instructions / small.instructions < 200  # the region, not the start-up
    assert large.callgrind_file.is_file() and large.callgrind_file.parent == tmp_path


@needs_valgrind
def test_the_region_sees_setup_names_the_harness_also_uses(tmp_path):
    small = count("_x = torch.ones(1 << 10)", "torch.sin(_x).sum()", out_dir=tmp_path, keep=False)
    large = count("_x = torch.ones(1 << 18)", "torch.sin(_x).sum()", out_dir=tmp_path, keep=False)
    assert large.instructions > 20 * small.instructions  # the harness's own names never shadow setup's


@needs_valgrind
def test_a_failing_region_is_a_count_error_and_leaves_no_file(tmp_path):
    with pytest.raises(CountError, match="exited 1"):
        count("x = 1", "1 / 0", out_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


@needs_valgrind
def test_a_count_that_keeps_nothing_leaves_nothing_and_runs_outside_the_checkout(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "detsim").mkdir()  # a checkout here would shadow the installed detsim from the working directory
    (tmp_path / "detsim" / "__init__.py").write_text("raise ImportError('the checkout, not the installed package')\n")
    made = count("import detsim", "detsim.__name__", keep=False)
    assert made.instructions > 0 and made.callgrind_file is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["detsim"]
