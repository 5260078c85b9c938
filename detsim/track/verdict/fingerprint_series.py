"""Determinism without a stored baseline: image fingerprints compared commit to commit on one machine.

A machine class with no stored golden baseline (:mod:`detsim.track.base.baseline_file`) still records,
per golden case and commit, the image's **fingerprint** (``bench_determinism.track_fingerprint_<case>``:
the first hex digits of its sha256 as a number, :func:`~detsim.track.base.hashing.fingerprint`) and the
**machine class** of the renders (``track_machine_class``). :func:`class_cut` says from which point of a
series on the commits share the latest commit's class (fingerprints of different classes are not
comparable: a fact, not a finding); :func:`fingerprint_finding` judges the points from there: the first
of them is the implicit baseline (the machine's first recorded commit of its class), and an image that
differs from it at the latest commit is a determinism finding at the commit where it changed, with the
old and new fingerprints.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

from detsim.track.base.hashing import fingerprint_hex
from detsim.track.history.series import Point, Series
from detsim.track.verdict.finding import Finding

COMPARED = "commit to commit on this machine (no stored baseline of its class)"


def class_cut(points: Sequence[Point], classes: Mapping[str, float]) -> int:
    """Index of the first point after the last one whose machine class is not the latest point's (a
    point without a recorded class counts as another class)."""
    latest = classes.get(points[-1].commit) if points else None
    if latest is None:  # results without the class track: nothing to cut by
        return 0
    cut = 0
    for i, point in enumerate(points):
        if classes.get(point.commit) != latest:
            cut = i + 1
    return cut


def fingerprint_finding(series: Series, points: list[Point]):
    """The finding at the latest of ``points`` (measured, oldest first, one machine class), or None."""
    if len(points) < 2 or points[-1].value == points[0].value:
        return None
    reference = points[0].value
    first = len(points) - 1
    while first > 1 and points[first - 1].value != reference:
        first -= 1
    changes = [p.commit for prev, p in zip(points[first:], points[first + 1:]) if p.value != prev.value]
    detail = {"old_sha256": fingerprint_hex(points[first - 1].value), "new_sha256": fingerprint_hex(points[-1].value),
              "changed_again_at": changes, "compared": COMPARED, "baseline_commit": points[0].commit}
    return Finding(replace(series, family="determinism"), points[first - 1].commit, points[first].commit, 0.0, 1.0,
                   detail)
