"""The reproducibility axes and the golden cases checked along them."""

from __future__ import annotations

from pathlib import Path

from detsim.track.base.golden import golden_dir, load_cases
from detsim.track.base.reproducibility import AXES, CASES, COMPILED_CASES, EAGER_AXES

ROOT = Path(__file__).resolve().parents[3]


def test_every_axis_varies_one_thing_between_its_two_runs():
    for axis in AXES.values():
        varied = [axis.threads[0] != axis.threads[1], axis.hash_seeds[0] != axis.hash_seeds[1]]
        assert sum(varied) == 1, axis.name
    assert EAGER_AXES == ("process", "threads") and AXES["compiled"].mode == "compiled"


def test_the_checked_cases_are_golden_cases_and_one_has_a_seeded_noise_image():
    cases = {case.id: case for case in load_cases(golden_dir(ROOT))}
    assert set(CASES) <= set(cases) and set(COMPILED_CASES) <= set(CASES)
    assert any("-seed" in cases[c].args and "-noisefile" in cases[c].args for c in CASES)
