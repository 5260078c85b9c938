"""The bench gate's noise experiment, kept true: unchanged runs pass 5 of 5, planted faults fail.

Runs the CI job itself (``.ci/bench``) with this interpreter: first ``--refresh`` into a baseline made
here and now (the committed baseline's calibrated ratios belong to the machine that recorded it),
then five unchanged runs, then one run per planted fault of bench/conftest.py. It asserts the
gate's verdicts and the names in its messages, never a time. About ten bench runs: several minutes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
UNCHANGED_RUNS = 5


def bench_job(folder: Path, name: str, *args: str, **plant: str) -> subprocess.CompletedProcess:
    """``bash .ci/bench`` gating ``folder/name.json`` against ``folder/baseline.json``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("DETSIM_BENCH_")}
    env.update(BENCH_PYTHON=sys.executable, BENCH_BASELINE=str(folder / "baseline.json"),
               BENCH_JSON=str(folder / f"{name}.json"), **plant)
    return subprocess.run(["bash", str(REPO / ".ci" / "bench"), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=1200)


def named(done: subprocess.CompletedProcess, finding: str) -> set[str]:
    """Names on the gate's finding lines that start so (e.g. ``REGRESSED timing``)."""
    return {line[len(finding) + 1:].split(": ")[0] for line in done.stdout.splitlines()
            if line.startswith(f"{finding} ")}


def verdict(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stdout.splitlines() if line.startswith("summary: ")]
    return lines[-1] if lines else f"no verdict; stderr: {done.stderr[-2000:]}"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bench")
    done = bench_job(folder, "refresh", "--refresh")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return folder


@pytest.fixture(scope="module")
def simulate_names(folder) -> set[str]:
    """The benchmarks that render images (golden cases and per-path workloads): the planted faults hit all."""
    data = json.loads((folder / "baseline.json").read_text())
    names = {b["name"] for b in data["benchmarks"] if b["extra_info"].get("role") in ("simulate", "path")}
    assert any(name.startswith("test_path[") for name in names) and any(
        name.startswith("test_simulate[") for name in names)
    return names


def test_unchanged_runs_pass(folder):
    runs = [bench_job(folder, f"unchanged{i}") for i in range(UNCHANGED_RUNS)]
    outcomes = [(done.returncode, verdict(done)) for done in runs]
    failed = [done.stdout for done in runs if done.returncode != 0]
    assert [code for code, _ in outcomes] == [0] * UNCHANGED_RUNS, (outcomes, failed)


def test_planted_slowdown_fails(folder, simulate_names):
    done = bench_job(folder, "slowdown", DETSIM_BENCH_SLOWDOWN="2")
    assert done.returncode == 1, verdict(done)
    slower = named(done, "REGRESSED timing")
    assert "suite[cpu]" in slower, done.stdout
    assert slower & simulate_names, done.stdout
    assert not named(done, "REGRESSED parity") and not named(done, "CHANGED image hash")


def test_planted_parity_break_fails(folder, simulate_names):
    done = bench_job(folder, "parity", DETSIM_BENCH_PLANT="parity")
    assert done.returncode == 1, verdict(done)
    assert named(done, "REGRESSED parity") == simulate_names, done.stdout
    assert "(below 0.9995 against " in done.stdout


def test_planted_hash_change_fails(folder, simulate_names):
    done = bench_job(folder, "hash", DETSIM_BENCH_PLANT="hash")
    assert done.returncode == 1, verdict(done)
    assert named(done, "CHANGED image hash") == simulate_names, done.stdout
    assert not named(done, "REGRESSED parity"), done.stdout
