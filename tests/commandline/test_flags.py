"""Tests for detsim.commandline.flags: the flag table, the usage text generated from it, and reading an argument
list with it (nanoBragg's substring-matching traps, aliases, and strict errors)."""

from __future__ import annotations

import re

import pytest

from detsim.commandline.flags import HANDLERS, ArgumentError, parse_argv
from detsim.commandline.usage import HELP_FLAGS, OVERVIEW, usage, usage_all
from detsim.model.config import Convention, CrystalShape, Pivot

BASE = ["-cell", "70", "70", "70", "90", "90", "90", "-default_F", "100"]


def test_cell_reads_six_values():
    assert parse_argv(BASE).cell == [70.0, 70.0, 70.0, 90.0, 90.0, 90.0]


@pytest.mark.parametrize("argv,read", [
    (["-cell", "100"], [100.0]),
    (["-cell", "50", "60", "-N", "3"], [50.0, 60.0]),
    (["-cell", "100", "100", "100", "90", "90"], [100.0, 100.0, 100.0, 90.0, 90.0]),
    (["-cell", "100", "100", "100", "90", "90", "90", "-cell", "80"], [80.0, 100.0, 100.0, 90.0, 90.0, 90.0]),
])
def test_cell_reads_the_values_given_up_to_six_and_keeps_earlier_ones_for_the_rest(argv, read):
    # nanoBragg.c L531-551: each value is read only if present; one left out keeps what it held
    assert parse_argv(argv).cell == read


@pytest.mark.parametrize("argv,message", [
    (["-cell"], "-cell expects at least 1 value (a [b c al be ga]), got 0"),
    (["-cell", "-N", "3"], "-cell expects at least 1 value (a [b c al be ga]), got 0 before -N"),
    (["-cell", "100", "100", "100", "-90", "90", "90"],  # nanoBragg stops at any '-' and ignores the rest
     "-cell reads no value that starts with '-': nanoBragg stops reading at -90 and ignores it"),
    (["-misset", "10", "20"], "-misset expects 3 values (x y z | random), got 2"),
    (["-misset", "10", "20", "-N", "3"], "-misset expects 3 values (x y z | random), got 2 before -N"),
    (["-fdet_vector", "0", "0"], "-fdet_vector expects 3 values (x y z), got 2"),
    (["-roi", "0", "10", "0"], "-roi expects 4 values (xmin xmax ymin ymax), got 3"),
    (["-trace_pixel", "3", "-N", "2"], "-trace_pixel expects 2 values (s f), got 1 before -N"),
    (["-printout_pixel", "3"], "-printout_pixel expects 2 values (f s), got 1"),
    (["-N"], "-N expects 1 value (N), got 0"),
])
def test_a_flag_given_fewer_values_than_it_takes_is_refused_naming_both_counts(argv, message):
    with pytest.raises(ArgumentError, match=re.escape(message)):
        parse_argv(argv)


def test_every_flag_of_the_table_refuses_fewer_values_than_its_arity_allows():
    for handler in HANDLERS:
        if handler.takes == 0 or handler.pattern == "-curved_det":
            continue
        token, least = handler.pattern, handler.arity.fewest
        for given in range(least):
            with pytest.raises(ArgumentError, match=f"expects (at least )?{least} value.*got {given}"):
                parse_argv([token] + ["1"] * given)


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


@pytest.mark.parametrize("token", ["-phis", "-detsize_x", "-hdiv", "-dispstep", "-bogus"])
def test_tokens_nanobragg_silently_ignores_are_errors(token):
    with pytest.raises(ArgumentError, match=token):
        parse_argv([token, "1"])


def test_exact_length_flags_do_not_fire_on_longer_tokens():
    args = parse_argv(["-phi", "5", "-phistep", "0.5", "-phisteps", "4"])
    assert (args.phi0_deg, args.phistep_deg, args.phisteps) == (5.0, 0.5, 4)
    args = parse_argv(["-detector_thick", "100", "-detector_thicksteps", "3"])
    assert (args.thick_um, args.thicksteps) == (100.0, 3)


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


def test_curved_det_needs_a_token_after_it_which_it_ignores():
    with pytest.raises(ArgumentError, match="-curved_det must be followed by another token"):
        parse_argv(["-curved_det"])  # nanoBragg ignores it as the last token
    assert parse_argv(["-curved_det", "-N", "2"]).curved is True
    args = parse_argv(["-curved_det", "1", "-N", "2"])
    assert args.curved is True and args.Na == 2


def test_negative_values_are_values_not_flags():
    args = parse_argv(["-misset", "12", "-8", "25", "-detector_rotx", "-4"])
    assert args.misset_deg == (12.0, -8.0, 25.0)
    assert args.rot_deg[0] == -4.0


@pytest.mark.parametrize("argv,message", [
    (["-distance"], "-distance expects 1 value (mm), got 0"),
    (["-distance", "abc"], "-distance expects a number, got 'abc'"),
    (["-distance", "nan"], "-distance expects a finite number"),
    (["-distance", "-cell", "1"], "-distance expects 1 value"),
    (BASE + ["-N", "-x"], "-N expects 1 value"),
    (["-N", "2.5"], "-N expects an integer"),
    (["-pivot", "middle"], "-pivot expects 'sample' or 'beam'"),
    (["-roi", "1", "2", "3"], "-roi expects 4 value"),
    (BASE + ["stray"], "stray"),
    (["-dtype", "float16"], "-dtype expects one of float64, float32"),
    (["-misset", "1", "2"], "-misset expects 3 values"),
])
def test_errors_name_the_flag(argv, message):
    with pytest.raises(ArgumentError, match=re.escape(message)):
        parse_argv(argv)


@pytest.mark.parametrize("argv,message", [
    (["-distance", "1_00"], "-distance expects a number, got '1_00' (nanoBragg would read 1.0)"),
    (["-distance", "１００"], "-distance expects a number, got '１００' (nanoBragg would read 0.0)"),
    (["-distance", "١٠٠"], "-distance expects a number, got '١٠٠' (nanoBragg would read 0.0)"),
    (["-distance", "100abc"], "-distance expects a number, got '100abc' (nanoBragg would read 100.0)"),
    (["-N", "1_0"], "-N expects an integer, got '1_0' (nanoBragg would read 1)"),
    (["-detpixels", "3_2"], "-detpixels expects an integer, got '3_2' (nanoBragg would read 3)"),
    (["-detpixels", "０"], "-detpixels expects an integer, got '０' (nanoBragg would read 0)"),
    (["-N", "4294967301"], "-N expects an integer that fits a C int (-2147483648..2147483647), got '4294967301' "
                           "(nanoBragg would read 5)"),
])
def test_a_value_python_reads_but_c_reads_differently_is_refused(argv, message):
    with pytest.raises(ArgumentError, match=f"^{re.escape(message)}$"):
        parse_argv(argv)


@pytest.mark.parametrize("text,value", [
    ("1e2", 100.0), (" 100", 100.0), ("100 ", 100.0), ("+5", 5.0), (".5", 0.5), ("5.", 5.0), ("1E-3", 1e-3),
    ("0x1p3", 8.0),  # a hex float, as glibc's atof reads it
])
def test_a_number_c_reads_whole_is_read_as_c_reads_it(text, value):
    assert parse_argv(["-distance", text]).distance_mm == value


def test_a_token_is_a_negative_number_value_by_cs_grammar():
    assert parse_argv(["-detector_rotx", "-0x1p1"]).rot_deg[0] == -2.0
    with pytest.raises(ArgumentError, match="-detector_rotx expects 1 value"):
        parse_argv(["-detector_rotx", "-1_0"])  # not a number: a flag, so the value is missing


# -- the flag table and its usage text

def test_every_flag_has_help_text_with_a_description():
    for handler in HANDLERS:
        values, sep, text = handler.doc.rpartition("|")
        assert sep and text.strip(), f"{handler.pattern} has no help text"


def test_usage_all_lists_every_pattern_and_alias_once_and_the_help_flags():
    text = usage_all()
    listed = [line.split()[0].rstrip(",") for line in text.splitlines() if line.startswith("  -")]
    for handler in HANDLERS:
        assert handler.pattern in listed, handler.pattern
    for flag in HELP_FLAGS:
        assert flag in text
    assert text.index("nanoBragg's flags") < text.index("-Na") < text.index("detsim's own flags") < text.index("-dtype")


def test_the_one_screen_usage_shows_each_grouped_flag_with_its_values_once():
    text = usage()
    patterns = [p for _, group in OVERVIEW for p in group]
    assert len(patterns) == len(set(patterns))
    known = {h.pattern: h for h in HANDLERS}
    for pattern in patterns:
        values = known[pattern].doc.rpartition("|")[0]
        assert text.count(f" {pattern} {values}".rstrip() + " ") + text.count(f" {pattern} {values}".rstrip() + "\n") >= 1, pattern


def test_a_flag_with_a_short_list_says_how_nanobragg_fills_it_in_every_help():
    cell = next(h for h in HANDLERS if h.pattern == "-cell")
    assert cell.arity.fill in usage_all()
    assert "-cell 100 is a cubic 100 Å cell" in usage()
