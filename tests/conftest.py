"""Shared fixtures: device and dtype come from here, golden cases from tests/golden (through
:mod:`detsim.track.base.golden`, the one loader of golden cases)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from detsim.track.base.golden import load_cases
from detsim.track.judge import confirm
from detsim.track.judge.confirm import decide
from detsim.track.judge.confirm import ROUNDS, Remeasurement
from detsim.track.report.markdown import SUMMARY_ENV


def pytest_configure(config):
    """One torch thread in every process that runs tests, alone or as one of pytest-xdist's workers: the
    suite's renders are small, and a thread pool per process on a busy machine mostly waits for a core (with
    torch's default of one thread per core the same renders took four times the CPU time on two shared
    cores). Tests about thread counts set theirs. torch is imported here, not with this file: xdist's
    controller runs no test, and its ~1.5 s import would delay every worker's start."""
    if os.environ.get("PYTEST_XDIST_WORKER") or not config.getoption("numprocesses", None):
        import torch

        torch.set_num_threads(1)
        # and in every process a test starts (a detsim command, a job, a fresh interpreter) unless it says how
        # many: torch's default there is a thread per core, and detsim's -threads default a worker process per
        # core, which on two shared cores cost CPU time and proved nothing a test asks for
        for name in THREAD_VARS:
            os.environ.setdefault(name, "1")


THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")  # torch's (and OpenMP's, MKL's) thread count in a new process

# A run started in the background (`nohup make test &`, `cmd &` in a script) inherits Ctrl-C ignored, and
# every process the tests start would too (an ignored signal stays ignored across exec): the tests that
# press Ctrl-C on a child need it delivered, as at a terminal. A handler (unlike an ignore) is reset on exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

GOLDEN_DIR = Path(__file__).parent / "golden"
GOLDEN_CASES = {case.id: case for case in load_cases(GOLDEN_DIR)}  # id -> GoldenCase, manifest order
MANIFEST = [dict(case.record) for case in GOLDEN_CASES.values()]  # the manifest's records
CASES = {record["id"]: record for record in MANIFEST}


def pytest_addoption(parser):
    parser.addoption(
        "--device", action="append", default=None,
        help="device to run device-parametrized tests on (repeatable); default: cpu, plus cuda when available",
    )


def _devices(config) -> list[str]:
    chosen = config.getoption("--device")
    if chosen:
        return chosen
    import torch

    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", _devices(metafunc.config))
    if "dtype" in metafunc.fixturenames:
        import torch

        metafunc.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])


@pytest.fixture
def golden_case(request):
    """A :class:`~detsim.track.base.golden.GoldenCase` by id (use with indirect parametrization)."""
    return GOLDEN_CASES[request.param]


@pytest.fixture(autouse=True)
def _no_job_summary(monkeypatch):
    """No test appends to the summary of the CI job that runs it: ``detsim-track regressions`` appends its
    Markdown verdict to ``$GITHUB_STEP_SUMMARY`` where that is set (the tests of that set their own)."""
    monkeypatch.delenv(SUMMARY_ENV, raising=False)


@pytest.fixture(autouse=True)
def _triton_interpret_unchanged():
    """Every test leaves TRITON_INTERPRET as it found it.

    ``detsim-track diverge`` sets it for its own process; run in-process by a test, it would leak into
    every later subprocess (a benchmark run would then time Triton's interpreter on a 4096² image).
    """
    before = os.environ.get("TRITON_INTERPRET")
    yield
    if before is None:
        os.environ.pop("TRITON_INTERPRET", None)
    else:
        os.environ["TRITON_INTERPRET"] = before


# -- the suite's timing re-measurements, faked (detsim.track.judge) ------------------------------
JITTER = (1.0, 1.01, 0.99, 1.02, 0.98, 1.0)  # per-round spread of a fake re-measurement


def _fake_remeasurement(ratio: float, commit_a: str = "a" * 40, commit_b: str = "b" * 40) -> Remeasurement:
    """Paired rounds whose B is ``ratio`` times A, with a little spread (so the rank test has something to rank)."""
    a = tuple(1.0 * JITTER[i % len(JITTER)] for i in range(ROUNDS))
    b = tuple(x * ratio * JITTER[(i + 2) % len(JITTER)] for i, x in enumerate(a))
    return Remeasurement(commit_a, commit_b, a, b, "AB" * ROUNDS)


@pytest.fixture
def fake_remeasurement():
    """``fake_remeasurement(ratio)``: paired rounds whose B is ``ratio`` times A."""
    return _fake_remeasurement


@pytest.fixture
def remeasured_as(monkeypatch):
    """``remeasured_as({benchmark substring: ratio}, default=1.0)``: every re-measurement in the test is
    a fake whose ratio is looked up by the benchmark's name; returns the list of targets measured."""
    measured = []

    def install(ratios: dict[str, float] | None = None, default: float = 1.0):
        def measure_factory(root):
            def measure(target, commit_a, commit_b, threshold, deadline=None):
                measured.append((target, commit_a, commit_b))
                ratio = next((r for key, r in (ratios or {}).items() if key in target.label), default)
                return decide(_fake_remeasurement(ratio, commit_a, commit_b), threshold)
            return measure
        monkeypatch.setattr(confirm, "default_measure", measure_factory)
        monkeypatch.setattr(confirm, "machines_here", lambda: None)
        return measured

    return install
