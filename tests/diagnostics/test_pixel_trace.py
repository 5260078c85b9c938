"""Per-pixel traces (detsim.diagnostics.pixel_trace): the values are the image's, the lines follow nanoBragg's loops."""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

import detsim.diagnostics.pixel_trace as trace
from _tolerances import F64_ROUNDING, FLOAT32_PIXEL_REL
from detsim.model.config import ConfigError
from detsim.rendering.engine import prepare, render
from detsim.track.compare.traces import compare_traces, load_trace, parse_trace
from helpers import config_from_argv

DOCS = Path(__file__).resolve().parents[2] / "docs" / "trace.md"

# Every sampling axis at once: 2 sources, 2 phi steps x 2 mosaic domains, 2 sensor layers, 2x2 subpixels, ROI.
RICH = ("-default_F 50 -cell 30 32 34 90 90 90 -misset 10 20 30 -N 3 -mosaic 1 -mosaic_dom 2 -hdivrange 4 "
        "-hdivsteps 2 -polar 0.9 -detpixels_f 6 -detpixels_s 5 -pixel 4 -distance 40 -detector_thick 200 "
        "-detector_thicksteps 2 -oversample 2 -phi 3 -osc 2 -phisteps 2 -roi 1 4 0 3").split()


def _trace(args, pixels):
    buf = io.StringIO()
    trace.trace_pixels(config_from_argv(args), pixels, out=buf)
    return buf.getvalue()


def _records(args, pixel):
    [(_, records)] = list(trace.trace_records(config_from_argv(args), [pixel]))
    return records


def _one(records, name):
    [record] = [r for r in records if r.name == name]
    return record.values


def _image(args, dtype=torch.float64):
    image, _ = render(prepare(config_from_argv(args), dtype=dtype))
    return image.numpy()


@pytest.mark.parametrize("pixel", [(0, 1), (2, 3), (3, 4)])
def test_traced_value_is_the_image_value(pixel):
    image = _image(RICH)
    value = _one(_records(RICH, pixel), "pixel_value")[0]
    assert value == pytest.approx(float(image[pixel]), rel=F64_ROUNDING)


def test_trace_is_float64_whatever_the_run_dtype():
    value = _one(_records(RICH, (2, 3)), "pixel_value")[0]
    image32 = _image(RICH, torch.float32)
    assert value == pytest.approx(float(image32[2, 3]), rel=FLOAT32_PIXEL_REL)
    assert value == pytest.approx(float(_image(RICH)[2, 3]), rel=F64_ROUNDING)


def test_lines_follow_the_loops_with_their_indices():
    records = _records(RICH, (2, 3))
    T, O, S, R = 2, 4, 2, 4
    counts = Counter(r.name for r in records)
    assert counts["pixel_pos"] == counts["diffracted"] == counts["airpath"] == T * O
    assert counts["scattering"] == T * O * S
    assert counts["hkl"] == counts["hkl0"] == counts["F_latt_sq"] == counts["F_latt_axes_sq"] == T * O * S * R
    assert counts["incident"] == counts["lambda"] == S
    assert counts["a"] == counts["b"] == counts["c"] == R and counts["phi"] == 2
    assert counts["omega_pixel"] == 1 and counts["polar"] == 1 and counts["capture_fraction"] == T
    hkl_labels = [dict(r.labels) for r in records if r.name == "hkl"]
    expected = [dict(layer=t, subS=o // 2, subF=o % 2, source=s, phi=r // 2, mos=r % 2)
                for t in range(T) for o in range(O) for s in range(S) for r in range(R)]
    assert hkl_labels == expected
    first = [r.name for r in records]
    assert first[:2] == ["pixel", "rendered"] and first[-1] == "pixel_value"
    assert first.index("pix0_vector") < first.index("pixel_pos") < first.index("scattering") < first.index("hkl")


def test_terms_add_up_to_the_pixel_value():
    records = _records(RICH, (2, 3))
    I_terms = sum(r.values[0] for r in records if r.name == "I_term")
    I_sum = _one(records, "I_sum")[0]
    assert I_sum == pytest.approx(_one(records, "I_bg")[0] + I_terms, rel=F64_ROUNDING)
    product = I_sum * _one(records, "scale")[0]
    for name in ("capture_fraction_used", "polar_used", "omega_used"):
        product *= _one(records, name)[0]
    assert _one(records, "pixel_value")[0] == pytest.approx(product, rel=F64_ROUNDING)
    assert _one(records, "steps")[0] == 2 * 4 * 4


def test_oversample_flags_print_factors_per_step_and_one_at_the_end():
    args = RICH + ["-oversample_polar", "-oversample_omega", "-oversample_thick"]
    records = _records(args, (2, 3))
    counts = Counter(r.name for r in records)
    assert counts["omega_pixel"] == counts["capture_fraction"] == 2 * 4
    assert counts["polar"] == 2 * 4 * 2
    assert [_one(records, n)[0] for n in ("capture_fraction_used", "polar_used", "omega_used")] == [1.0, 1.0, 1.0]
    assert _one(records, "pixel_value")[0] == pytest.approx(float(_image(args)[2, 3]), rel=F64_ROUNDING)


def test_pixel_outside_the_roi_is_reported_as_not_rendered():
    records = _records(RICH, (4, 0))
    assert [(r.name, r.values) for r in records] == [("pixel", (4, 0)), ("rendered", (0,)), ("pixel_value", (0.0,))]


def test_pixel_outside_the_detector_is_refused_before_printing():
    buf = io.StringIO()
    with pytest.raises(ConfigError, match="-trace_pixel 5 0"):
        trace.trace_pixels(config_from_argv(RICH), [(1, 1), (5, 0)], out=buf)
    assert buf.getvalue() == ""


def test_skipped_iterations_print_no_F_cell():
    args = "-default_F 50 -cell 40 40 40 90 90 90 -N 4 -tophat_spots -detpixels 4 -pixel 1 -distance 50".split()
    records = _records(args, (1, 2))
    latt = [r.values[0] for r in records if r.name == "F_latt_sq"]
    assert Counter(r.name for r in records)["F_cell"] == sum(v != 0 for v in latt) < len(latt)
    assert "F_latt_axes_sq" not in {r.name for r in records}


def test_a_source_cut_by_dmin_prints_only_its_scattering_vector():
    args = "-default_F 50 -cell 40 40 40 90 90 90 -N 4 -detpixels 8 -pixel 1 -distance 50 -oversample 2 -dmin 20".split()
    records = _records(args, (0, 0))  # a corner: d is about 9 A < dmin for every subpixel
    names = Counter(r.name for r in records)
    assert names["scattering"] > 0 and names["hkl"] == 0 and names["polar"] == 0
    assert _one(records, "pixel_value") == (0.0,)


def test_interpolation_switched_off_earlier_in_the_image_is_off_in_the_trace(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    rows = [f"{h} {k} {l} {rng.uniform(10, 200):.2f}" for h in range(-4, 5) for k in range(-4, 5) for l in range(-4, 5)]
    (tmp_path / "small.hkl").write_text("\n".join(rows) + "\n")
    monkeypatch.chdir(tmp_path)
    args = ("-hkl small.hkl -interpolate -cell 60 60 60 90 90 90 -misset 20 -15 35 -lambda 1.5 -N 3 "
            "-distance 80 -pixel 0.8 -detpixels 24").split()
    setup = prepare(config_from_argv(args))
    image, info = render(setup)
    assert info.interpolation_switched_off_at is not None
    s0, f0 = info.interpolation_switched_off_at
    later = (12, 12)
    assert later[0] * 24 + later[1] > s0 * 24 + f0
    at_cutoff, after = _records(args, (s0, f0)), _records(args, later)
    assert _one(at_cutoff, "interpolate") == (1,) and _one(after, "interpolate") == (0,)
    for pixel, records in (((s0, f0), at_cutoff), (later, after)):
        assert _one(records, "pixel_value")[0] == pytest.approx(float(image[pixel]), rel=F64_ROUNDING)


def test_every_printed_name_is_in_the_vocabulary_and_documented():
    printed = {r.name for r in _records(RICH, (2, 3))} | {r.name for r in _records(RICH, (4, 0))}
    assert printed <= trace.NAMES
    documented = set(re.findall(r"^\|\s*`([A-Za-z_0-9]+)`\s*\|", DOCS.read_text(), flags=re.MULTILINE))
    assert trace.NAMES <= documented, f"missing from docs/trace.md: {sorted(trace.NAMES - documented)}"


def test_lines_are_prefixed_and_parse_back_exactly():
    text = _trace(RICH, [(2, 3), (0, 1)])
    lines = text.splitlines()
    assert all(line.startswith("TRACE_PY: ") for line in lines)
    assert lines[0] == "TRACE_PY: pixel 2 3"
    parsed = parse_trace(text)
    assert parsed.bad == [] and parsed.pixels() == [(2, 3), (0, 1)]
    assert compare_traces(parsed, parse_trace(text), rtol=0, atol=0).first is None


def test_json_holds_the_same_records(tmp_path):
    out = tmp_path / "trace.json"
    buf = io.StringIO()
    trace.trace_pixels(config_from_argv(RICH), [(2, 3)], out=buf, json_path=out)
    data = json.loads(out.read_text())
    assert data["format"] == "detsim-trace" and data["dtype"] == "float64" and data["device"] == "cpu"
    assert "torch" in data["environment"] and data["roi"] == [1, 4, 0, 3]
    [block] = data["pixels"]
    assert block["pixel"] == [2, 3]
    assert len(block["records"]) == len(buf.getvalue().splitlines())
    text_file = tmp_path / "trace.log"
    text_file.write_text(buf.getvalue())
    result = compare_traces(load_trace(out), load_trace(text_file), rtol=0, atol=0)
    assert result.first is None and result.compared == len(block["records"]) - 1
    assert not list(tmp_path.glob(".*.tmp"))
