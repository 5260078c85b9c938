"""An image-hash change read from two op streams: reordered operands, a changed constant, the same stream."""

from __future__ import annotations

import torch

from detsim.track.divergence.recorder import record
from detsim.track.explain.hashes import compare_sides, sentence

X = torch.linspace(0, 1, 16, dtype=torch.float64)


def _sum(a, b, c, reorder):
    """a + b + c, or (at the 'new commit') a + c + b: the same ops at the same place, other operands."""
    return torch.add(torch.add(a, c), b) if reorder else torch.add(torch.add(a, b), c)


def _scaled(a, factor):
    return a * factor


def _recorded(fn, *args, fill=0):
    return record(fn, *args, label="case", fill=fill)


def test_a_reordered_sum_is_named_at_the_op_that_takes_the_other_operand():
    args = (X, X * 1e-17, X * 3.3)
    report = compare_sides(_recorded(_sum, *args, False), _recorded(_sum, *args, True, fill=1))
    said = sentence("0123456789abcdef", report)
    assert report.first.role == "operands" and report.first.name == "aten.add.Tensor"
    assert said.startswith("the image change at 01234567 starts at #0 op aten.add.Tensor")
    assert "operands (the order of a sum or product) changed" in said


def test_a_changed_constant_is_named_with_its_old_and_new_value():
    report = compare_sides(_recorded(_scaled, X, 0.5), _recorded(_scaled, X, 0.45, fill=1))
    said = sentence("0123456789abcdef", report)
    assert report.first.role == "culprit"
    assert "a Python value passed to it changed" in said and "0.5 -> 0.45" in said


def test_the_same_stream_says_the_image_is_the_same():
    report = compare_sides(_recorded(_scaled, X, 0.5), _recorded(_scaled, X, 0.5, fill=1))
    assert sentence("0123456789abcdef", report).endswith("agree: the image is the same")
