"""Whether a series' latest value regressed, and since which commit: a :class:`Finding` or None.

Each family's rule is docs/tracking.md's ("How each family is judged"). Lower is better everywhere
(throughput is judged on its inverse). Where a noisy series steps is a piecewise-constant fit (:func:`segments`);
a timing or throughput step is only a suspect here (``detail["confirmation"]``), decided by re-measuring
(:mod:`detsim.track.judge.confirm`), another one is real when a rank test says so (:func:`mann_whitney_greater`).
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import replace
from typing import Mapping, Sequence

from detsim.track.base.hashing import fingerprint_hex
from detsim.track.base.metrics import ONE_MINUS_R_FLOOR, PARITY_MAX_ONE_MINUS_R
from detsim.track.base.golden import AXES
from detsim.track.judge.family import Family
from detsim.track.judge.finding import REMEASURED, Finding, Confirmation
from detsim.track.judge.series import Point, Series
from detsim.track.judge.benchmarks import param_values
from detsim.track.judge.thresholds import ALPHA

NEIGHBOURS = 3  # commits pooled on each side of a step for the rank test


def detect(series: Series, start: int, baseline_hashes: Mapping, hashes: Mapping[str, dict]) -> Finding | None:
    """The regression at the series' latest point, looking at points from ``start`` on (``baseline_hashes``:
    case -> stored sha256; ``hashes``: commit -> its per-commit hash record)."""
    points = [p for p in series.points[start:] if p.measured]
    if not points or not series.points[-1].measured:
        return None
    best = min(p.value for p in points)
    if series.family == Family.PARITY:
        return _above(series, points, parity_limit(best, series.threshold))
    if series.family == Family.RUNS_DIFFER:
        return _irreproducible(series, points)
    if series.family == Family.IMAGE_CHANGED:
        return _hash_changed(series, points, baseline_hashes, hashes)
    if series.family == Family.IMAGE_FINGERPRINT:  # no baseline of its class: commit to commit (the caller cuts by class)
        return fingerprint_finding(series, points)
    if series.family == Family.CASES_CHANGED:  # cases whose image differs from its stored hash: any rise counts
        return _above(series, points, best)
    if series.family == Family.COUNTED_COST:  # exact counts: a rise over the best by more than the threshold
        return _above(series, points, best * (1 + series.threshold), {
            "evidence": f"{series.unit} above the best by more than {series.threshold:.0%} (exact: no rank test)"})
    if series.family in (Family.MACHINE_CLASS, Family.MACHINE_REFERENCE):  # what the machine is, never a verdict
        return None
    return _noisy(series, points)


# judged on exact values by :func:`detect` (the others: a piecewise-constant fit)
EXACT_FAMILIES = (Family.PARITY, Family.RUNS_DIFFER, Family.IMAGE_CHANGED, Family.IMAGE_FINGERPRINT,
                  Family.CASES_CHANGED, Family.COUNTED_COST, Family.MACHINE_CLASS, Family.MACHINE_REFERENCE)


def checkpoints(series: Series, start: int) -> list[int]:
    """Indices of the points from ``start`` on at which to ask :func:`detect` for its answer, each taken as the
    latest: every point of an exactly judged series; for a noisy one (its rule fits levels, :func:`segments`),
    as a fit per point costs too much on a long history, the last point of each run of the whole history's
    levels that stay within the threshold of the run's first, and the latest point (a step the rule finds is
    dated by its fit, whichever point it is asked at)."""
    measured = [i for i in range(start, len(series.points)) if series.points[i].measured]
    if series.family in EXACT_FAMILIES or len(measured) < 2:
        return measured
    y = [series.points[i].value for i in measured]
    y = [1.0 / v if series.family == Family.THROUGHPUT and v > 0 else v for v in y]
    if not all(v > 0 and math.isfinite(v) for v in y):
        return measured
    ends, run_level = {measured[-1]}, None
    for left, right, level in segments(y, series.threshold):
        if run_level is not None and max(level, run_level) > min(level, run_level) * (1 + series.threshold):
            ends.add(measured[left - 1])  # the run before this level ends there
            run_level = level
        run_level = level if run_level is None else run_level
    return sorted(ends)


def parity_limit(best: float, rise: float) -> float:
    """The most 1 - r may be, against the ``best`` judged: the acceptance line, and no rise at all where ``rise``
    is 0 (detsim's own images are exact: any rise is a changed image), else no rise by more than ``rise`` (a
    fraction: a target's TARGET_PARITY factor less one) over the best taken no lower than ONE_MINUS_R_FLOOR. A
    series back within it is no longer regressed; its events (:mod:`.events`) tell the recovery."""
    return min(PARITY_MAX_ONE_MINUS_R, max(best, ONE_MINUS_R_FLOOR) * (1 + rise) if rise else best)


def _above(series: Series, points: list[Point], limit: float, detail: Mapping | None = None) -> Finding | None:
    """Exact values, lower is better: the latest above ``limit``, since the first of the run, ending at the
    latest, that sits above it (a parity never within the acceptance line: since the first point)."""
    latest = points[-1].value
    if latest <= limit:
        return None
    last = max((i for i, p in enumerate(points) if p.value <= limit), default=None)  # never the latest
    if last is None:
        return Finding(series, None, points[0].commit, None, latest, {"note": "never within the acceptance line here"})
    return Finding(series, points[last].commit, points[last + 1].commit, points[last].value, latest, detail or {})


def _nonzero_run(points: list[Point]) -> tuple[int, str | None]:
    """Index of the first point of the run of non-zero values that ends at the latest point, and the commit
    before it (None: the run starts at the first point)."""
    first = len(points) - 1
    while first > 0 and points[first - 1].value != 0:
        first -= 1
    return first, points[first - 1].commit if first > 0 else None


def _irreproducible(series: Series, points: list[Point]) -> Finding | None:
    """Runs that should agree bit for bit differ at the latest commit: since the first of the run of
    such commits that ends there (a commit before it reproduced, or none recorded did)."""
    if points[-1].value == 0:
        return None
    first, last_good = _nonzero_run(points)
    axis = param_values(series.params).get("axis", "?")
    detail = {"axis": axis, "runs": AXES[axis].runs if axis in AXES else axis}
    return Finding(series, last_good, points[first].commit, 0.0 if last_good else None, points[-1].value, detail)


def _hash_changed(series: Series, points: list[Point], baseline_hashes: Mapping,
                  hashes: Mapping[str, dict]) -> Finding | None:
    if points[-1].value == 0:
        return None
    first, last_good = _nonzero_run(points)

    def sha(commit):
        return ((hashes.get(commit) or {}).get("cases", {}).get(series.case) or {}).get("sha256")

    old = sha(last_good) if last_good else baseline_hashes.get(series.case)
    new = sha(points[-1].commit)
    changes = [p.commit for prev, p in zip(points[first:], points[first + 1:]) if sha(p.commit) != sha(prev.commit)]
    detail = {"old_sha256": old, "new_sha256": new, "changed_again_at": changes}
    if old and new and (old.startswith(new) or new.startswith(old)):  # fingerprints hold a sha256's start
        detail["note"] = "same image as the last good commit: the baseline changed between the runs; re-run it"
    return Finding(series, last_good, points[first].commit, 0.0, 1.0, detail)


def _step_into_tip(y: list[float], threshold: float) -> tuple[tuple, tuple, float] | None:
    """The segments ``(left, right_exclusive, level)`` either side of the step into the run at the tip
    that sits above the best level by more than ``threshold``, and the tip's level."""
    segs = segments(y, threshold)
    best, latest = min(level for _, _, level in segs), segs[-1][2]
    if latest <= best * (1 + threshold):
        return None
    first = len(segs) - 1  # the run of segments, ending at the tip, that all sit above best x (1 + threshold)
    while first > 0 and segs[first - 1][2] > best * (1 + threshold):
        first -= 1
    if first == 0:
        return None
    return segs[first - 1], segs[first], latest


def _tip_jump(y: list[float], threshold: float) -> tuple[int, float, float] | None:
    """The latest point alone against the level of the run before it (a single-commit step is too short
    for the piecewise fit to split off): ``(index of the last good point, old level, latest)``."""
    if len(y) < 2:
        return None
    segs = segments(y[:-1], threshold)
    left, right, _ = segs[-1]
    before = statistics.median(y[max(left, right - 1 - 2 * NEIGHBOURS):right])
    if y[-1] > before * (1 + threshold):
        return len(y) - 2, before, y[-1]
    return None


def _suspect(series: Series, points: list[Point], y: list[float]) -> Finding | None:
    """A timing or throughput step at the tip, as a suspect with the history's evidence (or as noise where
    the run at the tip sits within the threshold of the level just before it)."""
    step = _step_into_tip(y, series.threshold)
    if step is not None:
        (_, before_end, old), (after, _, _), latest = step
        before = before_end - 1
    else:
        jump = _tip_jump(y, series.threshold)
        if jump is None:
            return None
        before, old, latest = jump
        after = before + 1
    rise, threshold = latest / old, series.threshold
    noise = rise <= 1 + threshold
    where = (f"within the {threshold:.0%} threshold of the level just before it" if noise
             else f"above the {threshold:.0%} threshold; not re-measured")
    detail = {"rise": round(rise, 4), "confirmation": Confirmation.NOISE if noise else Confirmation.SUSPECT,
              "confirmation_evidence": f"a step of x{rise:.2f} in the recorded history, {where}"}
    if series.family == Family.THROUGHPUT:  # judged on its inverse
        old, latest = 1 / old, 1 / latest
    return Finding(series, points[before].commit, points[after].commit, old, latest, detail)


def _noisy(series: Series, points: list[Point]) -> Finding | None:
    """A step up at the tip's level: a suspect (timings, throughput), or, for the other noisy series, a
    regression when it clears the threshold and the rank test of the raw samples either side (a step
    without samples counts as it is)."""
    y = [1.0 / p.value if series.family == Family.THROUGHPUT else p.value for p in points]
    if not all(v > 0 and math.isfinite(v) for v in y):
        return None
    if series.family in REMEASURED:
        return _suspect(series, points, y)
    step = _step_into_tip(y, series.threshold)
    if step is None:
        return None
    (old_left, before_end, old), (after, new_right, _), latest = step
    before = before_end - 1
    rise = latest / old
    if rise < 1 + series.threshold:
        return None
    detail = {"rise": round(rise, 4)}
    side_a = points[max(old_left, before - NEIGHBOURS + 1):before + 1]
    side_b = points[after:min(new_right, after + NEIGHBOURS)]
    if all(p.samples for p in side_a + side_b):
        p_value = mann_whitney_greater([v for p in side_a for v in p.samples if v > 0],
                                       [v for p in side_b for v in p.samples if v > 0])
        detail["rank_test_p"] = float(f"{p_value:.3g}")
        if p_value >= ALPHA:
            return None
    return Finding(series, points[before].commit, points[after].commit, old, latest, detail)


COMPARED = "commit to commit on this machine (no stored baseline of its class)"


def class_cut(points: Sequence[Point], classes: Mapping[str, float]) -> int:
    """Index of the first point after the last one whose machine class is not the latest point's
    (fingerprints of two classes are not comparable). A measured point without a recorded class (results of
    a suite without the class track) counts as another class; a point that measured nothing (a commit that
    did not build, a failed render) has no class at all and cuts nothing."""
    latest = classes.get(points[-1].commit) if points else None
    if latest is None:  # results without the class track: nothing to cut by
        return 0
    cut = 0
    for i, point in enumerate(points):
        if point.measured and classes.get(point.commit) != latest:
            cut = i + 1
    return cut


def fingerprint_finding(series: Series, points: list[Point]) -> Finding | None:
    """A determinism finding at the latest of ``points`` (measured, oldest first, one machine class: the
    first is the implicit baseline) where the image changed, with the old and new fingerprints; or None."""
    if len(points) < 2 or points[-1].value == points[0].value:
        return None
    reference = points[0].value
    first = len(points) - 1
    while first > 1 and points[first - 1].value != reference:
        first -= 1
    changes = [p.commit for prev, p in zip(points[first:], points[first + 1:]) if p.value != prev.value]
    detail = {"old_sha256": fingerprint_hex(points[first - 1].value), "new_sha256": fingerprint_hex(points[-1].value),
              "changed_again_at": changes, "compared": COMPARED, "baseline_commit": points[0].commit}
    return Finding(replace(series, family=Family.IMAGE_CHANGED), points[first - 1].commit, points[first].commit,
                   0.0, 1.0, detail)


def segments(y: list[float], threshold: float) -> list[tuple[int, int, float]]:
    """Piecewise-constant fit of a positive series, ``[(left, right_exclusive, level)]``: asv's exact Potts solver on
    log values with a per-step penalty of half the threshold (its own automatic one needs long histories and
    misses a 2x step after two commits; splitting liberally is safe, as every step is confirmed after)."""
    return list(_fit(tuple(y), threshold))


@functools.lru_cache(maxsize=256)  # the verdict and the events (:mod:`.events`) fit the same histories again
def _fit(y: tuple[float, ...], threshold: float) -> tuple[tuple[int, int, float], ...]:
    from asv import step_detect  # the development extra installs asv

    logs = [math.log(v) for v in y]
    right, values, _ = step_detect.solve_potts(logs, [1.0] * len(logs), gamma=math.log1p(threshold) / 2)
    return tuple((left, r, math.exp(v)) for left, r, v in zip([0, *right[:-1]], right, values))


def mann_whitney_greater(before: list[float], after: list[float]) -> float:
    """One-sided p-value that ``after`` is stochastically larger than ``before`` (ties count against): the exact
    null distribution (no ties) for samples up to 50 each, the normal approximation beyond."""
    m, n = len(before), len(after)
    if not m or not n:
        return 1.0
    u = sum(1 for a in after for b in before if a > b)
    if max(m, n) > 50:
        mean, sd = m * n / 2, math.sqrt(m * n * (m + n + 1) / 12)
        return 0.5 * math.erfc((u - 0.5 - mean) / (sd * math.sqrt(2)))
    counts = u_counts(m, n)
    return sum(counts[u:]) / sum(counts)


def u_counts(m: int, n: int) -> list[int]:
    """Number of orderings of m + n distinct values giving each U = 0 .. m n (Gaussian binomial)."""
    table = [[[1] for _ in range(n + 1)] for _ in range(m + 1)]
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            row = [0] * j + table[i - 1][j]  # (i - 1, j) shifted by j, plus (i, j - 1)
            for u, c in enumerate(table[i][j - 1]):
                row[u] += c
            table[i][j] = row
    return table[m][n]
