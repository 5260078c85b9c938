"""asv.conf.json's regression settings for the determinism tracks: asv's Regressions tab and detsim-track
agree in direction (asv ignores the arbitrary fingerprint numbers, still flags a 0 -> 1 hash change)."""

from __future__ import annotations

import re
from pathlib import Path

from detsim.track.history.jsonc import load_config

ROOT = Path(__file__).resolve().parents[1]
CASE = "bench_determinism.track_{}_a01_cubic_mosflm_center"


def _asv_ignores(conf: dict, name: str) -> bool:
    """asv's rule: a null regressions_first_commits entry whose regex matches switches detection off."""
    return any(commit is None and re.match(regex, name)
               for regex, commit in (conf.get("regressions_first_commits") or {}).items())


def test_fingerprints_are_left_to_detsim_track_and_hash_changes_to_asv_too():
    conf = load_config(ROOT)
    for name in (CASE.format("fingerprint"), "bench_determinism.track_machine_class",
                 "bench_determinism.CompiledHashes.track_fingerprint"):
        assert _asv_ignores(conf, name), name
    for name in (CASE.format("hash_changed"), "bench_determinism.CompiledHashes.track_cases_changed",
                 "bench_parity.track_parity_a01_cubic_mosflm_center"):
        assert not _asv_ignores(conf, name), name
    thresholds = conf["regressions_thresholds"]
    assert max(float(v) for k, v in thresholds.items() if re.match(k, CASE.format("hash_changed"))) == 0.0
