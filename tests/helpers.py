"""Small helpers shared by the tests (no fixtures here)."""

from __future__ import annotations

import numpy as np
import torch

from detsim.argv import parse_argv
from detsim.cli import build_config
from detsim.config import SimulationConfig


def config_from_args(args: list[str]) -> SimulationConfig:
    """A configuration from a nanoBragg argument list (files relative to the working directory)."""
    return build_config(parse_argv(args))


def pearson_r(a, b) -> float:
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    return float(np.corrcoef(a, b)[0, 1])


def read_golden_image(case_dir, shape) -> np.ndarray:
    return np.fromfile(case_dir / "image.bin", dtype="<f4").reshape(shape)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().double().numpy()
