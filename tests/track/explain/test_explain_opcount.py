"""Counting aten ops per call site, and their difference between two runs."""

from __future__ import annotations

import torch

from detsim.track.explain.opcount import count_ops, diff_ops, format_op_changes, short_site, site_key


def _render(extra: bool):
    x = torch.linspace(0, 1, 64, dtype=torch.float64)
    y = x * 2
    if extra:
        y = y + torch.exp(x)
    return y


def test_ops_are_counted_with_their_elements_and_call_site():
    rows = count_ops(lambda: _render(False))
    mul = [r for r in rows if r["op"] == "aten.mul.Tensor"]
    assert mul and mul[0]["elements"] == 64 and mul[0]["calls"] == 1
    assert "in _render" in mul[0]["site"]


def test_the_diff_puts_the_new_op_first_with_its_call_site():
    changes = diff_ops(count_ops(lambda: _render(False)), count_ops(lambda: _render(True)))
    assert {c["op"] for c in changes} == {"aten.exp.default", "aten.add.Tensor"}  # the planted exp and its add
    exp = next(c for c in changes if c["op"] == "aten.exp.default")
    assert exp["delta"] == 64 and exp["calls_old"] == 0 and "in _render" in exp["site"]
    assert "+64 elements (+1 call) aten.exp.default at " in "\n".join(format_op_changes(changes))


def test_sites_match_across_folders_and_lines():
    where = "/tmp/a/detsim/engine.py:12 in render"
    assert short_site(where) == "detsim/engine.py:12 in render"
    assert site_key(where) == site_key("/other/detsim/engine.py:99 in render") == "detsim/engine.py in render"
    old = [{"op": "aten.add.Tensor", "site": "detsim/e.py:1 in f", "calls": 1, "elements": 8}]
    new = [{"op": "aten.add.Tensor", "site": "detsim/e.py:5 in f", "calls": 1, "elements": 8}]
    assert diff_ops(old, new) == []
