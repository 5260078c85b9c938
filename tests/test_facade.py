"""The public facade (``detsim/__init__.py``): each name is the one its sub-package defines, loaded on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import detsim
from detsim.commandline import to_config
from detsim.model import config
from detsim.rendering import engine


def test_every_exported_name_is_its_definition():
    homes = {"config_from_argv": to_config, "MODES": engine, "available_modes": engine, "prepare": engine,
             "render": engine, "simulate": engine}
    for name in detsim.__all__:
        assert getattr(detsim, name) is getattr(homes.get(name, config), name), name
    assert set(detsim.__all__) <= set(dir(detsim))


def test_an_older_commits_module_name_is_not_part_of_the_facade():
    with pytest.raises(AttributeError, match="argconfig"):
        getattr(detsim, "argconfig")


def test_importing_the_package_imports_no_torch_and_no_sub_package():
    script = "import sys, detsim; print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('detsim')))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "['detsim']"


def test_an_argument_list_renders_through_the_facade_alone():
    cfg = detsim.config_from_argv(["-cell", "100", "100", "100", "90", "90", "90", "-default_F", "100",
                                   "-detpixels", "8", "-pixel", "0.5", "-distance", "50"])
    assert isinstance(cfg, detsim.SimulationConfig)
    image = detsim.simulate(cfg, dtype=torch.float64)
    assert tuple(image.shape) == (8, 8) and float(image.sum()) > 0
    assert "eager" in detsim.available_modes("cpu") and set(detsim.available_modes("cpu")) <= set(detsim.MODES)
