"""Determinism on a machine class without a stored baseline: fingerprints compared commit to commit."""

from __future__ import annotations

from detsim.track.verdict.fingerprint_series import COMPARED, class_cut, fingerprint_finding
from detsim.track.base.hashing import fingerprint, fingerprint_hex
from detsim.track.verdict.lines import report_lines
from detsim.track.history.series import Point, Series
from detsim.track.verdict.analysis import judge

C = [f"{i:040x}" for i in range(1, 7)]  # commits, oldest first
SHA = {k: k * 64 for k in "abcd"}
NAN = float("nan")


def _series(family: str, values, *, name: str | None = None, case: str | None = "a01") -> Series:
    return Series(env="e", name=name or f"bench_determinism.track_{family}_a01", params="", family=family,
                  unit="u", case=case, points=tuple(Point(c, v) for c, v in zip(C, values)))


def _fp(*keys: str) -> list[float]:
    return [fingerprint(SHA[k]) for k in keys]


def test_a_change_between_consecutive_commits_is_found_where_it_happened():
    finding = fingerprint_finding(_series("fingerprint", []), list(_series("fingerprint", _fp(*"aabbb")).points))
    assert (finding.last_good, finding.first_bad) == (C[1], C[2])
    assert finding.series.family == "determinism"  # reported as what it is
    assert finding.detail["old_sha256"] == "a" * 13 and finding.detail["new_sha256"] == "b" * 13
    assert finding.detail["compared"] == COMPARED and finding.detail["baseline_commit"] == C[0]
    again = fingerprint_finding(_series("fingerprint", []), list(_series("fingerprint", _fp(*"abbcc")).points))
    assert (again.last_good, again.first_bad, again.detail["changed_again_at"]) == (C[0], C[1], [C[3]])
    for unchanged in ("aaaa", "abba", "a"):
        assert fingerprint_finding(_series("fingerprint", []), list(_series("fingerprint", _fp(*unchanged)).points)) is None
    assert fingerprint_hex(fingerprint(SHA["d"])) == "d" * 13


def test_commits_of_another_machine_class_are_cut_off():
    points = _series("fingerprint", _fp(*"aabbb")).points
    assert class_cut(points, {c: 1.0 for c in C}) == 0
    assert class_cut(points, {C[0]: 1.0, C[1]: 1.0, C[2]: 2.0, C[3]: 2.0, C[4]: 2.0}) == 2
    assert class_cut(points, {C[0]: 2.0, C[1]: 1.0, C[2]: 2.0, C[3]: 2.0, C[4]: 2.0}) == 2
    assert class_cut(points, {}) == 0


def test_without_a_baseline_of_its_class_a_planted_change_is_flagged_at_its_commit():
    skipped = _series("hash_changed", [NAN] * 5, name="bench_determinism.track_hash_changed_a01")
    skipped = Series(**{**skipped.__dict__, "family": "determinism"})
    fp = _series("fingerprint", _fp(*"aabbb"))
    same_class = _series("machine class", [7.0] * 5, name="bench_determinism.track_machine_class", case=None)
    conf = {"regressions_first_commits": {r"bench_determinism\.track_fingerprint_": None}}  # asv's page only
    judged = judge([skipped, fp, same_class], C[4], conf, {}, {})
    [finding] = judged.findings
    assert (finding.last_good, finding.first_bad, finding.series.case) == (C[1], C[2], "a01")
    assert (judged.unmeasured, judged.skipped) == ([], [skipped])
    # a new machine class from C[2] on (a torch upgrade): the change is a fact between classes, not a finding
    upgraded = Series(**{**same_class.__dict__, "points": tuple(Point(c, v) for c, v in zip(C, [7, 7, 8, 8, 8.0]))})
    assert judge([skipped, fp, upgraded], C[4], conf, {}, {}).findings == []
    # a stored baseline of this class judged the case (its 0/1 track was measured): no second finding
    judged = Series(**{**skipped.__dict__, "points": tuple(Point(c, v) for c, v in zip(C, [0, 0, 1, 1, 1.0]))})
    [by_baseline] = judge([judged, fp, same_class], C[4], conf, {"a01": SHA["a"]}, {}).findings
    assert by_baseline.series.name.endswith("track_hash_changed_a01")
    assert (by_baseline.detail["old_sha256"], by_baseline.detail["new_sha256"]) == ("a" * 13, "b" * 13)


def test_the_finding_reads_as_an_image_hash_change():
    from detsim.track.verdict.analysis import Report
    from detsim.track.base.exitcodes import ExitCode

    finding = fingerprint_finding(_series("fingerprint", []), list(_series("fingerprint", _fp(*"aab")).points))
    report = Report(generated_at="t", machine="m", envs=("e",), commits=tuple(C[:3]), latest=C[2], subjects={},
                    regressions=(finding,), unmeasured=(), skipped=0, built=True, notes=(), exit=ExitCode.REGRESSED)
    lines = report_lines(report)
    assert f"CHANGED image hash a01: {'a' * 13} -> {'b' * 13}, since {C[2][:8]}, last good {C[1][:8]}" in lines
    assert lines[-1].startswith("summary: 1 regressed (determinism 1)")
