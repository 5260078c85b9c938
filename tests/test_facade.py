"""The public facade (``detsim/__init__.py``): each name is the one its sub-package defines, loaded on first use."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import detsim
from detsim.commandline import to_config
from detsim.model import config, structure_factors
from detsim.rendering import engine

API_DOC = Path(__file__).resolve().parents[1] / "docs" / "python-api.md"


def test_every_exported_name_is_its_definition():
    homes = {"config_from_argv": to_config, "MODES": engine, "available_modes": engine, "prepare": engine,
             "render": engine, "simulate": engine, "RenderInfo": engine, "HKLTable": structure_factors,
             "read_hkl": structure_factors}
    for name in detsim.__all__:
        assert getattr(detsim, name) is getattr(homes.get(name, config), name), name
    assert set(detsim.__all__) <= set(dir(detsim))


def test_the_public_names_are_those_the_api_doc_documents():
    import detsim.fileio  # noqa: F401  (a loaded sub-package becomes an attribute of the package)
    import detsim.model.config  # noqa: F401

    public = {name for name in dir(detsim) if not name.startswith("_")}
    assert public == set(detsim.__all__)
    documented = set(re.findall(r"`(?:detsim\.)?([A-Za-z_]+)", API_DOC.read_text(encoding="utf-8")))
    assert set(detsim.__all__) <= documented, sorted(set(detsim.__all__) - documented)


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


def test_the_api_docs_example_runs_as_written():
    blocks = re.findall(r"```python\n(.*?)```", API_DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    namespace: dict = {}
    exec(compile(blocks[0], str(API_DOC), "exec"), namespace)
    image, info = namespace["image"], namespace["info"]
    assert tuple(image.shape) == (64, 64) and float(image.sum()) > 0
    assert isinstance(info, detsim.RenderInfo) and info.chunk_pixels > 0


def test_the_api_docs_refusal_is_what_the_api_prints():
    shown = re.search(r"^ConfigError: (.*)$", API_DOC.read_text(encoding="utf-8"), re.M)[1]
    with pytest.raises(detsim.ConfigError) as refused:
        detsim.CrystalConfig(cell=(100, 100, 100, 90, 90, 90), hkl="P1.hkl")
    assert str(refused.value) == shown
