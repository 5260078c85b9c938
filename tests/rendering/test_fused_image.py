"""The fused whole-image path's plan: which setups it serves, and its parameters packed once per setup."""

from __future__ import annotations

import gc
import weakref
from dataclasses import replace

import torch

from detsim.commandline.to_config import config_from_argv
from detsim.model.config import SamplingConfig
from detsim.rendering import fused_image
from detsim.rendering.engine import prepare, render
from detsim.rendering.setup import SETUPS, restrict_pixels
from detsim.track.measure.launches import counting

ARGS = "-default_F 100 -cell 30 32 34 90 90 90 -N 3 -misset 10 20 30 -detpixels 6 -pixel 0.4 -distance 40 -oversample 1"


def _setup(extra: str = "", dtype=torch.float64, reuse: bool = True):
    return prepare(config_from_argv(f"{extra} {ARGS}".split()), dtype=dtype, reuse=reuse)


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
    setup = _setup("-dispersion 2 -dispsteps 2 -mosaic 0.5 -mosaic_dom 3", dtype, reuse=False)  # not cached
    assert setup.derived is None
    params = fused_image.fused_params(setup)
    assert fused_image.fused_params(setup) is params  # a second render copies nothing
    assert params.geometry.shape == (fused_image.GEOMETRY_FIELDS,) and params.geometry.dtype == dtype
    assert params.sources.shape == (2, fused_image.SOURCE_FIELDS) and params.axes.shape == (3, 9)
    assert torch.equal(params.axes, setup.orientations.reshape(3, 9))
    assert params.geometry[fused_image.CELLS:fused_image.CELLS + 3].tolist() == [3.0, 3.0, 3.0]
    other = _setup(dtype=dtype, reuse=False)
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


def test_a_configuration_prepared_again_reuses_the_packed_parameters_of_its_cached_setup(monkeypatch):
    SETUPS.clear()
    packed = []
    pack = fused_image._pack
    monkeypatch.setattr(fused_image, "_pack", lambda setup: packed.append(setup) or pack(setup))
    config = config_from_argv(f"-phi 0 -osc 0.3 -phisteps 2 -nanobragg_threads 2 {ARGS}".split())
    first = prepare(config, device="meta")  # a device: the setup copied there, a new object every call
    params = fused_image.fused_params(first)
    assert params.first_positions is not None  # thread-first pixels: their positions are packed too
    again = prepare(replace(config), device="meta")  # another configuration object, the same content
    assert again is not first and again.derived is first.derived
    with counting("meta") as counts:  # what the device is asked
        assert fused_image.fused_params(again) is params
    assert len(packed) == 1
    assert (counts.launches, counts.copies, counts.syncs) == (0, 0, 0)  # nothing packed, copied or read back
    with counting("meta") as counts:
        fused_image.fused_params(prepare(config, dtype=torch.float32, device="meta"))  # another dtype
    assert len(packed) == 2 and counts.kernels > 4  # the setup's pixel list (4 kernels), then the pack's ops
    other = prepare(config_from_argv(f"-phi 0 -osc 0.3 -phisteps 2 -N 4 {ARGS}".split()), device="meta")
    assert fused_image.fused_params(other) is not params and len(packed) == 3  # another configuration
    on_the_cpu = prepare(replace(config))  # another device: another pack, kept with the same entry
    assert on_the_cpu.derived is first.derived and fused_image.fused_params(on_the_cpu) is not params
    assert len(first.derived) == 2 and len(packed) == 4
    restricted = restrict_pixels(on_the_cpu, [(1, 2), (3, 4)])  # other pixels: its own pack, never the entry's
    assert restricted.derived is None
    assert fused_image.fused_params(restricted) is not fused_image.fused_params(on_the_cpu)
    assert len(packed) == 5
    entry = weakref.ref(first.derived)
    del first, again, params, restricted, on_the_cpu, packed[:]
    SETUPS.clear()
    gc.collect()
    assert entry() is None  # the packs go with the cache entry and the setups made from it
