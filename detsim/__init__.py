"""detsim: a PyTorch diffraction-image simulator with nanoBragg's physics and command line.

    >>> import detsim
    >>> cfg = detsim.SimulationConfig(crystal=detsim.CrystalConfig(cell=(100, 100, 100, 90, 90, 90), default_F=100))
    >>> image = detsim.simulate(cfg, device="cpu", dtype=torch.float64)   # (slow, fast) tensor

See README.md for the command line and the tracking suite.
"""

import importlib

__version__ = "0.1.0"

# name -> the module that defines it: imported on first use (PEP 562), so that what only needs a part of
# the package (the tracking suite's commands, a fresh interpreter reading a config) does not import torch
_EXPORTS = {
    **dict.fromkeys(["BeamConfig", "ConfigError", "Convention", "CrystalConfig", "CrystalShape", "DetectorConfig",
                     "Pivot", "SamplingConfig", "SimulationConfig", "SourcePoint"], "detsim.config"),
    **dict.fromkeys(["prepare", "render", "simulate"], "detsim.engine"),
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'detsim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
