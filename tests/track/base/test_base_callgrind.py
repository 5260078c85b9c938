"""detsim.track.base.callgrind: the count scripts, the valgrind command, the parse, the not-measured reason."""

from __future__ import annotations

import shutil

import pytest

from detsim.track.base import callgrind
from detsim.track.base.callgrind import (
    COUNT_ENV, SEPARATE_THREADS, CountError, command, harness, harness_many, not_measured_reason, parse_total,
)

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


def test_parse_total_reads_the_totals_line_else_the_summary():
    assert parse_total(CALLGRIND_FILE) == 11265765
    assert parse_total("events: Ir\nsummary: 7\n") == 7


def test_parse_total_without_a_total_is_an_error():
    with pytest.raises(CountError, match="totals"):
        parse_total("events: Ir\n")


def test_harness_counts_only_the_second_run_of_the_region():
    script = harness("x = 1", "x + 1")
    lines = script.splitlines()
    start = lines.index("_hooks.callgrind_start_instrumentation()")
    stop = lines.index("_hooks.callgrind_stop_instrumentation()")
    assert lines[start - 4] == "_region()" and lines[start + 1] == "_region()" and stop == start + 2
    assert lines[start - 3:start] == ["import gc", "gc.collect()", "gc.disable()"]  # no collection is counted
    assert "import torch" in lines[: start] and "x = 1" in lines[: start]
    assert f"_plant = int(os.environ.get({callgrind.PLANT_VAR!r}) or 0)" in lines
    compile(script, "<harness>", "exec")


def test_harness_many_counts_each_region_in_its_own_thread_between_start_and_stop():
    script = harness_many(["def _render():\n    return 1", "def _render():\n    return 2"])
    lines = script.splitlines()
    start = lines.index("_hooks.callgrind_start_instrumentation()")
    stop = lines.index("_hooks.callgrind_stop_instrumentation()")
    assert lines.index("    _t.start()") < start < lines.index("    _go[_i].set()") < stop < lines.index("_end.set()")
    assert lines[start - 3:start] == ["import gc", "gc.collect()", "gc.disable()"]  # no collection is counted
    assert "def _render():\\n    return 2" in script and lines[1] == "import threading"
    compile(script, "<harness>", "exec")


def test_the_command_counts_from_the_start_request_into_the_given_file(tmp_path):
    out = tmp_path / "callgrind.out"
    plain = command("pass", out, python="/bin/python3")
    assert plain == ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
                     "/bin/python3", "-c", "pass"]
    threads = command("pass", out, python="/bin/python3", separate_threads=True)
    assert threads == [*plain[:3], SEPARATE_THREADS, *plain[3:]]
    assert COUNT_ENV == {"PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def test_missing_valgrind_is_one_line_naming_the_debian_package(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    reason = not_measured_reason()
    assert reason is not None and "\n" not in reason and "`valgrind`" in reason


def test_missing_hooks_is_one_line_naming_the_pypi_package(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/valgrind")
    monkeypatch.setattr(callgrind, "HOOKS_MODULE", "no_such_package.hooks")
    reason = not_measured_reason()
    assert reason is not None and "\n" not in reason and "pytest-codspeed==5.0.4" in reason
