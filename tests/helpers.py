"""Small helpers shared by the tests (no fixtures here)."""

from __future__ import annotations

import numpy as np
import torch

from detsim.argconfig import config_from_argv as config_from_args


def pearson_r(a, b) -> float:
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    return float(np.corrcoef(a, b)[0, 1])


def read_golden_image(case_dir, shape) -> np.ndarray:
    return np.fromfile(case_dir / "image.bin", dtype="<f4").reshape(shape)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().double().numpy()
