"""Golden parity: detsim against images made by nanoBragg.c, one test per manifest case and dtype."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from _tolerances import PARITY_MIN_R
from conftest import GOLDEN_CASES
from detsim.commandline.to_config import config_from_argv
from detsim.rendering.engine import prepare, render
from detsim.track.base.metrics import passes_parity
from helpers import pearson_r, to_numpy

CASE_IDS = list(GOLDEN_CASES)
RANDOM_LINES = json.loads((Path(__file__).parent / "data" / "random_lines_nanobragg.json").read_text())["cases"]


def _render_case(case, dtype, device, mode):
    assert list(case.args) == case.record["args"]  # args.txt is the command line the manifest lists
    threads = ["-nanobragg_threads", str(case.record.get("c_threads", 1))]  # the OpenMP run it reproduces
    setup = prepare(case.config(lambda argv: config_from_argv(argv + threads)), device=device, dtype=dtype)
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
    if dtype == torch.float64 and torch.device(device).type == "cpu":
        # nanoBragg's arithmetic, operation for operation: its float32 image, bit for bit
        differ = np.argwhere(ours.astype("<f4") != reference)
        assert not len(differ), f"{golden_case.id}: {len(differ)} pixels differ, first (slow, fast) {differ[0].tolist()}"


@pytest.mark.slow
@pytest.mark.parametrize("golden_case", CASE_IDS, indirect=True)
def test_golden_parity_compiled(golden_case, dtype, device):
    _, image = _render_case(golden_case, dtype, device, "compiled")
    assert tuple(image.shape) == golden_case.shape
    r = pearson_r(to_numpy(image), golden_case.reference())
    assert passes_parity(r, PARITY_MIN_R), f"{golden_case.id}: r = {r}"


@pytest.mark.parametrize("line", RANDOM_LINES, ids=[line["id"] for line in RANDOM_LINES])
def test_random_command_lines_render_nanobraggs_float_image_bit_for_bit(line):
    image, _ = render(prepare(config_from_argv(line["args"].split()), dtype=torch.float64))
    ours = to_numpy(image).astype("<f4")
    assert list(ours.shape) == line["shape"]
    for pixel, value in line["pixels"].items():
        assert float(ours[tuple(int(i) for i in pixel.split())]) == value, pixel
    assert hashlib.sha256(ours.tobytes()).hexdigest() == line["sha256"]
