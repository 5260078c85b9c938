"""Tests for detsim.commandline.usage: the help drawn from the flag table (one screen, and every flag)."""

from __future__ import annotations

from detsim.commandline.flag_table import HANDLERS
from detsim.commandline.usage import HELP_FLAGS, OVERVIEW, usage, usage_all

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
