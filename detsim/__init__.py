"""detsim: a PyTorch diffraction-image simulator with nanoBragg's physics and command line.

    >>> import detsim
    >>> cfg = detsim.SimulationConfig(crystal=detsim.CrystalConfig(cell=(100, 100, 100, 90, 90, 90), default_F=100))
    >>> image = detsim.simulate(cfg, device="cpu", dtype=torch.float64)   # (slow, fast) tensor

See README.md for the command line and the tracking suite.
"""

from detsim.config import (
    BeamConfig, ConfigError, Convention, CrystalConfig, CrystalShape, DetectorConfig, Pivot, SamplingConfig,
    SimulationConfig, SourcePoint,
)
from detsim.engine import prepare, render, simulate

__version__ = "0.1.0"

__all__ = [
    "BeamConfig", "ConfigError", "Convention", "CrystalConfig", "CrystalShape", "DetectorConfig", "Pivot",
    "SamplingConfig", "SimulationConfig", "SourcePoint", "prepare", "render", "simulate",
]
