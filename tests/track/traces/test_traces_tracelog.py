"""traces.tracelog: trace lines are found in any program's output, grouped by pixel; JSON traces too."""

from __future__ import annotations

import json

import pytest

from detsim.track.traces.tracelog import SHARED, TraceError, load_trace, parse_trace


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
    assert [line.values for line in trace.sequence((0, 1))] == [(0.1,), (3.0,), (4.0,)]
    assert trace.pixels() == [(0, 1)] and trace.sequence((0, 1))[1].lineno == 5


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
