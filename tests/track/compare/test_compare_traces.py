"""compare.traces: trace logs parsed into pixel blocks, aligned, and their first difference reported."""

from __future__ import annotations

import json
import math

import pytest

from detsim.track.compare.traces import DEFAULT_ATOL, DEFAULT_RTOL, SHARED, TraceError, compare_traces, \
    format_comparison, load_trace, parse_trace


def test_parse_reads_labels_values_and_numbers_in_any_notation():
    parsed = parse_trace("TRACE_X: pixel 1 2\nTRACE_X: hkl phi=0 mos=3 1e-3, -2.5, nan\n")
    [line] = parsed.blocks[(1, 2)]
    assert line.name == "hkl" and line.labels == (("phi", "0"), ("mos", "3"))
    assert line.values[:2] == (1e-3, -2.5) and line.values[2] != line.values[2]


def test_the_trace_prefix_is_detected_among_other_output():
    text = ("roi: 0 5 0 4\nroi: 1 2\nTRACE_C: distance 0.1\nTRACE_C: pixel 0 1\nTRACE_C: I_sum 3\n"
            "a message without newline TRACE_C: I_sum 4\n")
    trace = parse_trace(text, "c.log")
    assert trace.prefix == "TRACE_C" and trace.count == 4
    assert [line.name for line in trace.blocks[SHARED]] == ["distance"]
    lines = list(trace.outputs((0, 1)).values())  # the shared lines, then the pixel's own
    assert [line.values for line in lines] == [(0.1,), (3.0,), (4.0,)]
    assert trace.pixels() == [(0, 1)] and lines[1].lineno == 5


def test_without_a_trace_prefix_the_most_common_named_one_is_used():
    assert parse_trace("X: a 1\nX: b 2\nY: c 3\n").prefix == "X"
    assert parse_trace("no trace here\n").prefix is None


def test_bad_lines_are_kept_with_their_reason():
    trace = parse_trace("TRACE: pixel 1\nTRACE: x 1 two\nTRACE: ok 1\n")
    assert [lineno for lineno, _ in trace.bad] == [1, 2]
    assert "a pixel line needs two values" in trace.bad[0][1] and "non-numeric value 'two' in x" in trace.bad[1][1]


def test_a_trace_json_file_loads_as_the_same_blocks(tmp_path):
    data = {"prefix": "TRACE_PY", "pixels": [{"pixel": [2, 3], "records": [
        {"name": "pixel", "values": [2, 3]},
        {"name": "hkl", "labels": {"layer": 0}, "values": [1.0, "nan", 3]}]}]}
    (tmp_path / "t.json").write_text(json.dumps(data))
    trace = load_trace(tmp_path / "t.json")
    [line] = trace.blocks[(2, 3)]
    assert trace.prefix == "TRACE_PY" and line.labels == (("layer", "0"),) and line.lineno == 0
    assert line.values[0] == 1.0 and line.values[1] != line.values[1]
    (tmp_path / "bad.json").write_text(json.dumps({"pixels": [{"records": []}]}))
    with pytest.raises(TraceError, match="malformed trace JSON"):
        load_trace(tmp_path / "bad.json")


def test_an_unreadable_file_is_a_trace_error(tmp_path):
    with pytest.raises(TraceError, match="cannot read"):
        load_trace(tmp_path / "missing.log")
    (tmp_path / "plain.log").write_text("{not json\nTRACE: x 1\n")
    assert load_trace(tmp_path / "plain.log").count == 1  # a brace alone does not make it JSON


def trace(*lines: str, prefix: str = "T"):
    return parse_trace("".join(f"{prefix}: {line}\n" for line in lines))


def test_values_agree_within_atol_plus_rtol_times_the_larger_magnitude():
    a, b = trace("x 100.0"), trace("x 100.00009")  # |a - b| = 9e-5
    assert compare_traces(a, b, rtol=1e-7, atol=0).first is not None  # 1e-7 * 100.00009 < 9e-5
    assert compare_traces(a, b, rtol=1e-6, atol=0).first is None  # 1e-6 * 100.00009 >= 9e-5
    assert compare_traces(a, b, rtol=1e-7, atol=1e-4).first is None
    difference = compare_traces(a, b, rtol=0, atol=0).first
    assert difference.reason == "values" and difference.component == 0
    assert math.isclose(difference.abs, 9e-5, rel_tol=1e-6) and math.isclose(difference.rel, 9e-5 / 100.00009)
    assert compare_traces(trace("x nan"), trace("x nan"), rtol=0, atol=0).first is None
    assert (DEFAULT_RTOL, DEFAULT_ATOL) == (1e-6, 1e-12)


def test_an_infinity_agrees_only_with_the_same_infinity_and_nan_only_with_nan():
    for x, y in (("inf", "1.0"), ("inf", "-inf"), ("-inf", "1e300"), ("nan", "1.0"), ("nan", "inf")):
        for a, b in ((x, y), (y, x)):
            difference = compare_traces(trace(f"v {a}"), trace(f"v {b}")).first
            assert difference is not None and difference.reason == "values", (a, b)
            assert math.isinf(difference.rel) or math.isnan(difference.rel)
    for same in ("inf", "-inf", "nan"):
        assert compare_traces(trace(f"v 1 {same}"), trace(f"v 1 {same}"), rtol=0, atol=0).first is None


def test_the_nth_line_of_a_name_pairs_with_the_nth_of_the_same_name():
    a = trace("pixel 0 0", "x 1", "y 5", "x 2")
    b = trace("pixel 0 0", "x 1", "x 3", "z 7")
    result = compare_traces(a, b)
    assert [(d.name, d.occurrence, d.b.values) for d in result.differences] == [("x", 2, (3.0,))]
    assert dict(result.only_a) == {"y": 1} and dict(result.only_b) == {"z": 1} and result.compared == 2


def test_labels_and_value_counts_that_disagree_are_differences():
    assert compare_traces(trace("x a=1 1"), trace("x a=2 1")).first.reason == "labels"
    assert compare_traces(trace("x 1"), trace("x 1 2")).first.reason == "count"
    assert compare_traces(trace("x a=1 1"), trace("x b=2 1")).first is None  # only common labels are compared


def test_pixels_pair_by_index_and_a_pixelless_log_pairs_with_a_single_pixel():
    two = trace("pixel 0 1", "x 1", "pixel 2 3", "x 2")
    one = trace("pixel 2 3", "x 2")
    result = compare_traces(two, one)
    assert result.pairs == [((2, 3), (2, 3))] and result.pixels_only_a == [(0, 1)] and result.first is None
    assert compare_traces(trace("x 2"), one).pairs == [(SHARED, (2, 3))]


def test_the_report_names_the_first_difference_then_summarises_by_name():
    result = compare_traces(trace("pixel 1 2", "x 1", "y 1", "x 1"), trace("pixel 1 2", "x 2", "y 3", "x 1"))
    text = format_comparison(result)
    assert "FIRST DIFFERENCE: x at pixel (s=1, f=2), occurrence 1" in text
    assert "component 0: relative difference 0.5 (absolute 1)" in text
    assert "2 differing lines; by name, in order of first appearance:" in text
    assert text.index("  x ") < text.index("  y ")
    assert format_comparison(compare_traces(trace("x 1"), trace("y 1"))).endswith("nothing in common to compare")
