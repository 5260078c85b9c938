"""Golden parity: detsim against images made by nanoBragg.c, one test per manifest case and dtype."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from _tolerances import PARITY_MIN_R
from conftest import GOLDEN_DIR, MANIFEST
from detsim.engine import prepare, render
from helpers import config_from_args, pearson_r, read_golden_image, to_numpy

CASE_IDS = [case["id"] for case in MANIFEST]


def _render_case(golden_case, dtype, device, mode, monkeypatch):
    case_dir = GOLDEN_DIR / golden_case["id"]
    monkeypatch.chdir(case_dir)  # input files in args.txt are relative to the case directory
    args = (case_dir / "args.txt").read_text().split()
    assert args == golden_case["args"]
    setup = prepare(config_from_args(args), device=device, dtype=dtype)
    image, _ = render(setup, mode=mode)
    return case_dir, setup, image


@pytest.mark.parametrize("golden_case", CASE_IDS, indirect=True)
def test_golden_parity(golden_case, dtype, device, monkeypatch):
    case_dir, setup, image = _render_case(golden_case, dtype, device, "eager", monkeypatch)
    reference = read_golden_image(case_dir, golden_case["shape"])

    assert tuple(image.shape) == tuple(golden_case["shape"])
    assert image.dtype == dtype
    assert setup.steps == golden_case["steps"]
    ours = to_numpy(image)
    assert np.isfinite(ours).all()
    assert (ours[reference == 0] == 0).all() or golden_case["nonzero_fraction"] == 1.0
    r = pearson_r(ours, reference)
    assert r >= PARITY_MIN_R, f"{golden_case['id']}: r = {r:.8f}"


@pytest.mark.slow
@pytest.mark.parametrize("golden_case", CASE_IDS, indirect=True)
def test_golden_parity_compiled(golden_case, dtype, device, monkeypatch):
    case_dir, _, image = _render_case(golden_case, dtype, device, "compiled", monkeypatch)
    reference = read_golden_image(case_dir, golden_case["shape"])
    assert tuple(image.shape) == tuple(golden_case["shape"])
    r = pearson_r(to_numpy(image), reference)
    assert r >= PARITY_MIN_R, f"{golden_case['id']}: r = {r:.8f}"
