"""Judging test durations on a shared, noisy machine: the rule, load factors and re-timing plans
(docs/evidence.md, "Durations", which explains the numbers below). Pure: tests in, verdicts out."""

from __future__ import annotations

import enum
import math
import statistics
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from detsim.track.evidence.outcomes import DurationMove, Key, TestResult

MOVE_RATIO = 2.0  # a move exceeds this factor...
MOVE_FLOOR_S = 0.5  # ...and this many seconds
RETIMES = 3  # default re-timings of a test that looks slower (--retime)
HISTORY = 5  # earlier bundles whose best times judge "faster"
FASTER_MIN_SAMPLES = 3  # earlier measurements needed to call a test faster
CONTROLS = 5  # control tests timed alongside a re-timing
FACTOR_MIN_S = 0.05  # tests shorter than this before do not measure the load
FACTOR_MIN_TESTS = 3  # tests needed for a load factor other than 1


class Move(str, enum.Enum):
    """Which way a test's time moved beyond the noise."""

    SLOWER = "slower"
    FASTER = "faster"


def move(now: float, before: float) -> Move | None:
    """Whether ``now`` moved from ``before`` by more than :data:`MOVE_RATIO` times and :data:`MOVE_FLOOR_S`."""
    if now > MOVE_RATIO * before and now - before > MOVE_FLOOR_S:
        return Move.SLOWER
    if now * MOVE_RATIO < before and before - now > MOVE_FLOOR_S:
        return Move.FASTER
    return None


def best_times(bundles: Iterable[Iterable[TestResult]]) -> dict[Key, tuple[float, int]]:
    """Per test key: the least time it took when it passed over ``bundles``, and how many measurements."""
    best: dict[Key, tuple[float, int]] = {}
    for tests in bundles:
        for test in tests:
            if test.outcome != "passed":
                continue
            times = [test.duration_s, *test.retimed_s]
            least, count = best.get(test.key, (math.inf, 0))
            best[test.key] = (min(least, *times), count + len(times))
    return best


def load_factor(pairs: Iterable[tuple[float, float]]) -> float:
    """How much busier the machine is now: the median of ``now / before`` over ``(now, before)`` pairs,
    never below 1 (a quieter machine must not make tests look slower)."""
    ratios = [now / before for now, before in pairs if before >= FACTOR_MIN_S]
    if len(ratios) < FACTOR_MIN_TESTS:
        return 1.0
    return max(1.0, round(statistics.median(ratios), 3))


def main_load_factors(tests: Sequence[TestResult], previous: Sequence[TestResult]) -> dict[str, float]:
    """Per device, :func:`load_factor` over every test that passed in this run and the previous one."""
    before = best_times([previous])
    pairs: dict[str, list[tuple[float, float]]] = {}
    for test in tests:
        if test.outcome == "passed" and test.key in before:
            pairs.setdefault(test.device, []).append((test.duration_s, before[test.key][0]))
    return {device: load_factor(p) for device, p in pairs.items()}


def _moved(test: TestResult, was: float, now: float, measurements: int) -> DurationMove:
    return DurationMove(test.device, test.nodeid, round(was, 3), round(now, 3), round(now / max(was, 1e-9), 2),
                        measurements)


def judge_durations(tests: Sequence[TestResult], previous: Sequence[TestResult],
                    history: Sequence[Sequence[TestResult]]) -> dict:
    """Tests slower than in ``previous`` (best load-corrected time) or faster than their best over ``history``:
    the ``slower``, ``faster``, ``faster_unjudged`` and ``load_factors`` of a :class:`~.outcomes.BundleChanges`."""
    before, earlier = best_times([previous]), best_times(history)
    factors = main_load_factors(tests, previous)
    slower, faster, unjudged = [], [], 0
    for test in tests:
        if test.outcome != "passed":
            continue
        if test.key in before:
            times = [(test.duration_s, factors.get(test.device, 1.0)), *zip(test.retimed_s, test.retime_factors)]
            now = min(t / f for t, f in times)
            if move(now, before[test.key][0]) == Move.SLOWER:
                slower.append(_moved(test, before[test.key][0], now, len(times)))
                continue
        if test.key in earlier and move(test.duration_s, earlier[test.key][0]) == Move.FASTER:
            was, count = earlier[test.key]
            if count >= FASTER_MIN_SAMPLES:
                faster.append(_moved(test, was, test.duration_s, count))
            else:
                unjudged += 1
    return dict(slower=tuple(slower), faster=tuple(faster), faster_unjudged=unjudged, load_factors=factors)


# ---------------------------------------------------------------------------------------------------
# Re-timing


@dataclass(frozen=True)
class RetimePlan:
    """The re-timing of one device's tests that look slower than last time."""

    device: str
    suspects: tuple[str, ...]  # node ids that look slower after dividing out the load factor
    controls: tuple[str, ...]  # node ids timed alongside, to measure the load of the moment
    control_before: Mapping[str, float]  # control node id -> its time in the previous bundle (s)

    def order(self, n: int) -> list[str]:
        """The node ids of re-timing ``n`` (1, 2, ...): suspects rotated by ``n``, controls among them."""
        shift = n % len(self.suspects)
        return interleave(list(self.controls), list(self.suspects[shift:] + self.suspects[:shift]))

    def load_factor(self, passed: Mapping[str, float]) -> float:
        """The load factor the controls measured in one re-timing (``passed``: node id -> seconds)."""
        return load_factor([(passed[c], self.control_before[c]) for c in self.controls if c in passed])


def retime_plan(tests: Sequence[TestResult], previous: Sequence[TestResult], device: str) -> RetimePlan | None:
    """What to re-time on ``device`` (None: nothing looks slower). ``tests`` in run order."""
    before = best_times([previous])
    factor = main_load_factors(tests, previous).get(device, 1.0)
    mine = [t for t in tests if t.device == device and t.outcome == "passed" and t.key in before]
    suspects = [t for t in mine if move(t.duration_s / factor, before[t.key][0]) == Move.SLOWER]
    if not suspects:
        return None
    suspect_ids = {t.nodeid for t in suspects}
    chosen = pick_controls([t for t in mine if t.nodeid not in suspect_ids], before)
    return RetimePlan(device, tuple(t.nodeid for t in suspects), tuple(t.nodeid for t in chosen),
                      {t.nodeid: before[t.key][0] for t in chosen})


def pick_controls(candidates: Sequence[TestResult], before: Mapping[Key, tuple[float, int]]) -> list[TestResult]:
    """Up to :data:`CONTROLS` tests spread over the range of earlier times (else the fastest other test)."""
    timed = sorted((t for t in candidates if before[t.key][0] >= FACTOR_MIN_S), key=lambda t: before[t.key][0])
    if not timed:
        return sorted(candidates, key=lambda t: t.duration_s)[:1]
    if len(timed) <= CONTROLS:
        return timed
    step = (len(timed) - 1) / (CONTROLS - 1)
    return [timed[round(i * step)] for i in range(CONTROLS)]


def interleave(controls: list[str], suspects: list[str]) -> list[str]:
    """Controls spread among the suspects, one first (it also absorbs the process's warm-up)."""
    if not controls:
        return suspects
    order, every = [], max(1, math.ceil(len(suspects) / len(controls)))
    for i, control in enumerate(controls):
        order += [control, *suspects[i * every:(i + 1) * every]]
    return order + suspects[len(controls) * every:]
