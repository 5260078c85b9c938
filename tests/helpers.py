"""Small helpers shared by the tests (no fixtures here)."""

from __future__ import annotations

import numpy as np
import torch

from detsim.commandline.to_config import config_from_argv  # noqa: F401 - the command's argv -> config
from detsim.model.config import BeamConfig, CrystalConfig, DetectorConfig, SamplingConfig, SimulationConfig
from detsim.track.base.metrics import pearson_r  # noqa: F401 - the one Pearson r (None where undefined)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().double().numpy()


# a few pixels through every sampling loop (sources, phi, mosaic, subpixels, layers) and water: the engine's and
# the observed path's tests render it
TINY = SimulationConfig(
    crystal=CrystalConfig(cell=(30, 32, 34, 90, 90, 90), default_F=50, Na=3, Nb=3, Nc=3,
                          misset_deg=(10, 20, 30), mosaic_spread_deg=1.0, mosaic_domains=2, water_um=0.5),
    beam=BeamConfig(hdivrange_mrad=4, hdivsteps=2, polarization_kahn=0.9),
    detector=DetectorConfig(fpixels=4, spixels=3, pixel_mm=4.0, distance_mm=40, thick_um=200, thicksteps=2),
    sampling=SamplingConfig(oversample=2, osc_deg=2, phisteps=2, phi0_deg=3),
)
