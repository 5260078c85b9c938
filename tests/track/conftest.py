"""Fixtures shared by the suite's tests: timing re-measurements without measuring."""

from __future__ import annotations

import pytest

from detsim.track.confirm import apply
from detsim.track.confirm.decision import decide
from detsim.track.confirm.remeasure import ROUNDS, Remeasurement

JITTER = (1.0, 1.01, 0.99, 1.02, 0.98, 1.0)  # per-round spread of a fake re-measurement


def _fake_remeasurement(ratio: float, commit_a: str = "a" * 40, commit_b: str = "b" * 40) -> Remeasurement:
    """Paired rounds whose B is ``ratio`` times A, with a little spread (so the rank test has something to rank)."""
    a = tuple(1.0 * JITTER[i % len(JITTER)] for i in range(ROUNDS))
    b = tuple(x * ratio * JITTER[(i + 2) % len(JITTER)] for i, x in enumerate(a))
    return Remeasurement(commit_a, commit_b, a, b, "AB" * ROUNDS)


@pytest.fixture
def fake_remeasurement():
    """``fake_remeasurement(ratio)``: paired rounds whose B is ``ratio`` times A."""
    return _fake_remeasurement


@pytest.fixture
def remeasured_as(monkeypatch):
    """``remeasured_as({benchmark substring: ratio}, default=1.0)``: every re-measurement in the test is
    a fake whose ratio is looked up by the benchmark's name; returns the list of targets measured."""
    measured = []

    def install(ratios: dict[str, float] | None = None, default: float = 1.0):
        def measure_factory(root):
            def measure(target, commit_a, commit_b, threshold):
                measured.append((target, commit_a, commit_b))
                ratio = next((r for key, r in (ratios or {}).items() if key in target.label), default)
                return decide(_fake_remeasurement(ratio, commit_a, commit_b), threshold)
            return measure
        monkeypatch.setattr(apply, "default_measure", measure_factory)
        monkeypatch.setattr(apply, "machines_here", lambda: None)
        return measured

    return install
