"""The fused whole-image path's plan: which setups it serves, and its parameters packed once per setup."""

from __future__ import annotations

import gc
from dataclasses import replace

import torch

from detsim.commandline.to_config import config_from_argv
from detsim.model.config import SamplingConfig
from detsim.rendering import fused_image
from detsim.rendering.engine import prepare, render

ARGS = "-default_F 100 -cell 30 32 34 90 90 90 -N 3 -misset 10 20 30 -detpixels 6 -pixel 0.4 -distance 40 -oversample 1"


def _setup(extra: str = "", dtype=torch.float64):
    return prepare(config_from_argv(f"{extra} {ARGS}".split()), dtype=dtype)


def test_a_plain_setup_fuses_and_each_unserved_feature_says_why():
    assert fused_image.unfused_reason(_setup()) is None
    assert fused_image.unfused_reason(_setup(), observed=True) == "observer"
    assert fused_image.unfused_reason(_setup("-round_xtal")) == "crystal shape ROUND"
    assert fused_image.unfused_reason(_setup("-curved_det")) is None
    assert fused_image.unfused_reason(_setup("-oversample_thick")) == "-oversample_thick/_polar/_omega"
    setup = _setup()
    fractional = replace(setup, lattice=replace(setup.lattice, N=torch.tensor([3.0, 2.5, 3.0], dtype=torch.float64)))
    assert fused_image.unfused_reason(fractional) == "non-integer cell count"
    thick = replace(setup, config=replace(setup.config, sampling=SamplingConfig(oversample=1, oversample_omega=True)))
    assert fused_image.unfused_reason(thick) == "-oversample_thick/_polar/_omega"
    grad = replace(setup, orientations=setup.orientations.clone().requires_grad_(True))
    assert fused_image.unfused_reason(grad) == "autograd"
    with torch.no_grad():
        assert fused_image.unfused_reason(grad) is None


def test_an_eager_render_says_it_was_not_fused():
    _, info = render(_setup())
    assert (info.fused, info.unfused_reason) == (False, "mode 'eager'")


def test_the_parameters_are_packed_once_per_setup_and_dropped_with_it(dtype):
    setup = _setup("-dispersion 2 -dispsteps 2 -mosaic 0.5 -mosaic_dom 3", dtype)
    params = fused_image.fused_params(setup)
    assert fused_image.fused_params(setup) is params  # a second render copies nothing
    assert params.geometry.shape == (fused_image.GEOMETRY_FIELDS,) and params.geometry.dtype == dtype
    assert params.sources.shape == (2, fused_image.SOURCE_FIELDS) and params.axes.shape == (3, 9)
    assert torch.equal(params.axes, setup.orientations.reshape(3, 9))
    assert params.geometry[fused_image.CELLS:fused_image.CELLS + 3].tolist() == [3.0, 3.0, 3.0]
    other = _setup(dtype=dtype)
    assert fused_image.fused_params(other) is not params
    key = id(setup)
    del setup, params
    gc.collect()
    assert key not in fused_image._CACHE


def test_the_kahn_frame_is_orthonormal_and_perpendicular_to_the_beam():
    setup = _setup("-polar 0.8 -hdivrange 2 -hdivsteps 3")
    params = fused_image.fused_params(setup)
    incident, b_in, e_in = params.sources[:, :3], params.sources[:, 4:7], params.sources[:, 7:10]
    for u, v in ((incident, b_in), (incident, e_in), (b_in, e_in)):
        assert torch.allclose((u * v).sum(-1), torch.zeros(3, dtype=torch.float64), atol=1e-15)
    assert torch.allclose(b_in.norm(dim=-1), torch.ones(3, dtype=torch.float64))
