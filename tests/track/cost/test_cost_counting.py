"""Counting a region's instructions under callgrind: the harness, the parse, the not-measured reason."""

from __future__ import annotations

import shutil

import pytest

from detsim.track.cost import counting
from detsim.track.cost.counting import CountError, count, harness, not_measured_reason, parse_total

CAN_COUNT = not_measured_reason() is None
needs_valgrind = pytest.mark.skipif(not CAN_COUNT, reason=str(not_measured_reason()))

CALLGRIND_FILE = """# callgrind format
version: 1
creator: callgrind-3.19.0
cmd: python -c ...
events: Ir
summary: 0
fl=(1) ???
fn=(1) f
0 11265765
totals: 11265765
"""


def test_parse_total_reads_the_totals_line():
    assert parse_total(CALLGRIND_FILE) == 11265765


def test_parse_total_without_a_total_is_an_error():
    with pytest.raises(CountError, match="totals"):
        parse_total("events: Ir\n")


def test_harness_counts_only_the_second_run_of_the_region():
    script = harness("x = 1", "x + 1")
    lines = script.splitlines()
    start = lines.index("_hooks.callgrind_start_instrumentation()")
    stop = lines.index("_hooks.callgrind_stop_instrumentation()")
    assert lines[start - 1] == "_region()" and lines[start + 1] == "_region()" and stop == start + 2
    assert "import torch" in lines[: start] and "x = 1" in lines[: start]
    compile(script, "<harness>", "exec")


def test_missing_valgrind_is_one_line_naming_the_debian_package(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    reason = not_measured_reason()
    assert reason is not None and "\n" not in reason and "`valgrind`" in reason
    with pytest.raises(CountError, match="valgrind"):
        count("x = 1", "x")


def test_missing_hooks_is_one_line_naming_the_pypi_package(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/valgrind")
    monkeypatch.setattr(counting, "HOOKS_MODULE", "no_such_package.hooks")
    reason = not_measured_reason()
    assert reason is not None and "\n" not in reason and "pytest-codspeed==5.0.4" in reason


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
