"""asv.conf.json as asv itself reads it: its Regressions tab and detsim-track agree in direction (asv ignores the
arbitrary fingerprint numbers, still flags a 0 -> 1 hash change, exactly), judged by asv 0.6.6's own
regression filter rather than by a copy of its rule."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("asv", reason="asv.conf.json is read by asv itself (pip install -e '.[dev]')")
from asv.config import Config  # noqa: E402
from asv.plugins.regressions import _GraphDataFilter  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CASE = "bench_determinism.track_{}_a01_cubic_mosflm_center"
GRAPH = SimpleNamespace(params={"branch": "main"})  # the page follows main (asv.conf.json's branches)


def _asv_filter() -> _GraphDataFilter:
    return _GraphDataFilter(Config.load(str(ROOT / "asv.conf.json")), repo=None, revisions={"a" * 40: 0})


def _detected(name: str) -> bool:
    """Whether asv's page runs its step detection on ``name`` at all (a null first commit switches it off)."""
    return _asv_filter()._get_start_revision(GRAPH, {"name": name}, name) is not None


def test_fingerprints_are_left_to_detsim_track_and_hash_changes_to_asv_too():
    for name in (CASE.format("fingerprint"), "bench_determinism.track_machine_class",
                 "bench_determinism.CompiledHashes.track_fingerprint"):
        assert not _detected(name), name
    for name in (CASE.format("hash_changed"), "bench_determinism.CompiledHashes.track_cases_changed",
                 "bench_parity.track_parity_a01_cubic_mosflm_center"):
        assert _detected(name), name


def test_exact_tracks_flag_any_rise_and_timings_a_step_of_five_percent():
    thresholds = _asv_filter()
    for name, expected in ((CASE.format("hash_changed"), 0.0), ("bench_parity.track_parity_a01", 0.0),
                           ("bench_engine.PathThroughput.track_ns_per_pixel_step", 0.05),
                           ("bench_engine.LargeDetectorMemory.peakmem_simulate_4096(float64)", 0.25)):
        assert thresholds._get_threshold(GRAPH, {"name": name}, name) == expected, name
