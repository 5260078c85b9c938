"""The fused whole-image kernel under Triton's interpreter, against the eager path: its edge cases and one
golden case per feature it has (every golden case it serves in the slow job), in float64 and float32, one
launch per render; the cases it does not serve fall back to today's path and say why. The scenarios run in a
child process (tests/data/fused_interpreter.py), since ``TRITON_INTERPRET=1`` must be set before the kernel
is imported and must not leak into this one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from _tolerances import FLOAT32_VS_FLOAT64_MAX_REL, FUSED_IMAGE_FLOAT64_MAX_REL, TRITON_VS_EAGER_MAX_REL
from conftest import GOLDEN_CASES

pytest.importorskip("triton")

TESTS = Path(__file__).parents[1]
SCRIPT = TESTS / "data" / "fused_interpreter.py"

# The golden cases the fused kernel leaves to today's path, and why (detsim.rendering.fused_image.unfused_reason).
FALLS_BACK = {
    "g02_hkl_interp": "interpolation",
    "g03_hkl_autointerp_N2": "interpolation",
    "m01_round_xtal": "crystal shape ROUND",
    "m05_round_xtal_fudge": "crystal shape ROUND",
}
# One golden case per feature of the kernel (its variants and the data it loops over), rendered in the default
# job beside the edge cases, which cover each feature on a small detector; every golden case in the slow job.
REPRESENTATIVE = (
    "a01_cubic_mosflm_center",  # the square lattice, default F, the polarization factor
    "e01_triclinic_misset",  # a triclinic cell
    "g01_hkl_nointerp",  # an HKL table
    "j02_phi0_quirk",  # phi steps and a thread-first pixel's first sweep
    "l02_dispersion",  # several sources
    "m02_gauss_xtal",  # the Gaussian lattice factor
    "m03_tophat_spots",  # the top-hat lattice factor
    "o02_nopolar",  # no polarization factor
    "p01_water",  # the water background
    "q01_detector_abs_thick",  # sensor layers
    "t01_point_pixel",  # point pixels
    "u01_curved_det",  # the curved detector
    "x01_dmin",  # the -dmin cut
    *FALLS_BACK,
)
EDGES = ("one_orientation", "ragged_tiles", "roi", "mask", "layers_and_sources", "oversample_mosaic_phi", "dmin",
         "n1_axes", "large_n", "kahn_water_point_pixel", "nopolar", "gauss", "tophat", "thread_first_sweep",
         "thread_first_sweep_dmin", "curved", "hkl_table_edges", "hkl_table_dmin")


def _rendered(*golden_ids: str) -> dict:
    """The edge cases and the golden cases named (every one where none is), rendered by the child process."""
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join([str(TESTS.parent), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(SCRIPT), *golden_ids], cwd=TESTS.parent, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def scenarios() -> dict:
    return _rendered(*REPRESENTATIVE)


def _within(result: dict) -> list[str]:
    """What is off in a fused scenario: its float64 or float32 image, or its launches."""
    off = []
    if result["rel"]["float64"] > FUSED_IMAGE_FLOAT64_MAX_REL:
        off.append(f"float64 {result['rel']['float64']:.2e}")
    if result["rel"]["float32"] > FLOAT32_VS_FLOAT64_MAX_REL:
        off.append(f"float32 {result['rel']['float32']:.2e} (eager float32 {result['eager_float32_rel']:.2e})")
    if result["launches"] != {"float64": 1, "float32": 1}:
        off.append(f"launches {result['launches']}")
    return off


def _check_golden(scenarios: dict, ids) -> None:
    """Each golden case of ``ids`` the kernel serves matches eager in one launch; the rest are FALLS_BACK's."""
    assert {f"golden:{cid}" for cid in ids} == {name for name in scenarios if name.startswith("golden:")}
    served = {cid for cid in ids if cid not in FALLS_BACK}
    assert {cid for cid in ids if scenarios[f"golden:{cid}"]["fused"]} == served
    off = {cid: _within(scenarios[f"golden:{cid}"]) for cid in sorted(served)}
    assert not {cid: why for cid, why in off.items() if why}
    assert all(scenarios[f"golden:{cid}"]["peak"] > 0 for cid in served)  # each compared something


def test_one_golden_case_per_feature_matches_eager_in_one_launch(scenarios):
    assert set(REPRESENTATIVE) <= set(GOLDEN_CASES)
    _check_golden(scenarios, REPRESENTATIVE)


@pytest.mark.slow
def test_every_golden_case_it_serves_matches_eager_in_one_launch():
    _check_golden(_rendered(), GOLDEN_CASES)


@pytest.mark.parametrize("edge", EDGES)
def test_edge_case_matches_eager_in_one_launch(scenarios, edge):
    result = scenarios[f"edge:{edge}"]
    assert result["fused"] and result["reason"] is None
    assert result["peak"] > 0 and not _within(result)


def test_the_ragged_tile_and_the_roi_render_what_they_should(scenarios):
    assert {name for name in scenarios if name.startswith("edge:")} == {f"edge:{edge}" for edge in EDGES}
    assert scenarios["edge:ragged_tiles"]["pixels"] == 1100  # two programs of 1,024 pixels, the second with 76
    assert scenarios["edge:roi"]["pixels"] == 8 * 5  # -roi 2 9 3 7: outside it, both images hold 0
    # the thread-first pixels' first sweeps are the kernel's own, in its one launch (spec §4.7)
    assert scenarios["edge:thread_first_sweep"]["first_sweep_pixels"] == 2
    assert scenarios["edge:thread_first_sweep_dmin"]["first_sweep_pixels"] == 2
    assert scenarios["golden:j02_phi0_quirk"]["first_sweep_pixels"] == 1


def test_a_fused_render_is_one_launch_and_a_fill_at_most_with_no_copy_or_sync(scenarios):
    fused = {name: result for name, result in scenarios.items() if result["fused"]}
    assert len(fused) > len(EDGES)
    for name, result in fused.items():
        for dtype, ops in result["operations"].items():
            assert ops["triton_launches"] == 1 and ops["copies"] == 0 and ops["syncs"] == 0, (name, dtype, ops)
            assert ops["kernels"] <= 1, (name, dtype, ops)  # the zero fill outside an ROI or mask, if any
    # a phi sweep from 0 (thread-first pixels) over the whole detector: the one launch and nothing else
    for name in ("edge:thread_first_sweep", "edge:thread_first_sweep_dmin"):
        assert fused[name]["operations"]["float64"] == {"triton_launches": 1, "kernels": 0, "copies": 0, "syncs": 0}


def test_unserved_golden_cases_fall_back_and_say_why(scenarios):
    for cid, reason in FALLS_BACK.items():
        result = scenarios[f"golden:{cid}"]
        assert (result["fused"], result["reason"]) == (False, reason), cid
        assert result["rel"]["float64"] <= TRITON_VS_EAGER_MAX_REL[torch.float64], cid
