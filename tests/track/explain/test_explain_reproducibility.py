"""Two runs of one commit that should agree, read op by op: a random op, the same stream, the arguments."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from detsim.track.base.reproducibility import AXES
from detsim.track.divergence.recorder import record
from detsim.track.explain.reproducibility import axis_named, compare_runs, sentence, target

X = torch.linspace(0, 1, 16, dtype=torch.float64)


def _noisy(a, seeded):
    """a plus noise: from a fixed seed, or from the global stream (different in each run)."""
    generator = torch.Generator().manual_seed(7) if seeded else None
    return a + 1e-12 * torch.rand(a.shape, dtype=a.dtype, generator=generator)


def _runs(seeded: bool):
    torch.manual_seed(1)
    a = record(_noisy, X, seeded, label="case", fill=0)
    torch.manual_seed(2)  # what a second process without a fixed seed would start from
    b = record(_noisy, X, seeded, label="case", fill=1)
    return a, b


def test_an_unseeded_random_op_is_named_as_the_first_divergence():
    report = compare_runs(*_runs(seeded=False))
    said = sentence("0123456789abcdef", "s01", AXES["process"], report)
    assert report.first.name.startswith("aten.rand") and report.first.role == "culprit"
    assert said.startswith("two runs of s01 at 01234567 (process: a render in a second fresh process against the "
                           "first) first differ at #")
    assert "aten.rand" in said and report.diverged


def test_a_python_value_that_differs_is_named_with_both_values_and_the_site_inside_the_package():
    from detsim.track.explain.reproducibility import in_package

    def scaled(x, factor):
        return x * factor

    a = record(scaled, X, 1.5, label="case", fill=0)
    b = record(scaled, X, 1.25, label="case", fill=1)
    said = sentence("0123456789abcdef", "s01", AXES["process"], compare_runs(a, b))
    assert "its argument `other` is 1.5 in run A and 1.25 in run B: a Python value computed differently" in said
    assert in_package("../../tmp/detsim-explain-x/0123/detsim/engine.py:180 in render") == "detsim/engine.py:180 in render"
    assert in_package("tests/mydetsim/x.py:3 in f") == "tests/mydetsim/x.py:3 in f"


def test_runs_that_agree_say_the_variation_did_not_show_here():
    report = compare_runs(*_runs(seeded=True))
    assert not report.diverged
    assert sentence("0123456789abcdef", "a01", AXES["threads"], report).endswith(
        "gave the same ops and results here: the variation did not show in these two runs (it may need more runs, "
        "another machine or a GPU: docs/determinism.md)")


def test_each_axis_runs_its_own_path_and_unknown_axes_are_refused():
    assert target("a01", Path("g"), AXES["compiled"]) == {"case": "a01", "golden_dir": "g", "mode": "compiled"}
    assert target("a01", Path("g"), AXES["threads"])["mode"] == "eager"
    with pytest.raises(ValueError, match="no reproducibility axis 'seed' \\(known: process, threads, compiled\\)"):
        axis_named("seed")
