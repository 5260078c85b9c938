"""Golden parity: detsim against images made by nanoBragg.c, one test per manifest case and dtype."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from _tolerances import PARITY_MIN_R
from conftest import GOLDEN_CASES
from detsim.argconfig import config_from_argv
from detsim.engine import prepare, render
from detsim.track.base.metrics import passes_parity
from helpers import pearson_r, to_numpy

CASE_IDS = list(GOLDEN_CASES)


def _render_case(case, dtype, device, mode):
    assert list(case.args) == case.record["args"]  # args.txt is the command line the manifest lists
    setup = prepare(case.config(config_from_argv), device=device, dtype=dtype)
    image, _ = render(setup, mode=mode)
    return setup, image


@pytest.mark.parametrize("golden_case", CASE_IDS, indirect=True)
def test_golden_parity(golden_case, dtype, device):
    setup, image = _render_case(golden_case, dtype, device, "eager")
    reference = golden_case.reference()

    assert tuple(image.shape) == golden_case.shape
    assert image.dtype == dtype
    assert setup.steps == golden_case.record["steps"]
    ours = to_numpy(image)
    assert np.isfinite(ours).all()
    assert (ours[reference == 0] == 0).all() or golden_case.record["nonzero_fraction"] == 1.0
    r = pearson_r(ours, reference)
    assert passes_parity(r, PARITY_MIN_R), f"{golden_case.id}: r = {r}"


@pytest.mark.slow
@pytest.mark.parametrize("golden_case", CASE_IDS, indirect=True)
def test_golden_parity_compiled(golden_case, dtype, device):
    _, image = _render_case(golden_case, dtype, device, "compiled")
    assert tuple(image.shape) == golden_case.shape
    r = pearson_r(to_numpy(image), golden_case.reference())
    assert passes_parity(r, PARITY_MIN_R), f"{golden_case.id}: r = {r}"
