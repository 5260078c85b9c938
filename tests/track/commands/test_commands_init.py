"""detsim.track.commands: counts refused at parse time, naming the reason."""

from __future__ import annotations

import argparse

import pytest

from detsim.track.commands import count, positive_int


@pytest.mark.parametrize("check, text, value", [(positive_int, "1", 1), (positive_int, "64", 64),
                                                (count, "0", 0), (count, "7", 7)])
def test_counts_in_range_are_whole_numbers(check, text, value):
    assert check(text) == value


@pytest.mark.parametrize("check, text, why", [
    (positive_int, "0", "must be 1 or more, got 0"), (positive_int, "-3", "must be 1 or more, got -3"),
    (count, "-1", "must be 0 or more, got -1"), (positive_int, "2.5", "'2.5' is not a whole number"),
    (count, "many", "'many' is not a whole number"),
])
def test_counts_out_of_range_are_refused_with_the_reason(check, text, why):
    with pytest.raises(argparse.ArgumentTypeError, match=f"^{why}$"):
        check(text)


def test_a_bad_count_is_a_parse_error_naming_the_option(capsys):
    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("--repeats", type=positive_int)
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["--repeats", "0"])
    assert stop.value.code == 2
    assert "argument --repeats: must be 1 or more, got 0" in capsys.readouterr().err
