"""detsim-track trace-diff: names the first quantity where two traces disagree, with its exit code."""

from __future__ import annotations

import io
import re

import pytest

import detsim.rendering.engine
import detsim.diagnostics.pixel_trace as trace
from detsim.track.cli import main as track_main
from helpers import config_from_argv

ARGS = ("-default_F 50 -cell 30 32 34 90 90 90 -misset 10 20 30 -N 3 -mosaic 1 -mosaic_dom 2 -hdivrange 4 "
        "-hdivsteps 2 -detpixels_f 6 -detpixels_s 5 -pixel 4 -distance 40 -oversample 2 -phi 3 -osc 2 "
        "-phisteps 2").split()
PIXEL = (2, 3)


def _log(prefix: str = "TRACE_PY", args=ARGS, pixels=(PIXEL,)) -> str:
    buf = io.StringIO()
    trace.trace_pixels(config_from_argv(args), list(pixels), out=buf)
    return buf.getvalue().replace("TRACE_PY:", f"{prefix}:")


@pytest.fixture(scope="module")
def clean() -> str:
    return _log()


def _diff(tmp_path, a: str, b: str, *options: str, capsys) -> tuple[int, str]:
    (tmp_path / "a.log").write_text(a)
    (tmp_path / "b.log").write_text(b)
    code = track_main(["trace-diff", str(tmp_path / "a.log"), str(tmp_path / "b.log"), *options])
    return code, capsys.readouterr().out


def _plant_sign_flip(text: str) -> str:
    """A reference whose scattering vector has the wrong sign in y: every later quantity moves too."""
    downstream = {"hkl", "F_latt_axes_sq", "F_latt_sq", "I_term", "I_sum", "pixel_value"}
    out = []
    for line in text.splitlines():
        prefix, name, *rest = line.split()
        if name == "scattering":
            values = rest[-3:]
            values[1] = values[1][1:] if values[1].startswith("-") else "-" + values[1]
            rest = rest[:-3] + values
        elif name in downstream:
            rest = [t if "=" in t else repr(float(t) * 1.01 + 0.5) for t in rest]
        out.append(" ".join([prefix, name, *rest]))
    return "\n".join(out) + "\n"


def test_identical_traces_agree(tmp_path, clean, capsys):
    code, out = _diff(tmp_path, clean, clean, "--rtol", "0", "--atol", "0", capsys=capsys)
    assert code == 0
    assert "no difference beyond tolerance" in out


def test_planted_sign_flip_in_the_scattering_vector_is_named_first(tmp_path, clean, capsys):
    reference = _plant_sign_flip(clean).replace("TRACE_PY:", "TRACE_C:")
    code, out = _diff(tmp_path, reference, clean, capsys=capsys)
    assert code == 1
    first = out[out.index("FIRST DIFFERENCE"):].splitlines()
    assert first[0].startswith(f"FIRST DIFFERENCE: scattering at pixel (s={PIXEL[0]}, f={PIXEL[1]}), occurrence 1")
    assert "[layer=0 subS=0 subF=0 source=0]" in first[0]
    a_values = [float(v) for v in first[1].split(":")[-1].split()]
    b_values = [float(v) for v in first[2].split(":")[-1].split()]
    assert a_values[1] == -b_values[1] and a_values[0] == b_values[0] and a_values[2] == b_values[2]
    assert "component 1: relative difference 2 " in first[3]
    assert re.search(r"^\s+hkl\s+\d+ lines", out, re.MULTILINE)  # the consequences are summarised after it


def test_planted_half_pixel_shift_is_named_first(tmp_path, clean, capsys, monkeypatch):
    """An engine whose subpixel positions are off by half a pixel along fdet: pixel_pos diverges first."""
    original = detsim.rendering.engine.pixel_positions

    def shifted(geom, *args, **kwargs):
        return original(geom, *args, **kwargs) + 0.5 * geom.pixel_m * geom.fdet

    monkeypatch.setattr(detsim.rendering.engine, "pixel_positions", shifted)
    planted = _log()
    monkeypatch.undo()
    code, out = _diff(tmp_path, clean, planted, capsys=capsys)
    assert code == 1
    head = out[out.index("FIRST DIFFERENCE"):].splitlines()[0]
    assert head.startswith("FIRST DIFFERENCE: pixel_pos at pixel (s=2, f=3), occurrence 1 [layer=0 subS=0 subF=0]")
    summary = out[out.index("differing lines"):]
    assert "pix0_vector" not in summary and "pixel_value" in summary


def test_prefix_noise_missing_extra_and_bad_lines_are_tolerated_and_reported(tmp_path, clean, capsys):
    lines = clean.replace("TRACE_PY:", "TRACE_C:").splitlines()
    noisy = ["nanoBragg-like banner", "roi: 0 5 0 4", "X: 64.6 -26.8 1.3"]
    noisy += [ln for ln in lines if " Fbeam " not in ln]  # a name the reference does not print
    noisy.insert(10, "TRACE_C: hkl 1.0 banana 3.0")  # a bad line (line 11)
    noisy.insert(12, "TRACE_C: 42 is not a name")  # another (line 13)
    noisy[20] = "WARNING: printed without a newline " + noisy[20]  # a trace line glued to a message
    extra = clean + "TRACE_PY: my_extra 1 2 3\n"
    code, out = _diff(tmp_path, "\n".join(noisy) + "\n", extra, capsys=capsys)
    assert code == 0, out
    assert "prefix TRACE_C" in out and "prefix TRACE_PY" in out
    assert re.search(r"bad line in A: \S+a\.log:11: non-numeric value 'banana' in hkl", out)
    assert re.search(r"bad line in A: \S+a\.log:13: bad name '42'", out)
    assert "only in B (name (lines without a partner)): Fbeam (1), my_extra (1)" in out
    assert "no difference beyond tolerance" in out


def test_out_of_step_logs_are_reported_as_a_label_difference(tmp_path, clean, capsys):
    lines = clean.splitlines()
    first_F = next(i for i, ln in enumerate(lines) if " F_cell " in ln)
    shortened = "\n".join(lines[:first_F] + lines[first_F + 1:]) + "\n"
    code, out = _diff(tmp_path, shortened, clean, capsys=capsys)
    assert code == 1
    assert "FIRST DIFFERENCE: F_cell" in out and "labels disagree" in out


def test_tolerances_decide(tmp_path, clean, capsys):
    nudged = clean.replace("TRACE_PY: pixel_value ", "TRACE_PY: pixel_value 1e-9 ")
    a = "TRACE_C: pixel 2 3\nTRACE_C: airpath layer=0 1.0\nTRACE_C: pixel_value 100.0\n"
    b = "TRACE_PY: pixel 2 3\nTRACE_PY: airpath layer=0 1.0000001\nTRACE_PY: pixel_value 100.0\n"
    assert _diff(tmp_path, a, b, capsys=capsys)[0] == 0
    code, out = _diff(tmp_path, a, b, "--rtol", "1e-9", capsys=capsys)
    assert code == 1 and "FIRST DIFFERENCE: airpath" in out and "relative difference 1e-07" in out
    assert _diff(tmp_path, a, b, "--rtol", "0", "--atol", "1e-6", capsys=capsys)[0] == 0
    code, out = _diff(tmp_path, clean, nudged, capsys=capsys)
    assert code == 1 and "different number of values: 1 in A, 2 in B" in out


def test_pixels_are_matched_by_index(tmp_path, capsys):
    both = _log(pixels=[(2, 3), (0, 1)])
    reversed_order = _log(pixels=[(0, 1), (2, 3)])
    assert _diff(tmp_path, both, reversed_order, "--rtol", "0", "--atol", "0", capsys=capsys)[0] == 0
    one = _log(pixels=[(0, 1)])
    code, out = _diff(tmp_path, both, one, capsys=capsys)
    assert code == 0 and "pixels only in A: (s=2, f=3)" in out
    headerless = "\n".join(ln for ln in one.splitlines() if " pixel " not in ln) + "\n"
    assert _diff(tmp_path, headerless, one, "--rtol", "0", "--atol", "0", capsys=capsys)[0] == 0


def test_unreadable_or_empty_input_exits_2(tmp_path, clean, capsys):
    (tmp_path / "b.log").write_text(clean)
    assert track_main(["trace-diff", str(tmp_path / "missing.log"), str(tmp_path / "b.log")]) == 2
    assert "cannot read" in capsys.readouterr().err
    code, out = _diff(tmp_path, "no trace here\nX: 1 2 3\n", clean, capsys=capsys)
    assert code == 2 and "nothing in common" in out
