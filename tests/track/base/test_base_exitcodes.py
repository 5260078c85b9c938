"""detsim.track.base.exitcodes: one meaning per code, and how several verdicts combine."""

from __future__ import annotations

import pytest

from detsim.track.base.exitcodes import ExitCode, worst


def test_codes_are_what_ci_scripts_read():
    assert [int(c) for c in (ExitCode.OK, ExitCode.REGRESSED, ExitCode.UNMEASURED, ExitCode.INTERRUPTED,
                             ExitCode.TERMINATED)] == [0, 1, 2, 130, 143]


@pytest.mark.parametrize(("codes", "expected"), [
    ((), ExitCode.OK),
    ((0, 0), ExitCode.OK),
    ((0, 1, 0), ExitCode.REGRESSED),
    ((1, 2, 0), ExitCode.UNMEASURED),  # could not judge beats "regressed"
    ((2, ExitCode.REGRESSED), ExitCode.UNMEASURED),
    ((0, 130, 2), ExitCode.INTERRUPTED),  # a stopped run is never reported as judged
    ((130, 143), ExitCode.TERMINATED),
])
def test_worst_ranks_unmeasured_over_regressed_over_ok(codes, expected):
    result = worst(*codes)
    assert result is expected and isinstance(result, ExitCode)
