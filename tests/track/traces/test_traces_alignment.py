"""traces.compare: alignment by pixel, name and occurrence; the tolerance rule; the printed report."""

from __future__ import annotations

import math

from detsim.track.traces.alignment import DEFAULT_ATOL, DEFAULT_RTOL, compare, format_comparison
from detsim.track.traces.tracelog import SHARED, parse_trace


def trace(*lines: str, prefix: str = "T"):
    return parse_trace("".join(f"{prefix}: {line}\n" for line in lines))


def test_values_agree_within_atol_plus_rtol_times_the_larger_magnitude():
    a, b = trace("x 100.0"), trace("x 100.00009")  # |a - b| = 9e-5
    assert compare(a, b, rtol=1e-7, atol=0).first is not None  # 1e-7 * 100.00009 < 9e-5
    assert compare(a, b, rtol=1e-6, atol=0).first is None  # 1e-6 * 100.00009 >= 9e-5
    assert compare(a, b, rtol=1e-7, atol=1e-4).first is None
    difference = compare(a, b, rtol=0, atol=0).first
    assert difference.reason == "values" and difference.component == 0
    assert math.isclose(difference.abs, 9e-5, rel_tol=1e-6) and math.isclose(difference.rel, 9e-5 / 100.00009)
    assert compare(trace("x nan"), trace("x nan"), rtol=0, atol=0).first is None
    assert (DEFAULT_RTOL, DEFAULT_ATOL) == (1e-6, 1e-12)


def test_an_infinity_agrees_only_with_the_same_infinity_and_nan_only_with_nan():
    for x, y in (("inf", "1.0"), ("inf", "-inf"), ("-inf", "1e300"), ("nan", "1.0"), ("nan", "inf")):
        for a, b in ((x, y), (y, x)):
            difference = compare(trace(f"v {a}"), trace(f"v {b}")).first
            assert difference is not None and difference.reason == "values", (a, b)
            assert math.isinf(difference.rel) or math.isnan(difference.rel)
    for same in ("inf", "-inf", "nan"):
        assert compare(trace(f"v 1 {same}"), trace(f"v 1 {same}"), rtol=0, atol=0).first is None


def test_the_nth_line_of_a_name_pairs_with_the_nth_of_the_same_name():
    a = trace("pixel 0 0", "x 1", "y 5", "x 2")
    b = trace("pixel 0 0", "x 1", "x 3", "z 7")
    result = compare(a, b)
    assert [(d.name, d.occurrence, d.b.values) for d in result.differences] == [("x", 2, (3.0,))]
    assert dict(result.only_a) == {"y": 1} and dict(result.only_b) == {"z": 1} and result.compared == 2


def test_labels_and_value_counts_that_disagree_are_differences():
    assert compare(trace("x a=1 1"), trace("x a=2 1")).first.reason == "labels"
    assert compare(trace("x 1"), trace("x 1 2")).first.reason == "count"
    assert compare(trace("x a=1 1"), trace("x b=2 1")).first is None  # only common labels are compared


def test_pixels_pair_by_index_and_a_pixelless_log_pairs_with_a_single_pixel():
    two = trace("pixel 0 1", "x 1", "pixel 2 3", "x 2")
    one = trace("pixel 2 3", "x 2")
    result = compare(two, one)
    assert result.pairs == [((2, 3), (2, 3))] and result.pixels_only_a == [(0, 1)] and result.first is None
    assert compare(trace("x 2"), one).pairs == [(SHARED, (2, 3))]


def test_the_report_names_the_first_difference_then_summarises_by_name():
    result = compare(trace("pixel 1 2", "x 1", "y 1", "x 1"), trace("pixel 1 2", "x 2", "y 3", "x 1"))
    text = format_comparison(result)
    assert "FIRST DIFFERENCE: x at pixel (s=1, f=2), occurrence 1" in text
    assert "component 0: relative difference 0.5 (absolute 1)" in text
    assert "2 differing lines; by name, in order of first appearance:" in text
    assert text.index("  x ") < text.index("  y ")
    assert format_comparison(compare(trace("x 1"), trace("y 1"))).endswith("nothing in common to compare")
