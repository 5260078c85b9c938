"""A machine name from outside names one folder of results/asv, or is refused in one line."""

from __future__ import annotations

import pytest

from detsim.track.base.machines import validate_machine_name


@pytest.mark.parametrize("name", ["vm", "ci-cpu", "runner_7.example", "A1"])
def test_host_names_and_ci_names_pass_unchanged(name):
    assert validate_machine_name(name) == name


@pytest.mark.parametrize("name", ["../evil", "..", ".", "", "a/b", ".hidden", "-x", "x y", "tab\tname",
                                  "esc\x1b[31m", "a" * 65])
def test_names_that_would_leave_results_asv_or_garble_a_terminal_are_refused_in_one_line(name):
    with pytest.raises(ValueError) as raised:
        validate_machine_name(name)
    assert "\n" not in str(raised.value) and "\x1b" not in str(raised.value)
