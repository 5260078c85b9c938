"""detsim.track.parity.report: the PNG encoder, the picture mappings, the table and the pages."""

from __future__ import annotations

import numpy as np
import pytest

from detsim.track.parity import report
from parity_files import decode_png

PASSING = {"id": "a<1>", "status": "pass", "r": 0.99999999, "max_abs": 1e-5, "max_rel": 6e-8, "sum_ratio": 1.0,
           "worst": {"s": 3, "f": 4, "detsim": 138.25, "reference": 138.25}, "args": ["-N", "5"],
           "pictures": {k: f"cases/a<1>/{k}.png" for k in ("reference", "detsim", "difference")},
           "scale": {"knee": 1.0, "vmax": 100.0, "floor": 1e-6, "max_abs": 1e-5}}
BROKEN = {"id": "b|2", "status": "error", "error": "ArgumentError: unknown flag -bogus"}
SUMMARY = {"stamp": "20000101T000000Z", "min_r": 0.9995, "dtype": "float64", "device": "cpu", "cases_dir": "/c",
           "environment": {"commit": "0123456789abcdef", "dirty": True, "torch": "2.x", "python": "3.11"},
           "counts": {"total": 2, "pass": 1, "fail": 0, "error": 1}, "cases": [PASSING, BROKEN]}


def test_png_round_trip():
    rng = np.random.default_rng(0)
    grey = rng.integers(0, 256, (7, 5), dtype=np.uint8)
    rgb = rng.integers(0, 256, (3, 4, 3), dtype=np.uint8)
    assert np.array_equal(decode_png(report.encode_png(grey)), grey)
    assert np.array_equal(decode_png(report.encode_png(rgb)), rgb)
    with pytest.raises(ValueError):
        report.encode_png(np.zeros((2, 2), np.float32))


@pytest.mark.parametrize("pixels", [np.zeros((0, 3), np.uint8), np.zeros((2, 2, 4), np.uint8)])
def test_png_encoder_refuses_what_it_cannot_write(pixels):
    with pytest.raises(ValueError):
        report.encode_png(pixels)


def test_pictures_map_values_as_documented():
    reference = np.array([[0.0, 1.0], [10.0, 1000.0]])
    scale = report.IntensityScale.of(reference)
    grey = report.intensity_picture(reference, scale)
    assert grey[0, 0] == 255 and grey[1, 1] == 0 and 255 > grey[0, 1] > grey[1, 0] > 0
    diff = np.array([[0.0, 1e-12], [5.0, -5.0]])
    rgb, top = report.difference_picture(diff, floor=1e-9)
    assert top == 5.0
    assert tuple(rgb[0, 0]) == tuple(rgb[0, 1]) == (255, 255, 255)
    assert tuple(rgb[1, 0]) == (255, 0, 0) and tuple(rgb[1, 1]) == (0, 0, 255)


def test_scale_and_floor_of_degenerate_images():
    empty = report.IntensityScale.of(np.zeros((2, 2)))
    assert (report.intensity_picture(np.ones((2, 2)), empty) == 255).all()  # nothing to show: white
    assert report.difference_floor(np.array([[1.0, np.nan]]), np.array([[2.0, 0.0]])) == 2.0 * 2.0 ** -24
    rgb, _ = report.difference_picture(np.array([[np.nan, 1.0]]), floor=1e-3)
    assert tuple(rgb[0, 0]) == (0, 200, 0)  # a non-finite difference is green


def test_text_table_has_one_row_per_case_with_undefined_values_as_na():
    lines = report.text_table([PASSING, BROKEN]).splitlines()
    assert lines[0].split()[:4] == ["case", "verdict", "r", "1-r"]
    assert lines[1].split()[:4] == ["a<1>", "PASS", "0.99999999", "1.0e-08"]
    assert lines[2].split() == ["b|2", "ERROR"] + ["n/a"] * 7


def test_markdown_escapes_table_cells_and_links_the_pictures():
    text = report.markdown(SUMMARY)
    assert text.startswith("# Parity report 20000101T000000Z\n")
    assert "| b\\|2 | ERROR |" in text and "Error: `ArgumentError: unknown flag -bogus`" in text
    assert "![reference](cases/a<1>/reference.png)" in text
    assert "detsim 0123456789ab (dirty)" in text and "threshold r >= 0.9995" in text


def test_index_html_escapes_what_it_shows():
    page = report.index_html(SUMMARY)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert 'href="#a&lt;1&gt;"' in page and "a<1>" not in page
    assert page.count("<img ") == 3 and 'src="cases/a&lt;1&gt;/difference.png"' in page
    assert '<tr class="error">' in page and "unknown flag -bogus" in page
