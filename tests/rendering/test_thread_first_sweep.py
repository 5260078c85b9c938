"""nanoBragg's thread-first pixels (spec §4.7): the rule, and nanoBragg.c's own values for a small case."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from _tolerances import ALLCLOSE, FLOAT32_IMAGE_REL
from detsim.commandline.to_config import config_from_argv
from detsim.rendering.observed_path import OBSERVED
from detsim.model.config import SamplingConfig
from detsim.model.crystal import effective_phi_angles
from detsim.rendering.engine import prepare, render, restrict_pixels
from detsim.rendering.paths import first_sweep_of
from detsim.rendering.thread_first_sweep import first_sweep_phi_angles, thread_first_pixels, thread_rows

RECORDED = json.loads((Path(__file__).parents[1] / "data" / "first_sweep_nanobragg.json").read_text())


def test_a_first_sweep_renders_leading_zero_steps_unrotated_and_later_ones_as_the_step_before():
    phis = [0.0, 0.1, 0.0, 0.2, 0.0]
    assert first_sweep_phi_angles(phis) == [0.0, 0.1, 0.1, 0.2, 0.2]
    assert effective_phi_angles(phis, stale_phi=True) == [0.2, 0.1, 0.1, 0.2, 0.2]  # every later sweep
    assert first_sweep_phi_angles([0.3, 0.0]) == effective_phi_angles([0.3, 0.0], stale_phi=True)  # no leading zero


def test_openmp_static_schedule_gives_contiguous_blocks_of_rows_the_first_ones_longer():
    assert thread_rows(1024, 1) == [range(0, 1024)]
    assert thread_rows(1024, 2) == [range(0, 512), range(512, 1024)]
    assert thread_rows(10, 3) == [range(0, 4), range(4, 7), range(7, 10)]
    assert thread_rows(2, 5) == [range(0, 1), range(1, 2)]  # threads without a row start nothing


def test_a_threads_first_pixel_is_its_first_rendered_one():
    s = torch.arange(6, dtype=torch.int32).repeat_interleave(4)  # 6 rows x 4 columns, raster order
    f = torch.arange(4, dtype=torch.int32).repeat(6)
    assert thread_first_pixels(s, f, 6, 1) == (0,)
    assert thread_first_pixels(s, f, 6, 2) == (0, 12)  # pixel (3, 0)
    keep = (s != 3) & ((s != 0) | (f > 1))  # row 3 and two pixels of row 0 masked out
    assert [(int(s[keep][i]), int(f[keep][i])) for i in thread_first_pixels(s[keep], f[keep], 6, 2)] == [(0, 2), (4, 0)]
    assert thread_first_pixels(s[:8], f[:8], 6, 2) == (0,)  # an ROI inside the first thread's rows


def test_a_setup_restricted_to_some_pixels_finds_the_thread_first_ones_among_them():
    setup = prepare(_config(RECORDED["runs"][1]))  # two nanoBragg threads: (0, 0) and (16, 0)
    assert setup.first_sweep.pixels == ((0, 0), (16, 0)) and setup.first_sweep.positions == (0, 16 * 32)
    assert restrict_pixels(setup, [(5, 5), (16, 0), (0, 1)]).first_sweep.positions == (1,)
    assert restrict_pixels(setup, [(5, 5)]).first_sweep.positions == ()


def _config(run: dict):
    """The run's command line, with detsim's flag for nanoBragg's thread count."""
    argv = f"{RECORDED['args']} {run['extra_args']} -nanobragg_threads {run['omp_threads']}".split()
    return config_from_argv(argv)


@pytest.mark.parametrize("run", RECORDED["runs"], ids=lambda r: f"{r['omp_threads']}-threads{r['extra_args'] or ''}")
def test_nanobragg_values_at_each_threads_first_pixel_and_elsewhere(run):
    setup = prepare(_config(run))
    image, _ = render(setup)
    stale, _ = render(replace(setup, first_sweep=None))  # every pixel as if another pixel came before it
    firsts = {tuple(map(int, key.split())) for key in run["first"]}
    assert set(setup.first_sweep.pixels) == firsts
    for key, expected in {**run["first"], **run["other"]}.items():
        pixel = tuple(map(int, key.split()))
        assert float(image[pixel]) == pytest.approx(expected, rel=FLOAT32_IMAGE_REL), pixel
        if pixel in firsts:  # the rule matters here: the stale orientation is off by far more than a rounding
            assert float(stale[pixel]) != pytest.approx(expected, rel=100 * FLOAT32_IMAGE_REL), pixel
    changed = np.argwhere((image != stale).numpy())
    assert {tuple(p) for p in changed.tolist()} == firsts  # nothing else moves


@pytest.mark.parametrize("chunk", [1, 5, None])
def test_a_threads_first_pixel_is_the_same_in_any_chunk_on_any_thread_count(chunk, dtype):
    run = RECORDED["runs"][3]  # two nanoBragg threads, an ROI: first pixels (3, 5) and (16, 5)
    setup = prepare(_config(run), dtype=dtype)
    whole, _ = render(setup, threads=1)
    parts, _ = render(setup, chunk_pixels=chunk, threads=2)
    rtol, atol = ALLCLOSE[dtype]
    torch.testing.assert_close(parts, whole, rtol=rtol, atol=atol)
    if chunk is not None:
        again, _ = render(setup, chunk_pixels=chunk, threads=1)
        assert torch.equal(again, parts)


def test_a_traced_threads_first_pixel_sees_the_value_of_the_image():
    setup = prepare(_config(RECORDED["runs"][0]))
    image, _ = render(setup)
    seen = {}
    render(restrict_pixels(setup, [(0, 0)]), observe=lambda name, value, **where: seen.__setitem__(name, value))
    assert "pixel_value" in OBSERVED
    torch.testing.assert_close(seen["pixel_value"].reshape(()), image[0, 0], rtol=ALLCLOSE[torch.float64][0], atol=0)


def test_a_source_cut_by_dmin_moves_the_first_sweep_to_the_next_one_in_loop_order():
    def terms(survives):  # one pixel, T = 2 layers, O = 2 subpixels, S = 3 sources
        return SimpleNamespace(airpath=torch.ones(1, 2, 2), n_sources=3,
                               survives=None if survives is None else torch.as_tensor(survives).reshape(1, 2, 2, 3))
    assert first_sweep_of(terms(None)) == (0, 0, 0)
    cut = [True] * 12
    cut[0] = cut[1] = False  # layer 0, subpixel 0: sources 0 and 1 cut
    assert first_sweep_of(terms(cut)) == (0, 0, 2)
    cut[2] = cut[3] = cut[4] = False  # then subpixel 1's sources 0 and 1
    assert first_sweep_of(terms(cut)) == (0, 1, 2)
    assert first_sweep_of(terms([False] * 12)) is None  # every source cut: no sweep, nothing to reproduce


def test_without_a_leading_zero_step_or_with_physical_phi_no_pixel_is_special():
    config = _config(RECORDED["runs"][0])
    assert prepare(config).first_sweep is not None
    assert prepare(replace(config, sampling=replace(config.sampling, stale_phi=False))).first_sweep is None
    sampling = SamplingConfig(oversample=1, phi0_deg=0.3, osc_deg=0.5, phisteps=2)  # no zero step
    assert prepare(replace(config, sampling=sampling)).first_sweep is None
