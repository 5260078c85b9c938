"""Determinism: per golden case, the image's fingerprint and whether it equals this machine class's
stored baseline.

What each track records and how ``detsim-track`` and asv's Regressions tab read it is docs/tracking.md's
("Benchmark grid", ``bench_determinism``); the baseline files are ``detsim/track/base/golden.py``'s.
A fingerprint is the first 13 hex digits of the float64 image's sha256 as a number (exact in float64); its
graph jumps arbitrarily when the image changes, so asv's Regressions tab ignores it
(``regressions_first_commits`` null in asv.conf.json). On a class with no stored baseline
``track_hash_changed_<case>`` skips (asv shows n/a), naming how the stored classes differ. Nothing here
writes a file.
"""

from __future__ import annotations

import json

from .common import (
    REPO_ROOT, Skip, case_result, compiled_golden_runs, define_case_tracks, golden, golden_renders, hashing,
    provenance,
)

setup_cache = golden_renders

UNIT = "changed (0/1)"
VERSION = "1"  # bump only when the hash definition changes
FINGERPRINT_UNIT = "sha256[:13] as a number"


def _check_holds(baseline: dict, here: dict) -> None:
    stored = baseline.get("holds_for", {})
    differing = golden.differing_fields(provenance.MachineClass(**here), stored)
    if differing:
        raise Skip(
            "the golden baseline holds for " + ", ".join(f"{k}={stored.get(k)}" for k in differing)
            + " but this run has " + ", ".join(f"{k}={here[k]}" for k in differing)
        )


def _class_baseline(here: dict) -> dict:
    """This machine class's stored baseline; a skip naming how the stored classes differ where none is."""
    found = golden.for_class(REPO_ROOT, provenance.MachineClass(**here))
    if found is not None:
        return found[1]
    others = []
    for baseline in golden.stored(REPO_ROOT).values():
        try:
            _check_holds(baseline, here)
        except Skip as exc:
            others.append(str(exc))
    raise Skip(f"no golden baseline for this machine class ({provenance.class_slug(here)}): its images are "
               "compared commit to commit (track_fingerprint_*)" + ("; " + "; ".join(others) if others else ""))


def _baseline_hash(renders, case_id: str) -> str:
    baseline = _class_baseline(renders["holds_for"])
    expected = baseline.get("cases", {}).get(case_id)
    if expected is None:
        raise RuntimeError(f"{case_id}: no baseline hash; run `detsim-track baselines --refresh`")
    return expected


def _hash_changed(renders, case_id: str) -> int:
    return int(case_result(renders, case_id)["sha256"] != _baseline_hash(renders, case_id))


def _fingerprint(renders, case_id: str) -> float:
    return hashing.fingerprint(case_result(renders, case_id)["sha256"])


define_case_tracks(globals(), "hash_changed", _hash_changed, unit=UNIT, version=VERSION, label="image hash changed")
define_case_tracks(globals(), "fingerprint", _fingerprint, unit=FINGERPRINT_UNIT, version=VERSION,
                   label="image fingerprint")


def track_machine_class(renders):
    return provenance.class_fingerprint(renders["holds_for"])


track_machine_class.unit, track_machine_class.version = "machine class fingerprint", VERSION
track_machine_class.pretty_name = "machine class of the golden renders"


class CompiledHashes:
    """Golden images of the compiled path against their own stored hashes, and their fingerprint."""

    unit = "cases changed"
    version = "1"
    timeout = 1200  # the first compile, then 53 renders

    setup_cache = staticmethod(compiled_golden_runs)  # one setup_cache with CompiledReproducibility: asv runs it once

    def track_cases_changed(self, hashes):
        expected = _class_baseline(hashes["holds_for"]).get("cases_compiled")
        if not expected:
            raise Skip("the baseline has no compiled-path hashes; run `detsim-track baselines --refresh`")
        return sum(hashes["cases"].get(case) != sha for case, sha in expected.items())

    def track_fingerprint(self, hashes):
        text = json.dumps(hashes["cases"], sort_keys=True)
        return hashing.fingerprint(hashing.sha256_bytes(text.encode()))

    track_fingerprint.unit = FINGERPRINT_UNIT
