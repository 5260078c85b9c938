"""Parity with nanoBragg.c: one ``track_parity_<case>`` per golden case, recording 1 - r.

r is the Pearson correlation between detsim's float64 image and nanoBragg's image for the case
(``tests/golden/``). 1 - r grows as parity worsens, which is the direction asv treats as a
regression; it is rounded to 1e-9 so that float noise (~1e-15) is never a step. The acceptance line
is r >= 0.9995, i.e. 1 - r <= 5e-4.

All cases are rendered once per commit by the shared ``setup_cache`` (``common.golden_renders``),
which the determinism tracks reuse.
"""

from __future__ import annotations

from .common import MANIFEST, PARITY_DECIMALS, case_attr, case_result, golden_renders

setup_cache = golden_renders

UNIT = "1 - r"
VERSION = "1"  # bump only when the meaning of the number changes (golden data, rounding, dtype)


def _parity_track(case_id: str):
    def track(renders):
        return round(case_result(renders, case_id)["one_minus_r"], PARITY_DECIMALS)

    track.__name__ = f"track_parity_{case_attr(case_id)}"
    track.unit = UNIT
    track.version = VERSION
    track.pretty_name = f"parity 1 - r: {case_id}"
    return track


for _case in MANIFEST:
    _track = _parity_track(_case["id"])
    globals()[_track.__name__] = _track

_missing = sorted(c["id"] for c in MANIFEST if f"track_parity_{case_attr(c['id'])}" not in globals())
if _missing or len({case_attr(c["id"]) for c in MANIFEST}) != len(MANIFEST):
    raise ImportError(f"bench_parity: golden cases without their own parity track: {_missing or 'name clash'}")
