"""Parity with nanoBragg.c: one ``track_parity_<case>`` per golden case, recording 1 - r.

r is the Pearson correlation between detsim's float64 image and nanoBragg's image for the case
(``tests/golden/``). 1 - r grows as parity worsens, which is the direction asv treats as a
regression; it is rounded to 1e-9 so that float noise (~1e-15) is never a step. The acceptance line
is r >= 0.9995 (``detsim/track/base/metrics.py``), i.e. 1 - r <= 5e-4. Where r is undefined (a
constant image that differs from nanoBragg's) the case's track fails with "Pearson r undefined".

All cases are rendered once per commit by the shared ``setup_cache`` (``common.golden_renders``),
which the determinism tracks reuse.
"""

from __future__ import annotations

from .common import PARITY_DECIMALS, case_result, define_case_tracks, golden_renders

setup_cache = golden_renders

UNIT = "1 - r"
VERSION = "1"  # bump only when the meaning of the number changes (golden data, rounding, dtype)


def _one_minus_r(renders, case_id: str) -> float:
    one_minus_r = case_result(renders, case_id)["one_minus_r"]
    if one_minus_r is None:  # a constant image: no number to track, so the case's track fails
        raise RuntimeError(f"{case_id}: Pearson r undefined")
    return round(one_minus_r, PARITY_DECIMALS)


define_case_tracks(globals(), "parity", _one_minus_r, unit=UNIT, version=VERSION, label="parity 1 - r")
