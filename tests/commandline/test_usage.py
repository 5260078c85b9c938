"""Tests for detsim.commandline.usage: the help drawn from the flag table (one screen, and every flag)."""

from __future__ import annotations

import re

import pytest

from detsim.commandline.argv_reader import parse_argv
from detsim.commandline.flag_sources import LINES, NANOBRAGG_COMMIT
from detsim.commandline.flag_table import HANDLERS
from detsim.commandline.usage import COMPUTED_DEFAULTS, HELP_FLAGS, OVERVIEW, default_text, flag_help, usage, usage_all

NANOBRAGGS = HANDLERS[:[h.pattern for h in HANDLERS].index("-dtype")]

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


def test_each_nanobragg_flag_cites_the_lines_of_its_own_handler():
    assert set(LINES) == {h.pattern for h in NANOBRAGGS}
    spans = {}
    for pattern, cited in LINES.items():
        for first, last in re.findall(r"L(\d+)-(\d+)", cited):
            assert int(first) < int(last), pattern
            spans.setdefault((first, last), []).append(pattern)
        assert f"read at nanoBragg.c {cited}" in flag_help([pattern]) and NANOBRAGG_COMMIT in flag_help([pattern])
    # one handler per span, save those nanoBragg reads in one test (-MW and -molec)
    assert {tuple(p) for p in spans.values() if len(p) > 1} == {("-MW", "-molec")}


@pytest.mark.parametrize("flag,default", [
    ("-seed", "the clock (the seconds since 1970 at the start, as nanoBragg's), so two runs' noise images differ "
              "unless -seed is given"),
    ("-distance", "100"), ("-lambda", "1"), ("-mosaic_seed", "12345678"), ("-floatfile", "floatimage.bin"),
    ("-round_div", "on"), ("-square_div", "off"), ("-mosflm", "on"), ("-xds", "off"), ("-dtype", "float64"),
    ("-mode", "eager"), ("-nanobragg_threads", "1"), ("-adc", "40"), ("-N", "1"), ("-oversample", "0: automatic"),
])
def test_a_flags_help_shows_its_default(flag, default):
    assert f"\n  default: {default}" in flag_help([flag])


def test_every_flag_has_a_default_and_a_plain_one_is_what_an_empty_command_line_reads():
    empty = parse_argv([])
    plain = {"-distance": empty.distance_mm, "-lambda": empty.lambda_A, "-mosaic_seed": empty.mosaic_seed,
             "-adc": empty.adc, "-pixel": empty.pixel_mm, "-exposure": empty.exposure_s, "-Na": empty.Na}
    for flag, value in plain.items():
        assert float(default_text(next(h for h in HANDLERS if h.pattern == flag))) == value, flag
    for h in HANDLERS:
        assert default_text(h), h.pattern
    assert set(COMPUTED_DEFAULTS) <= {h.pattern for h in HANDLERS}
