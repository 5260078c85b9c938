"""detsim.track.target.criteria: each criterion judges a probe against the good commit; a probe it cannot
judge is skipped, never called good."""

from __future__ import annotations

import pytest

from detsim.track.base.metrics import PARITY_MAX_ONE_MINUS_R
from detsim.track.target.criteria import ONE_MINUS_R_FLOOR, Criterion, Kind, Mark
from detsim.track.target.render import CaseOutcome
from detsim.track.base.status import Status


def _image(one_minus_r=0.0, sha="a", seconds=1.0, hashes=None, cpu_s=None, **turns) -> CaseOutcome:
    return CaseOutcome("c02", Status.OK, seconds=seconds, cpu_s=cpu_s, sha256=sha * 64,
                       hashes=tuple(h * 64 for h in (hashes or sha)), parity={"r": 1.0 - one_minus_r}, **turns)


CRASH = CaseOutcome("c02", Status.CRASHED, "exited 1: boom")


@pytest.mark.parametrize("good, new, mark", [
    (0.0, 0.0, Mark.GOOD),
    (0.0, 5 * ONE_MINUS_R_FLOOR, Mark.GOOD),  # rounding of r over equal images is not a change
    (0.0, 20 * ONE_MINUS_R_FLOOR, Mark.BAD),
    (1e-8, 9e-8, Mark.GOOD),
    (1e-8, 2e-7, Mark.BAD),  # far inside the acceptance line, still a change
    (2e-4, 6e-4, Mark.BAD),  # crosses the line though it grew only 3-fold
    (6e-4, 7e-4, Mark.GOOD),  # already past the line: only a growth by the factor counts
])
def test_parity_is_a_tenfold_growth_of_one_minus_r_or_crossing_the_line(good, new, mark):
    assert good < PARITY_MAX_ONE_MINUS_R or new < 10 * good
    judged = Criterion(Kind.PARITY, "c02").judge(_image(good), _image(new))
    assert judged.mark is mark and f"{new:.3g}" in judged.why


def test_the_parity_factor_is_the_users():
    assert Criterion(Kind.PARITY, "c02", factor=3).judge(_image(1e-8), _image(4e-8)).mark is Mark.BAD


def test_changed_irreproducible_and_slower_read_their_own_facts():
    good = _image(sha="a", seconds=2.0, hashes="aa", cpu_s=2.0)
    assert Criterion(Kind.CHANGED, "c02").judge(good, _image(sha="b")).mark is Mark.BAD
    assert Criterion(Kind.CHANGED, "c02").judge(good, _image(sha="a")).mark is Mark.GOOD
    assert Criterion(Kind.IRREPRODUCIBLE, "c02").judge(good, _image(sha="b", hashes="bc")).mark is Mark.BAD
    assert Criterion(Kind.IRREPRODUCIBLE, "c02").judge(good, _image(sha="b", hashes="bb")).mark is Mark.GOOD
    slower = Criterion(Kind.SLOWER, "c02", percent=10)
    assert slower.judge(good, _image(cpu_s=2.3, seconds=1.0)).mark is Mark.BAD  # CPU seconds decide
    assert slower.judge(good, _image(cpu_s=2.1, seconds=9.0)).mark is Mark.GOOD
    in_turns = slower.judge(good, _image(cpu_s=2.3, seconds=2.6, baseline_s=2.5, baseline_cpu_s=2.2))
    assert in_turns.mark is Mark.GOOD and "timed in turns" in in_turns.why
    assert "wall 2.60 s against 2.50 s" in in_turns.why
    assert slower.judge(_image(), _image(cpu_s=2.0)).mark is Mark.SKIP  # nothing to compare with
    assert (slower.runs, Criterion(Kind.IRREPRODUCIBLE, "c02").runs, Criterion(Kind.PARITY, "c02").runs) == (3, 2, 1)


@pytest.mark.parametrize("kind", [Kind.PARITY, Kind.CHANGED, Kind.IRREPRODUCIBLE, Kind.SLOWER])
def test_a_failed_render_cannot_be_judged_by_an_image_criterion_and_is_skipped(kind):
    judged = Criterion(kind, "c02", percent=10).judge(_image(), CRASH)
    assert judged.mark is Mark.SKIP and "crashed" in judged.why


def test_broken_is_any_failure_and_needs_a_good_commit_that_renders():
    broken = Criterion(Kind.BROKEN, "c02")
    assert broken.judge(_image(), CRASH).mark is Mark.BAD
    assert broken.judge(_image(), _image(0.5)).mark is Mark.GOOD
    assert broken.unusable_good(CRASH) and broken.unusable_good(_image()) is None


def test_a_good_commit_that_cannot_anchor_the_criterion_says_why():
    assert "no image" in Criterion(Kind.PARITY, "c02").unusable_good(CRASH)
    assert "not reproduced" in Criterion(Kind.IRREPRODUCIBLE, "c02").unusable_good(_image(hashes="ab"))
    undefined = CaseOutcome("c02", Status.OK, seconds=1.0, sha256="a" * 64, parity={"r": None})
    assert "undefined" in Criterion(Kind.PARITY, "c02").unusable_good(undefined)
