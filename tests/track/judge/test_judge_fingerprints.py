"""Determinism per commit: same as the previous recorded commit, changed, or not comparable (and why)."""

from __future__ import annotations

from pathlib import Path

from detsim.track.judge.results_files import load_recorded
from detsim.track.judge.history import frame_of
from detsim.track.judge.series import series_of
from detsim.track.judge.fingerprints import CHANGED, NOT_COMPARABLE, SAME, compare_case, determinism_states

DATA = Path(__file__).resolve().parents[2] / "data" / "asv"
INTEL = {"cpu_class": "x86_64 GenuineIntel AVX512", "threads": 1}
AMD = {"cpu_class": "x86_64 AuthenticAMD AVX2", "threads": 1}
C = [f"{i}" * 40 for i in range(1, 7)]


def _record(sha: str | None, holds=INTEL) -> dict:
    return {"cases": {} if sha is None else {"a01": {"sha256": sha}}, "holds_for": holds}


def _states(hashes, track=None):
    return [(s.state, s.why) for s in compare_case("a01", C, hashes, track or {})]


def test_hashes_of_one_machine_class_compare_with_the_last_recorded_one():
    hashes = {C[0]: _record("x"), C[1]: _record("x"), C[2]: _record("y"), C[4]: _record("y"), C[5]: _record("y", AMD)}
    states = _states(hashes)
    assert [s for s, _ in states] == [NOT_COMPARABLE, SAME, CHANGED, NOT_COMPARABLE, SAME, NOT_COMPARABLE]
    assert states[0][1] == "first recorded here"
    assert states[2][1] == f"image differs from {C[1][:8]}"
    assert states[3][1] == "no hash recorded"
    assert states[4][1] == f"same image as {C[2][:8]}"  # across the commit that recorded nothing
    assert states[5][1] == "recorded on another machine class than the commits before"


def test_without_hashes_the_0_1_tracks_decide_where_they_can():
    nan = float("nan")
    track = {C[0]: 0.0, C[1]: 0.0, C[2]: 1.0, C[3]: 1.0, C[4]: None, C[5]: nan}
    assert [s for s, _ in _states({}, track)] == [NOT_COMPARABLE, SAME, CHANGED, NOT_COMPARABLE, NOT_COMPARABLE,
                                                  NOT_COMPARABLE]
    whys = [w for _, w in _states({}, track)]
    assert whys[3] == "differs from the baseline, as at the commit before"
    assert whys[4] == "failed here" and whys[5].startswith("skipped here")
    assert [s for s, _ in _states({}, {C[0]: 1.0, C[1]: 0.0})][1] == CHANGED  # back to the baseline


def test_the_stored_history_of_a_project():
    root = DATA / "regressed"
    recorded = load_recorded(root)
    series = series_of(frame_of(recorded.files, recorded.benchmarks, recorded.config))
    commits = list(dict.fromkeys(f["commit_hash"] for f in recorded.files))
    states = determinism_states(recorded.hashes, series, commits)
    assert sorted(states) == ["a01_cubic_mosflm_center", "o01_polar_0.9"]
    for case, per_commit in states.items():
        assert [s.commit for s in per_commit] == commits and per_commit[0].state == NOT_COMPARABLE
    # the fixture's planted changes: a01 at the 4th recorded commit, o01 at the 5th
    assert [s.state for s in states["a01_cubic_mosflm_center"]][1:] == [SAME, SAME, CHANGED, SAME]
    assert [s.state for s in states["o01_polar_0.9"]][1:] == [SAME, SAME, SAME, CHANGED]


def test_fingerprint_tracks_stand_for_hashes_within_one_machine_class(tmp_path):
    from detsim.track.judge.series import Point, Series

    def track(name, family, values, case=None):
        return Series(env="e", name=name, params="", family=family, unit="", case=case,
                      points=tuple(Point(c, v) for c, v in zip(C, values)))

    nan = float("nan")
    series = [track("bench_determinism.track_fingerprint_a01", "fingerprint", [7.0, 7.0, 9.0, 9.0, None, 9.0], "a01"),
              track("bench_determinism.track_machine_class", "machine class", [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]),
              track("bench_determinism.track_hash_changed_a01", "determinism", [nan] * 6, "a01")]
    [(case, states)] = determinism_states({}, series, C).items()  # no per-commit hash records
    assert case == "a01"
    assert [s.state for s in states] == [NOT_COMPARABLE, SAME, CHANGED, NOT_COMPARABLE, NOT_COMPARABLE, SAME]
    assert states[3].why == "recorded on another machine class than the commits before"
    assert states[4].why == "skipped here (not comparable on this machine)"  # no fingerprint, 0/1 track skipped
    assert states[5].why == f"same image as {C[3][:8]}"  # the last commit of its own class with a fingerprint


def _runs_differ(case: str, axis: str, values):
    from detsim.track.judge.series import Point, Series

    return Series(env="e", name="bench_reproducibility.Reproducibility.track_runs_differ",
                  params=f"(axis='{axis}', case='{case}')", family="reproducibility", unit="runs differ (0/1)",
                  case=case, points=tuple(Point(c, v) for c, v in zip(C, values)))


def test_a_commit_whose_images_do_not_reproduce_is_marked_so_not_as_changed():
    from detsim.track.judge.fingerprints import NOT_REPRODUCIBLE, irreproducible_cases, mark_irreproducible

    found = irreproducible_cases([_runs_differ("a01", "process", [0.0, 1.0, 0.0]),
                                  _runs_differ("a01", "compiled", [1.0, 0.0, 0.0])])
    assert found == {C[1]: {"a01": ["process"]}}  # the compiled axis does not judge eager images
    states = compare_case("a01", C[:3], {c: _record(sha) for c, sha in zip(C, "abb")}, {})
    assert [s.state for s in states] == [NOT_COMPARABLE, CHANGED, SAME]
    marked = mark_irreproducible("a01", states, found)
    assert [s.state for s in marked] == [NOT_COMPARABLE, NOT_REPRODUCIBLE, SAME]
    assert marked[1].why == "two runs of this input differ (process)"
    # another case that changed at that commit may have changed by chance too
    other = mark_irreproducible("b02", states, found)
    assert other[1].state == NOT_REPRODUCIBLE and other[1].why.startswith("changed where the images of a01 do not")
    assert other[2].state == SAME
