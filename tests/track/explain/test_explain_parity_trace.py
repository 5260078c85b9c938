"""The worst pixel and the first traced quantity that changed, on synthetic images and traces."""

from __future__ import annotations

import numpy as np

from detsim.track.explain.parity_trace import first_change, sentence, worst_pixel

OLD = """TRACE_PY: pixel 3 4
TRACE_PY: rendered 1
TRACE_PY: omega_pixel 1.5e-06
TRACE_PY: polar layer=0 subS=0 subF=0 source=0 0.98
TRACE_PY: I_term 100
TRACE_PY: pixel_value 12.5
"""
NEW = OLD.replace("0.98", "0.93").replace("12.5", "11.9")


def test_the_worst_pixel_changed_most_else_is_furthest_from_nanobragg():
    old = np.zeros((4, 5))
    new = old.copy()
    new[2, 3] = 1e-9
    assert worst_pixel(old, new) == (2, 3)
    reference = old.copy()
    reference[1, 4] = 5.0
    assert worst_pixel(old, old, reference) == (1, 4)


def test_the_first_quantity_that_differs_is_named_with_both_values():
    change = first_change(OLD, NEW)
    assert change["name"] == "polar" and change["labels"] == "layer=0 subS=0 subF=0 source=0"
    assert (change["old"], change["new"]) == ("0.97999999999999998", "0.93000000000000005")
    assert change["differing"] == ["polar", "pixel_value"]
    said = sentence("abcdef0123456789", change, (3, 4))
    assert said.startswith("the parity change at abcdef01 starts at `polar` [layer=0 subS=0 subF=0 source=0]")
    assert "0.93" in said


def test_agreeing_traces_say_so():
    assert first_change(OLD, OLD) is None
    assert "agree at both commits" in sentence("abcdef0123", None, (3, 4))
