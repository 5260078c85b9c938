"""Tests for detsim.commandline.argv_reader: reading an argument list as nanoBragg does (its substring-matching
traps, how many values a flag reads), with strict errors naming the flag."""

from __future__ import annotations

import re

import pytest

from detsim.commandline.arguments import ArgumentError
from detsim.commandline.argv_reader import parse_argv
from detsim.commandline.flag_table import HANDLERS

BASE = ["-cell", "70", "70", "70", "90", "90", "90", "-default_F", "100"]


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


@pytest.mark.parametrize("token", ["-phis", "-detsize_x", "-hdiv", "-dispstep", "-bogus"])
def test_tokens_nanobragg_silently_ignores_are_errors(token):
    with pytest.raises(ArgumentError, match=token):
        parse_argv([token, "1"])


def test_exact_length_flags_do_not_fire_on_longer_tokens():
    args = parse_argv(["-phi", "5", "-phistep", "0.5", "-phisteps", "4"])
    assert (args.phi0_deg, args.phistep_deg, args.phisteps) == (5.0, 0.5, 4)
    args = parse_argv(["-detector_thick", "100", "-detector_thicksteps", "3"])
    assert (args.thick_um, args.thicksteps) == (100.0, 3)


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
