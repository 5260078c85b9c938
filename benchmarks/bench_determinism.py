"""Determinism: one ``track_hash_changed_<case>`` per golden case, 0 while its image is bit-for-bit
the stored baseline and 1 once it differs.

``CompiledHashes.track_cases_changed`` counts the golden cases whose compiled-path image differs from
its own baseline (compiled and eager images may differ in the last bits, so they are stored apart).

The baseline (``results/baselines/golden_hashes.json``, refreshed deliberately with
``detsim-track baselines --refresh``) holds for one torch version, thread count and CPU class; on a
machine where it does not hold the tracks skip (asv shows n/a) rather than report every image as
changed. The full sha256 of every case is written per commit to ``results/hashes/<commit>.json``
whatever the baseline, so "which commit changed this image" stays answerable.
"""

from __future__ import annotations

from .common import (
    Skip, case_result, compiled_golden_hashes, define_case_tracks, golden_renders, holds_differences, load_baseline,
)

setup_cache = golden_renders

UNIT = "changed (0/1)"
VERSION = "1"  # bump only when the hash definition changes


def _check_holds(baseline: dict, here: dict) -> None:
    differing = sorted(holds_differences(baseline.get("holds_for", {}), here).items())
    if differing:
        raise Skip(
            "the golden baseline holds for " + ", ".join(f"{k}={stored}" for k, (stored, _) in differing)
            + " but this run has " + ", ".join(f"{k}={ours}" for k, (_, ours) in differing)
        )


def _baseline_hash(renders, case_id: str) -> str:
    baseline = load_baseline()
    _check_holds(baseline, renders["holds_for"])
    expected = baseline.get("cases", {}).get(case_id)
    if expected is None:
        raise RuntimeError(f"{case_id}: no baseline hash; run `detsim-track baselines --refresh`")
    return expected


def _hash_changed(renders, case_id: str) -> int:
    return int(case_result(renders, case_id)["sha256"] != _baseline_hash(renders, case_id))


define_case_tracks(globals(), "hash_changed", _hash_changed, unit=UNIT, version=VERSION, label="image hash changed")


class CompiledHashes:
    """Golden images of the compiled path against their own stored hashes (one track for all cases)."""

    unit = "cases changed"
    version = "1"
    timeout = 1200  # the first compile, then 53 renders

    def setup_cache(self):
        return compiled_golden_hashes()

    def track_cases_changed(self, hashes):
        baseline = load_baseline()
        _check_holds(baseline, hashes["holds_for"])
        expected = baseline.get("cases_compiled")
        if not expected:
            raise Skip("the baseline has no compiled-path hashes; run `detsim-track baselines --refresh`")
        return sum(hashes["cases"].get(case) != sha for case, sha in expected.items())
