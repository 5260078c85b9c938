"""The stored baselines hold on this machine class, and agree with each other: a baseline left stale after an
accepted change fails the default test run, naming the command that refreshes them all."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from detsim.track.base import golden_hashes
from detsim.track.base.golden import class_path, find_case, golden_dir
from detsim.track.base.provenance import MachineClass
from detsim.track.judge import stored_baselines
from detsim.track.judge.stored_baselines import GATE_BASELINE, REFRESH, StoreError, classes_held, disagreements, \
    expected_hashes, stale_message

ROOT = Path(__file__).resolve().parents[3]
CHEAP = "g01_hkl_nointerp"  # the gate's p1_small: 256x256, one step, ~0.2 s a render
DTYPES = ("float64", "float32")


def test_the_committed_stores_agree_where_they_hold_the_same_render():
    shared, lines = disagreements(ROOT)
    assert not lines, stale_message(lines)
    assert shared >= 2  # g01 and j01 in float64 on the class both were recorded on: the check compares something


def test_a_cheap_case_renders_here_as_every_store_of_this_machine_class_holds():
    """Instruction counts are not checked here (one count under valgrind takes ~15 s); `bash .ci/bench` gates
    them. Image hashes only, in every dtype a store holds for this machine class."""
    here = [MachineClass.here(torch, threads=golden_hashes.THREADS, dtype=d, device=golden_hashes.DEVICE)
            for d in DTYPES]
    expected = expected_hashes(ROOT, CHEAP, here)
    if not expected:
        pytest.skip(f"no stored baseline holds this machine class ({here[0].describe()}); stored: "
                    + "; ".join(classes_held(ROOT)))
    case = find_case(CHEAP, golden_dir(ROOT))
    rendered = {d: golden_hashes.render_hashes([case], dtype=d).hashes.get(CHEAP, "no image")
                for d in {e.machine.dtype for e in expected}}
    stale = [f"{CHEAP} ({e.machine.dtype}): {e.describe()} holds {e.sha256[:16]}, this machine renders "
             f"{rendered[e.machine.dtype][:16]}" for e in expected if rendered[e.machine.dtype] != e.sha256]
    assert not stale, stale_message(stale)
    assert {e.store for e in expected} == {GATE_BASELINE, class_path(here[0])}  # both stores were checked


# ---- the rules, on a project of copies

def _project(tmp_path: Path) -> Path:
    """A copy of the committed baselines (and nothing else) under ``tmp_path``, the gate's made to agree with the
    golden hashes (so that these tests judge the rules, whatever the committed files hold)."""
    shutil.copytree(ROOT / "results" / "baselines", tmp_path / "results" / "baselines")
    golden = {}
    for gate in stored_baselines.gate_expectations(tmp_path):
        found = stored_baselines.golden_expectation(tmp_path, gate.machine, gate.case)
        if found is not None:
            golden[gate.case, gate.machine] = found.sha256

    def agree(bench):
        machine = MachineClass.from_record(bench["extra_info"])
        bench["extra_info"]["sha256"] = golden.get((bench["extra_info"].get("case"), machine),
                                                   bench["extra_info"].get("sha256"))

    _edit_gate(tmp_path, agree)
    return tmp_path


def _edit_gate(root: Path, edit) -> None:
    path = root / GATE_BASELINE
    data = json.loads(path.read_text())
    for bench in data["benchmarks"]:
        edit(bench)
    path.write_text(json.dumps(data))


def test_a_gate_baseline_that_predates_an_accepted_change_disagrees_and_names_the_command(tmp_path):
    root = _project(tmp_path)

    def stale(bench):
        if bench["name"] == "test_simulate[p1_small-cpu-float64]":
            bench["extra_info"]["sha256"] = "0" * 64

    _edit_gate(root, stale)
    shared, lines = disagreements(root)
    assert shared >= 2 and len(lines) == 1
    assert lines[0].startswith(f"{CHEAP}: {GATE_BASELINE} (test_simulate[p1_small-cpu-float64]) holds {'0' * 16}, ")
    assert f"`{REFRESH}`" in stale_message(lines) and REFRESH == "make baselines"


def test_the_float32_render_and_another_class_are_not_compared_with_the_golden_hashes(tmp_path):
    root = _project(tmp_path)

    def other_class(bench):
        if bench["name"] == "test_simulate[phi_40steps-cpu-float64]":
            bench["extra_info"].update(cpu_class="aarch64 ARM SVE", sha256="1" * 64)
        if bench["extra_info"].get("dtype") == "float32":
            bench["extra_info"]["sha256"] = "2" * 64  # the golden hashes hold float64 renders only

    _edit_gate(root, other_class)
    assert disagreements(root) == (1, [])


def test_the_expectations_of_a_case_per_class(tmp_path):
    root = _project(tmp_path)
    gate = {e.machine: e for e in stored_baselines.gate_expectations(root) if e.case == CHEAP}
    float64 = next(m for m in gate if m.dtype == "float64")
    found = expected_hashes(root, CHEAP, [float64])
    assert [(e.store, e.entry) for e in found] == [(GATE_BASELINE, "test_simulate[p1_small-cpu-float64]"),
                                                   (class_path(float64), "cases")]
    elsewhere = MachineClass(**{**float64.as_record(), "torch": "9.9"})
    assert expected_hashes(root, CHEAP, [elsewhere]) == []
    assert float64.describe() in classes_held(root)


def test_an_unreadable_store_is_named(tmp_path):
    root = _project(tmp_path)
    (root / GATE_BASELINE).write_text("{")
    with pytest.raises(StoreError, match="pytest-baseline.json: not valid JSON"):
        disagreements(root)
