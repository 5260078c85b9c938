"""Shared fixtures: device and dtype come from here, golden cases from tests/golden (through
:mod:`detsim.track.base.golden`, the one loader of golden cases)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from detsim.track.base.golden import load_cases

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
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", _devices(metafunc.config))
    if "dtype" in metafunc.fixturenames:
        metafunc.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])


@pytest.fixture
def golden_case(request):
    """A :class:`~detsim.track.base.golden.GoldenCase` by id (use with indirect parametrization)."""
    return GOLDEN_CASES[request.param]


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
