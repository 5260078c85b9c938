"""compare.op_streams: two op streams read, across commits (reordered operands, a changed constant, the same
stream) and as two runs of one commit that should agree (a random op, a Python value, the same stream)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from detsim.track.base.golden import AXES
from detsim.track.compare.firstdiff import compare_commits, compare_logs
from detsim.track.compare.tracer import trace
from detsim.track.compare.op_streams import axis_named, axis_run, first_record, hash_sentence, in_package, runs_sentence
from detsim.track.compare.runs import Named

X = torch.linspace(0, 1, 16, dtype=torch.float64)


def _sum(a, b, c, reorder):
    """a + b + c, or (at the 'new commit') a + c + b: the same ops at the same place, other operands."""
    return torch.add(torch.add(a, c), b) if reorder else torch.add(torch.add(a, b), c)


def _scaled(a, factor):
    return a * factor


def _recorded(fn, *args, fill=0):
    return trace(fn, *args, label="case", fill=fill)


def test_a_reordered_sum_is_named_at_the_op_that_takes_the_other_operand():
    args = (X, X * 1e-17, X * 3.3)
    report = compare_commits(_recorded(_sum, *args, False), _recorded(_sum, *args, True, fill=1))
    said = hash_sentence("0123456789abcdef", report)
    assert report.first.role == "operands" and report.first.name == "aten.add.Tensor"
    assert said.startswith("the image change at 01234567 starts at #0 op aten.add.Tensor")
    assert "operands (the order of a sum or product) changed" in said
    assert first_record(report)["role"] == "operands" and first_record(report)["index"] == 0


def test_a_changed_constant_is_named_with_its_old_and_new_value():
    report = compare_commits(_recorded(_scaled, X, 0.5), _recorded(_scaled, X, 0.45, fill=1))
    said = hash_sentence("0123456789abcdef", report)
    assert report.first.role == "culprit"
    assert "a Python value passed to it changed" in said and "0.5 -> 0.45" in said


def test_the_same_stream_says_the_image_is_the_same():
    report = compare_commits(_recorded(_scaled, X, 0.5), _recorded(_scaled, X, 0.5, fill=1))
    assert hash_sentence("0123456789abcdef", report).endswith("agree: the image is the same")
    assert first_record(report) is None


def _noisy(a, seeded):
    """a plus noise: from a fixed seed, or from the global stream (different in each run)."""
    generator = torch.Generator().manual_seed(7) if seeded else None
    return a + 1e-12 * torch.rand(a.shape, dtype=a.dtype, generator=generator)


def _runs(seeded: bool):
    torch.manual_seed(1)
    a = trace(_noisy, X, seeded, label="case", fill=0)
    torch.manual_seed(2)  # what a second process without a fixed seed would start from
    b = trace(_noisy, X, seeded, label="case", fill=1)
    return a, b


def test_an_unseeded_random_op_is_named_as_the_first_divergence():
    report = compare_logs(*_runs(seeded=False))
    said = runs_sentence("0123456789abcdef", "s01", AXES["process"], report)
    assert report.first.name.startswith("aten.rand") and report.first.role == "culprit"
    assert said.startswith("two runs of s01 at 01234567 (process: a render in a second fresh process against the "
                           "first) first differ at #")
    assert "aten.rand" in said and report.diverged


def test_a_python_value_that_differs_is_named_with_both_values_and_the_site_inside_the_package():
    a = trace(_scaled, X, 1.5, label="case", fill=0)
    b = trace(_scaled, X, 1.25, label="case", fill=1)
    said = runs_sentence("0123456789abcdef", "s01", AXES["process"], compare_logs(a, b))
    assert "its argument `other` is 1.5 in run A and 1.25 in run B: a Python value computed differently" in said
    assert in_package("../../tmp/detsim-explain-x/0123/detsim/rendering/engine.py:180 in render") == "detsim/rendering/engine.py:180 in render"
    assert in_package("tests/mydetsim/x.py:3 in f") == "tests/mydetsim/x.py:3 in f"


def test_runs_that_agree_say_the_variation_did_not_show_here():
    report = compare_logs(*_runs(seeded=True))
    assert not report.diverged
    assert runs_sentence("0123456789abcdef", "a01", AXES["threads"], report).endswith(
        "gave the same ops and results here: the variation did not show in these two runs (it may need more runs, "
        "another machine or a GPU: docs/determinism.md)")


def test_each_axis_runs_its_own_path_and_unknown_axes_are_refused():
    assert axis_run("a01", Path("g"), AXES["compiled"]) == Named("golden", "a01", mode="compiled", golden_dir="g")
    assert axis_run("a01", Path("g"), AXES["threads"]).mode == "eager"
    with pytest.raises(ValueError, match="no reproducibility axis 'seed' \\(known: process, threads, compiled\\)"):
        axis_named("seed")
