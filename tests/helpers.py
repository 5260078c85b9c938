"""Small helpers shared by the tests (no fixtures here)."""

from __future__ import annotations

import numpy as np
import torch

from detsim.commandline.to_config import config_from_argv as config_from_args  # noqa: F401 - the command's argv -> config
from detsim.track.base.metrics import pearson_r  # noqa: F401 - the one Pearson r (None where undefined)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().double().numpy()
