"""Tests for detsim.commandline.flag_table: what each flag sets, its side effects on others and its aliases, in
nanoBragg's order, and the help text every entry carries."""

from __future__ import annotations

import pytest

from detsim.commandline.argv_reader import parse_argv
from detsim.commandline.flag_table import HANDLERS
from detsim.model.config import Convention, CrystalShape, Pivot

BASE = ["-cell", "70", "70", "70", "90", "90", "90", "-default_F", "100"]


def test_cell_reads_six_values():
    assert parse_argv(BASE).cell == [70.0, 70.0, 70.0, 90.0, 90.0, 90.0]


def test_only_cell_gives_a_short_list_a_meaning_and_its_arity_cites_nanobragg():
    short = [h.pattern for h in HANDLERS if h.arity.fewest < h.arity.most]
    assert short == ["-cell"]
    cell = next(h for h in HANDLERS if h.pattern == "-cell").arity
    assert (cell.fewest, cell.most) == (1, 6)
    assert "L1795" in cell.source and "90" in cell.fill


def test_misset_seed_also_sets_misset_angles_and_cancels_earlier_random():
    # spec §2.1 [QUIRK]: '-misset_seed' matches '-misset' too.
    args = parse_argv(["-misset", "random", "-misset_seed", "7", "-cell", "100", "100", "100", "90", "90", "90"])
    assert args.misset_seed == 7
    assert args.misset_random is False
    assert args.misset_deg == (7.0, 0.0, 100.0)  # atof("-cell") == 0, as in C


def test_misset_random_after_seed_stays_random():
    args = parse_argv(["-misset_seed", "7", "-N", "1", "-misset", "random"])
    assert args.misset_random is True


def test_mosaic_seed_does_not_touch_the_noise_seed():
    # strstr("-mosaic_seed", "-seed") fails ('_seed'), unlike '-misset_seed' which contains '-misset'.
    args = parse_argv(["-mosaic_seed", "42"])
    assert args.mosaic_seed == 42
    assert args.noise_seed is None


def test_twotheta_axis_sets_custom_twotheta_and_sample_pivot():
    args = parse_argv(["-twotheta_axis", "3", "0", "-1"])
    assert args.convention is Convention.CUSTOM
    assert args.vectors["twotheta_axis"] == (3.0, 0.0, -1.0)
    assert args.twotheta_deg == 3.0
    assert args.pivot is Pivot.SAMPLE


def test_pivot_side_effects_follow_argv_order():
    assert parse_argv(["-distance", "100", "-ORGX", "50"]).pivot is Pivot.SAMPLE
    assert parse_argv(["-ORGX", "50", "-distance", "100"]).pivot is Pivot.BEAM
    assert parse_argv(["-twotheta", "10", "-pivot", "beam"]).pivot is Pivot.BEAM


def test_convention_flag_after_vector_switches_back_from_custom():
    assert parse_argv(["-fdet_vector", "0", "0", "1", "-xds"]).convention is Convention.XDS
    assert parse_argv(["-xds", "-fdet_vector", "0", "0", "1"]).convention is Convention.CUSTOM


@pytest.mark.parametrize("flag,value,field,expected", [
    ("-wavelength", "1.5", "lambda_A", 1.5),
    ("-energy", "12398.42", "lambda_A", 1.0),
    ("-detpixels_x", "96", "fpixels", 96),
    ("-detpixels_y", "176", "spixels", 176),
    ("-mosaic_domains", "6", "mosaic_domains", 6),
    ("-mosaic_spread", "0.3", "mosaic_spread_deg", 0.3),
    ("-thicksteps", "3", "thicksteps", 3),
    ("-xtal_height", "0.05", "xtal_size_mm", [0.0, 0.0, 0.05]),
    ("-floatimage", "x.bin", "floatfile", "x.bin"),
])
def test_aliases(flag, value, field, expected):
    assert getattr(parse_argv([flag, value]), field) == expected


def test_detector_abs_inf_before_thickness_keeps_zero_mu():
    # spec §2.3 [QUIRK]: the thickness comes back, the attenuation stays 0 (all-zero image).
    args = parse_argv(["-detector_abs", "inf", "-detector_thick", "100"])
    assert (args.thick_um, args.mu_per_m) == (100.0, 0.0)
    args = parse_argv(["-detector_thick", "100", "-detector_abs", "inf"])
    assert (args.thick_um, args.mu_per_m) == (0.0, 0.0)


def test_oversample_flags_do_not_read_a_value():
    args = parse_argv(["-oversample", "3", "-oversample_omega", "-N", "5"])
    assert args.oversample == 3 and args.oversample_omega and args.Na == 5


def test_polar_and_nopolar_last_wins():
    assert parse_argv(["-nopolar", "-polar", "0.9"]).nopolar is False
    assert parse_argv(["-polar", "0.9", "-nopolar"]).nopolar is True


def test_shapes_and_interpolation_switches():
    assert parse_argv(["-tophat_spots"]).shape is CrystalShape.TOPHAT
    assert parse_argv(["-binary_spots"]).shape is CrystalShape.TOPHAT
    assert parse_argv(["-nointerpolate"]).interpolate is False
    assert parse_argv(["-interpolate"]).interpolate is True


def test_every_flag_has_help_text_with_a_description():
    for handler in HANDLERS:
        values, sep, text = handler.doc.rpartition("|")
        assert sep and text.strip(), f"{handler.pattern} has no help text"
