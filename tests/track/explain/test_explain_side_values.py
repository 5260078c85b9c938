"""Measuring at a side: 1 - r against nanoBragg's image, an image hash, a render in a fresh process."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from detsim.track.base.golden import find_case, golden_dir
from detsim.track.explain.side_values import hash_of, image_at, one_minus_r
from detsim.track.explain.sides import prepare_side

ROOT = Path(__file__).resolve().parents[3]


def test_one_minus_r_is_zero_for_nanobraggs_own_image_and_rises_with_a_change():
    golden = golden_dir(ROOT)
    reference = find_case("c02", golden).reference().astype(np.float64)
    assert abs(one_minus_r(reference, "c02", golden)) < 1e-12
    changed = reference.copy()
    changed[0, 0] += reference.max()
    assert one_minus_r(changed, "c02", golden) > 1e-6


def test_the_hash_is_the_suites_image_hash():
    image = np.arange(6.0).reshape(2, 3)
    assert hash_of(image) == hash_of(image.astype(np.float32))
    assert hash_of(image) != hash_of(image[::-1])


def test_a_side_renders_in_its_own_process(tmp_path):
    side = prepare_side(ROOT, "HEAD", tmp_path / "side", python=sys.executable)
    image = image_at(side, "P1@8", golden_dir(ROOT), tmp_path / "i.npy", cwd=tmp_path)
    assert image.shape == (8, 8) and (tmp_path / "i.npy").is_file()
