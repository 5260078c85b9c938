"""detsim: a PyTorch diffraction-image simulator with nanoBragg's physics and command line.

    >>> import detsim
    >>> cfg = detsim.SimulationConfig(crystal=detsim.CrystalConfig(cell=(100, 100, 100, 90, 90, 90), default_F=100))
    >>> image = detsim.simulate(cfg, device="cpu", dtype=torch.float64)   # (slow, fast) tensor
    >>> cfg = detsim.config_from_argv(["-cell", "100", "100", "100", "90", "90", "90", "-default_F", "100"])

This module is the public facade, the names docs/python-api.md documents: the configuration types,
``read_hkl``/``HKLTable`` (an ``h k l F`` file -> the table ``CrystalConfig.hkl`` takes), ``config_from_argv``
(a nanoBragg argument list -> a configuration, as the ``detsim`` command reads it), ``prepare``/``render``
(-> ``(image, RenderInfo)``)/``simulate`` and the execution modes (``MODES``, ``available_modes``). The tracking suite and the benchmarks use these names. The parts:

    detsim.commandline   the ``detsim`` command: flags, arguments, argument list -> configuration
    detsim.fileio        image formats, safe output, bounded input, numbers read as C reads them
    detsim.model         configuration, units, geometry, crystal, sources, structure factors, random streams
    detsim.rendering     the engine: prepare, render, the execution paths, the lattice factor's kernels and
                         the observed path's hook
    detsim.diagnostics   per-pixel traces, read through the engine's observed path
    detsim.host          memory, worker threads and processes, signals
    detsim.track         the tracking suite (which the rest never imports)

See README.md for the command line and the tracking suite.
"""

import importlib as _importlib

__version__ = "0.1.0"

# name -> the module that defines it: imported on first use (PEP 562), so that what only needs a part of
# the package (the tracking suite's commands, a fresh interpreter reading a config) does not import torch
_EXPORTS = {
    **dict.fromkeys(["BeamConfig", "ConfigError", "Convention", "CrystalConfig", "CrystalShape", "DetectorConfig",
                     "Pivot", "SamplingConfig", "SimulationConfig", "SourcePoint"], "detsim.model.config"),
    **dict.fromkeys(["MODES", "available_modes", "prepare", "render", "simulate"], "detsim.rendering.engine"),
    **dict.fromkeys(["HKLTable", "read_hkl"], "detsim.model.structure_factors"),
    "RenderInfo": "detsim.rendering.engine",
    "config_from_argv": "detsim.commandline.to_config",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(_importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'detsim' has no attribute {name!r}")


def __dir__() -> list[str]:
    # the public names only: the sub-packages (detsim.model, ...) become attributes once imported, and are
    # reached by importing them, not through the facade
    return sorted([*(name for name in globals() if name.startswith("__")), *_EXPORTS])
