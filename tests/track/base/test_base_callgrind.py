"""detsim.track.base.callgrind: the count scripts, the valgrind command, the parse, the not-measured reason."""

from __future__ import annotations

import importlib
import math
import shutil
import sys
import threading
import types

import pytest
import torch

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


def test_the_region_sees_what_setup_defined():
    """The harness's own names never shadow setup's: its script run without valgrind (where the start and
    stop requests do nothing). Quick twin of the slow count that sees a setup's ``_x`` scale the work, in
    tests/track/cost/test_cost_counting.py."""
    script = harness("_x = torch.ones(1 << 10)\n_seen = []", "_seen.append(torch.sin(_x).sum().item())")
    namespace = {}
    threads = torch.get_num_threads()
    try:
        exec(script, namespace)  # noqa: S102 - the script a count runs, without valgrind
    finally:
        torch.set_num_threads(threads)  # the script pins one thread
    assert namespace["_seen"] == [pytest.approx(1024 * math.sin(1.0))] * 2  # the warm-up and the counted run


@pytest.mark.parametrize("planted", [None, "26000"])
def test_a_planted_computation_joins_each_run_of_the_region_only_when_asked(monkeypatch, planted):
    """``DETSIM_COST_PLANT=N`` adds ``exp`` of N elements to both runs of the region (the script run without
    valgrind); quick twin of the gate's slow test that a planted 3 % is flagged (tests/track/gate/test_gate_cost.py)."""
    if planted is None:
        monkeypatch.delenv(callgrind.PLANT_VAR, raising=False)
    else:
        monkeypatch.setenv(callgrind.PLANT_VAR, planted)
    exps = []
    exp = torch.exp
    monkeypatch.setattr(torch, "exp", lambda x: exps.append(x.numel()) or exp(x))
    threads = torch.get_num_threads()
    try:
        exec(harness("x = 1", "x"), {})  # noqa: S102 - the script a count runs, without valgrind
    finally:
        torch.set_num_threads(threads)
    assert exps == ([] if planted is None else [int(planted)] * 2)


def test_harness_many_counts_each_region_in_its_own_thread_between_start_and_stop():
    script = harness_many(["def _render():\n    return 1", "def _render():\n    return 2"])
    lines = script.splitlines()
    start = lines.index("_hooks.callgrind_start_instrumentation()")
    stop = lines.index("_hooks.callgrind_stop_instrumentation()")
    assert lines.index("    _t.start()") < start < lines.index("    _go[_i].set()") < stop < lines.index("_end.set()")
    assert lines[start - 3:start] == ["import gc", "gc.collect()", "gc.disable()"]  # no collection is counted
    assert "def _render():\\n    return 2" in script and lines[1] == "import threading"
    compile(script, "<harness>", "exec")


def test_harness_many_warms_every_region_up_then_runs_each_in_a_thread_of_its_own_while_counting(monkeypatch):
    """The script run without valgrind, its start and stop requests recorded: each region is warmed up in
    the main thread, then runs once more in a thread of its own between start and stop, in order. Quick
    twin of the slow count of the asv suite's workloads in one valgrind process
    (tests/track/test_benchmarks_common.py)."""
    seen = types.ModuleType("_harness_seen")
    seen.events = []
    monkeypatch.setitem(sys.modules, seen.__name__, seen)
    hooks = importlib.import_module(callgrind.HOOKS_MODULE)
    monkeypatch.setattr(hooks, "callgrind_start_instrumentation", lambda: seen.events.append("start"))
    monkeypatch.setattr(hooks, "callgrind_stop_instrumentation", lambda: seen.events.append("stop"))
    monkeypatch.delenv(callgrind.PLANT_VAR, raising=False)
    record = ("import threading, _harness_seen\n"
              "def _render():\n    _harness_seen.events.append(({}, threading.get_ident()))")
    setups = [record.format(i) for i in range(2)]
    threads = torch.get_num_threads()
    try:
        exec(harness_many(setups), {})  # noqa: S102 - the script a count runs, without valgrind
    finally:
        torch.set_num_threads(threads)
    main = threading.get_ident()
    assert seen.events[:2] == [(0, main), (1, main)] and seen.events[2] == "start" and seen.events[-1] == "stop"
    counted = seen.events[3:-1]
    assert [i for i, _ in counted] == [0, 1] and len({t for _, t in counted} | {main}) == 3


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
