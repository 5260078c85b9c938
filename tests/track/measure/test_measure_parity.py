"""detsim.track.measure.parity: one case's render against its reference and its case result; the PNG encoder,
the picture mappings, the table and the pages.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from parity_files import SMALL_CASES, decode_png

from _tolerances import PARITY_MIN_R
from conftest import GOLDEN_DIR
from detsim.track.base.golden import GoldenCase, find_case
from detsim.track.base.status import Status
from detsim.track.measure import parity


@pytest.fixture(scope="module")
def passing_run():
    return parity.run_case(find_case(SMALL_CASES[0], GOLDEN_DIR), dtype=torch.float64, device="cpu",
                            min_r=PARITY_MIN_R)


def test_a_golden_case_passes_with_its_record(passing_run):
    result = parity.case_result(passing_run)
    case = find_case(SMALL_CASES[0], GOLDEN_DIR)
    assert passing_run.status is Status.OK and result["status"] == "pass" and result["r"] >= PARITY_MIN_R
    assert result["id"] == case.id and result["dir"] == str(case.folder) and result["args"] == list(case.args)
    assert result["shape"] == [128, 128] and result["seconds"] >= 0
    assert passing_run.image.shape == passing_run.reference.shape == (128, 128)
    assert passing_run.image.dtype == np.float64 and passing_run.reference.dtype == np.float32


def test_a_stricter_line_makes_the_same_image_fail():
    run = parity.run_case(find_case(SMALL_CASES[0], GOLDEN_DIR), dtype=torch.float64, device="cpu", min_r=1.5)
    assert run.status is Status.FAILED and run.config is not None
    assert parity.case_result(run)["status"] == "fail"


def test_a_case_that_cannot_run_is_an_error_not_an_exception(tmp_path):
    folder = tmp_path / "bogus"
    folder.mkdir()
    (folder / "args.txt").write_text("-detpixels 8 -bogus_flag\n")
    run = parity.run_case(GoldenCase.from_folder(folder), dtype=torch.float64, device="cpu", min_r=PARITY_MIN_R)
    result = parity.case_result(run)
    assert run.status is Status.CRASHED and result["status"] == "error" and "bogus_flag" in result["error"]
    assert run.image is None and run.reference is None and run.config is None and "shape" not in result


def test_a_reference_of_another_shape_is_an_error(tmp_path):
    folder = tmp_path / SMALL_CASES[0]
    shutil.copytree(GOLDEN_DIR / SMALL_CASES[0], folder)
    case = GoldenCase.from_folder(folder, {"id": "reshaped", "shape": [64, 256]})  # same pixel count
    result = parity.case_result(parity.run_case(case, dtype=torch.float64, device="cpu", min_r=PARITY_MIN_R))
    assert result["status"] == "error" and result["shape"] == [128, 128]
    assert "a 64x256 image, but the arguments give a 128x128 detector" in result["error"]


def test_the_worst_pixels_trace_and_what_to_do_with_it(passing_run, tmp_path):
    name, lines = parity.worst_pixel_trace(passing_run)
    result = parity.case_result(passing_run)
    s, f = result["worst"]["s"], result["worst"]["f"]
    assert name == f"trace_s{s}_f{f}.log" and lines[0] == f"TRACE_PY: pixel {s} {f}"
    assert float(lines[-1].split()[-1]) == pytest.approx(result["worst"]["detsim"], rel=1e-9)
    steps = parity.next_steps(result, Path("/r") / name)
    assert steps[0].endswith(f"/r/{name}") and steps[-1] == f"then: detsim-track trace-diff c.log /r/{name}"
    assert f"{result['dir']}/args.txt for slow {s}, fast {f}" in steps[1]


# ---- pictures and pages

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
    assert np.array_equal(decode_png(parity.encode_png(grey)), grey)
    assert np.array_equal(decode_png(parity.encode_png(rgb)), rgb)
    with pytest.raises(ValueError):
        parity.encode_png(np.zeros((2, 2), np.float32))


@pytest.mark.parametrize("pixels", [np.zeros((0, 3), np.uint8), np.zeros((2, 2, 4), np.uint8)])
def test_png_encoder_refuses_what_it_cannot_write(pixels):
    with pytest.raises(ValueError):
        parity.encode_png(pixels)


def test_pictures_map_values_as_documented():
    reference = np.array([[0.0, 1.0], [10.0, 1000.0]])
    scale = parity.IntensityScale.of(reference)
    grey = parity.intensity_picture(reference, scale)
    assert grey[0, 0] == 255 and grey[1, 1] == 0 and 255 > grey[0, 1] > grey[1, 0] > 0
    diff = np.array([[0.0, 1e-12], [5.0, -5.0]])
    rgb, top = parity.difference_picture(diff, floor=1e-9)
    assert top == 5.0
    assert tuple(rgb[0, 0]) == tuple(rgb[0, 1]) == (255, 255, 255)
    assert tuple(rgb[1, 0]) == (255, 0, 0) and tuple(rgb[1, 1]) == (0, 0, 255)


def test_scale_and_floor_of_degenerate_images():
    empty = parity.IntensityScale.of(np.zeros((2, 2)))
    assert (parity.intensity_picture(np.ones((2, 2)), empty) == 255).all()  # nothing to show: white
    assert parity.difference_floor(np.array([[1.0, np.nan]]), np.array([[2.0, 0.0]])) == 2.0 * 2.0 ** -24
    rgb, _ = parity.difference_picture(np.array([[np.nan, 1.0]]), floor=1e-3)
    assert tuple(rgb[0, 0]) == (0, 200, 0)  # a non-finite difference is green


def test_text_table_has_one_row_per_case_with_undefined_values_as_na():
    lines = parity.text_table([PASSING, BROKEN]).splitlines()
    assert lines[0].split()[:4] == ["case", "verdict", "r", "1-r"]
    assert lines[1].split()[:4] == ["a<1>", "PASS", "0.99999999", "1.0e-08"]
    assert lines[2].split() == ["b|2", "ERROR"] + ["n/a"] * 7


def test_markdown_escapes_table_cells_and_links_the_pictures():
    text = parity.markdown(SUMMARY)
    assert text.startswith("# Parity report 20000101T000000Z\n")
    assert "| b\\|2 | ERROR |" in text and "Error: `ArgumentError: unknown flag -bogus`" in text
    assert "![reference](cases/a<1>/reference.png)" in text
    assert "detsim 0123456789ab (dirty)" in text and "threshold r >= 0.9995" in text


def test_index_html_escapes_what_it_shows():
    page = parity.index_html(SUMMARY)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert 'href="#a&lt;1&gt;"' in page and "a<1>" not in page
    assert page.count("<img ") == 3 and 'src="cases/a&lt;1&gt;/difference.png"' in page
    assert '<tr class="error">' in page and "unknown flag -bogus" in page
