"""Shared fixtures: device and dtype come from here, golden cases from tests/golden/manifest.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

GOLDEN_DIR = Path(__file__).parent / "golden"
MANIFEST = json.loads((GOLDEN_DIR / "manifest.json").read_text())
CASES = {case["id"]: case for case in MANIFEST}


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
    """The manifest record of a golden case, by id (use with indirect parametrization)."""
    return CASES[request.param]
