"""Tests for detsim.flags: the flag table and the usage text generated from it."""

from detsim.flags import HANDLERS, HELP_FLAGS, usage


def test_every_flag_has_help_text_with_a_description():
    for handler in HANDLERS:
        values, sep, text = handler.doc.rpartition("|")
        assert sep and text.strip(), f"{handler.pattern} has no help text"


def test_usage_lists_every_pattern_and_alias_once_and_the_help_flags():
    text = usage()
    listed = [line.split()[0].rstrip(",") for line in text.splitlines() if line.startswith("  -")]
    for handler in HANDLERS:
        assert handler.pattern in listed, handler.pattern
    for flag in HELP_FLAGS:
        assert flag in text
    assert text.index("nanoBragg's flags") < text.index("-Na") < text.index("detsim's own flags") < text.index("-dtype")
