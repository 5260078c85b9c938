"""Parity graphs: the log-scale maths, the floor, the acceptance line and the worst case."""

from __future__ import annotations

import math
import re

import pytest

from detsim.track.base.metrics import PARITY_MIN_R
from detsim.track.publish.graphs import ACCEPT, FLOOR, TICKS, Frame, fmt, log_y, parity_svg, worst_case, x_of

FRAME = Frame(left=0, right=100, top=0, bottom=160)  # 16 decades over 160 units: 10 units a decade


def test_log_y_places_decades_evenly_and_clamps_at_the_floor():
    assert log_y(1.0, FRAME) == (0, False)
    assert log_y(1e-8, FRAME) == (pytest.approx(80), False)
    assert log_y(1e-9, FRAME)[0] == pytest.approx(90)  # a tenth of 1e-8 is one decade lower
    for at_or_below in (FLOOR, 0.0, -1e-12, 1e-20):
        assert log_y(at_or_below, FRAME) == (160, True)
    assert log_y(1.5, FRAME) == (0, True)  # r < 0: clamped to the top


def test_the_acceptance_line_is_the_metrics_one():
    assert ACCEPT == 1 - PARITY_MIN_R
    y, clamped = log_y(ACCEPT, FRAME)
    assert not clamped and y == pytest.approx(-10 * math.log10(ACCEPT))


def test_ticks_x_and_labels():
    assert TICKS == [1.0, 1e-4, 1e-8, 1e-12, 1e-16]
    assert [x_of(i, 3, FRAME) for i in range(3)] == [0, 50, 100]
    assert x_of(0, 1, FRAME) == 50
    assert fmt(0.0) == "<= 1e-16" and fmt(1e-9) == "1e-09" and fmt(None) == "failed" and fmt(float("nan")) == "skipped"


def _ys(svg: str, cls: str) -> list[float]:
    return [float(y) for y in re.findall(rf'<circle cx="[\d.]+" cy="([\d.]+)" r="3" class="pt {cls}"', svg)]


def test_the_svg_draws_floor_points_hollow_the_acceptance_line_and_breaks_at_gaps():
    points = [("a" * 40, 0.0), ("b" * 40, 1e-9), ("c" * 40, None), ("d" * 40, float("nan")), ("e" * 40, 0.03)]
    svg = parity_svg("w01", points, worst=True, subjects={"e" * 40: "Plant a break"})
    frame = Frame()
    assert svg.startswith("<svg") and svg.endswith("</svg>") and 'class="parity worst"' in svg
    [line] = re.findall(r'<line [^>]*class="acceptance"[^>]*>', svg)
    assert f'y1="{log_y(ACCEPT)[0]:.1f}"' in line and 'data-value="0.0005"' in line
    assert _ys(svg, "floor") == [frame.bottom]  # 0 sits on the floor, hollow
    assert _ys(svg, "ok") == [pytest.approx(log_y(1e-9)[0], abs=0.05)]
    assert _ys(svg, "bad") == [pytest.approx(log_y(0.03)[0], abs=0.05)]  # past the line
    assert svg.count('class="failed"') == 1  # the failed commit; the skipped one is not drawn
    assert svg.count("<polyline") == 1  # 0 -> 1e-9 joined; the gap breaks the line before 0.03
    assert "eeeeeeee Plant a break: 1 - r = 0.03" in svg and "&lt;=1e-16" in svg


def test_worst_case_is_the_largest_measured_latest_value():
    assert worst_case({"a": 0.0, "b": 1e-9, "c": None, "d": float("nan")}) == "b"
    assert worst_case({"a": None}) is None
    assert worst_case({"b": 0.0, "a": 0.0}) == "a"  # ties: the first by name
