"""The counted workloads: the code a count runs builds the configuration the timed workloads use."""

from __future__ import annotations

import pytest
import torch

import detsim
from detsim.commandline.to_config import config_from_argv
from detsim.track.base.golden import find_case
from detsim.track.base.workloads import WORKLOADS
from detsim.track.cost.specs import CostSpec


def _config_of(spec: CostSpec):
    namespace = {"torch": torch}
    exec(spec.setup(), namespace)  # noqa: S102 - the code a count runs, without valgrind
    return namespace


def test_a_reference_workload_is_the_resized_timed_one():
    assert _config_of(CostSpec("P2@32"))["_config"] == WORKLOADS["P2"].resized(32).config(config_from_argv)


def test_a_golden_case_is_its_own_configuration():
    ours = detsim.simulate(_config_of(CostSpec("g01_hkl_nointerp"))["_config"], dtype=torch.float64)
    timed = detsim.simulate(find_case("g01_hkl_nointerp").config(config_from_argv), dtype=torch.float64)
    assert torch.equal(ours, timed)  # configurations hold arrays: equal images say they are the same


def test_the_region_renders_in_the_spec_dtype():
    namespace = _config_of(CostSpec("P1@16", "float32"))
    namespace["detsim"] = detsim
    image = eval(CostSpec("P1@16", "float32").region(), namespace)  # noqa: S307
    assert image.dtype == torch.float32 and tuple(image.shape) == (16, 16)


def test_an_unknown_dtype_is_refused():
    with pytest.raises(ValueError, match="dtype"):
        CostSpec("P1@64", "float16").setup()
