"""The flagged benchmark measured at one side, per kind: an instruction count, 1 - r, an image hash.

* cost: :func:`count_at` counts one eager float64 render of the workload under callgrind
  (:func:`detsim.track.cost.counting.count`, the suite's harness, with the side first on ``PYTHONPATH``)
  and keeps the callgrind file for the profile;
* parity and hash: :func:`image_at` renders the workload (float64, CPU, eager) in a job of
  :mod:`.side_job`; :func:`one_minus_r` compares it with the golden case's nanoBragg image and
  :func:`~detsim.track.base.hashing.image_sha256` hashes it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from detsim.track.base.golden import find_case
from detsim.track.base.hashing import image_sha256
from detsim.track.base.metrics import pearson_r
from detsim.track.cost.counting import Count, count
from detsim.track.cost.specs import CostSpec
from detsim.track.explain.sides import Side, run_side_job


def count_at(side: Side, workload: str, golden: Path, out_dir: Path) -> Count:
    """The instructions of one render of ``workload`` at ``side`` (the callgrind file kept in ``out_dir``)."""
    spec = CostSpec(workload)
    out_dir.mkdir(parents=True, exist_ok=True)
    return count(spec.setup(golden.parent.parent), spec.region(), out_dir=out_dir, package_dir=side.package_dir,
                 cwd=out_dir)


def image_at(side: Side, workload: str, golden: Path, out: Path, cwd: Path) -> np.ndarray:
    """The float64 image of ``workload`` rendered by ``side``'s core, saved to ``out`` (.npy)."""
    run_side_job(side, {"job": "image", "workload": workload, "out": str(out), "golden_dir": str(golden)}, cwd=cwd)
    return np.load(out)


def one_minus_r(image: np.ndarray, workload: str, golden: Path) -> float:
    """1 - Pearson r of ``image`` against the golden case's nanoBragg image."""
    r = pearson_r(image, find_case(workload, golden).reference(image.shape))
    return float("nan") if r is None else 1.0 - r


def hash_of(image: np.ndarray) -> str:
    return image_sha256(image)
