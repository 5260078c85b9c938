"""Determinism: one ``track_hash_changed_<case>`` per golden case, 0 while its image is bit-for-bit
the stored baseline and 1 once it differs.

The baseline (``results/baselines/golden_hashes.json``, refreshed deliberately with
``detsim-track baselines --refresh``) holds for one torch version, thread count and CPU class; on a
machine where it does not hold the tracks skip (asv shows n/a) rather than report every image as
changed. The full sha256 of every case is written per commit to ``results/hashes/<commit>.json``
whatever the baseline, so "which commit changed this image" stays answerable.
"""

from __future__ import annotations

from .common import MANIFEST, Skip, case_attr, case_result, golden_renders, load_baseline

setup_cache = golden_renders

UNIT = "changed (0/1)"
VERSION = "1"  # bump only when the hash definition changes


def _baseline_hash(renders, case_id: str) -> str:
    baseline = load_baseline()
    holds, here = baseline.get("holds_for", {}), renders["holds_for"]
    differing = sorted(k for k in here if holds.get(k) != here[k])
    if differing:
        raise Skip(
            "the golden baseline holds for " + ", ".join(f"{k}={holds.get(k)}" for k in differing)
            + " but this run has " + ", ".join(f"{k}={here[k]}" for k in differing)
        )
    expected = baseline.get("cases", {}).get(case_id)
    if expected is None:
        raise RuntimeError(f"{case_id}: no baseline hash; run `detsim-track baselines --refresh`")
    return expected


def _hash_track(case_id: str):
    def track(renders):
        result = case_result(renders, case_id)
        return int(result["sha256"] != _baseline_hash(renders, case_id))

    track.__name__ = f"track_hash_changed_{case_attr(case_id)}"
    track.unit = UNIT
    track.version = VERSION
    track.pretty_name = f"image hash changed: {case_id}"
    return track


for _case in MANIFEST:
    _track = _hash_track(_case["id"])
    globals()[_track.__name__] = _track

_missing = sorted(c["id"] for c in MANIFEST if f"track_hash_changed_{case_attr(c['id'])}" not in globals())
if _missing or len({case_attr(c["id"]) for c in MANIFEST}) != len(MANIFEST):
    raise ImportError(f"bench_determinism: golden cases without a hash track: {_missing or 'name clash'}")
