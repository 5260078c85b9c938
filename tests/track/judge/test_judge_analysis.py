"""detsim.track.judge.analysis: a history judged at its latest commit (what is judged, the notes on image hashes
not compared or withheld, the page's history)."""

from __future__ import annotations

import json
from pathlib import Path

from detsim.track.base.exitcodes import ExitCode
from detsim.track.base.output import json_text
from detsim.track.judge.analysis import analyse, determinism_note, judge
from detsim.track.judge.series import Point, Series

DATA = Path(__file__).resolve().parents[2] / "data" / "asv"
HOLDS = {"cpu_class": "x86_64 GenuineIntel AVX512", "device": "cpu", "dtype": "float64", "threads": 1, "torch": "2"}


def _series(name: str, family: str, values, unit: str = "seconds", case: str | None = None) -> Series:
    return Series(env="e", name=name, params="", family=family, unit=unit, case=case,
                  points=tuple(Point(c, v) for c, v in zip(("c1", "c2", "c3"), values)))


def test_the_latest_point_decides_what_is_judged():
    series = [_series("failed", "timing", [1.0, 1.0, None]), _series("skipped", "timing", [1.0, 1.0, float("nan")]),
              _series("gone", "timing", [1.0, 1.0]), _series("p", "parity", [0.0, 0.0, 1e-3], unit="1 - r", case="a"),
              _series("h", "hash count", [0.0, 0.0, 1.0], unit="cases changed")]
    judged = judge(series, "c3", {}, {}, {})
    assert [f.series.name for f in judged.findings] == ["p", "h"]  # sorted by family order
    assert (judged.unmeasured, [s.name for s in judged.skipped], judged.measured) == (["failed"], ["skipped"], 2)
    off = {"regressions_first_commits": {"p": None}}
    assert [f.series.name for f in judge(series, "c3", off, {}, {}).findings] == ["h"]


def test_skipped_hashes_are_explained_by_the_machine_class():
    series = [_series("d", "determinism", [0.0, 0.0, float("nan")], unit="changed (0/1)", case="a")]
    here = {**HOLDS, "cpu_class": "x86_64 AuthenticAMD AVX2"}
    stored = {"b.json": {"holds_for": HOLDS}}
    note = determinism_note(series, "c3", {"c3": {"holds_for": here}}, stored, None)
    assert note == ("image hashes not compared at c3: no stored baseline of this machine's class (b.json holds "
                    "for cpu_class=x86_64 GenuineIntel AVX512 where this machine has cpu_class=x86_64 AuthenticAMD "
                    "AVX2 (another machine class: a fact, not a failure)); store one with "
                    "`detsim-track baselines --refresh` on this machine class")
    assert determinism_note(series, "c3", {"c3": {"holds_for": HOLDS}}, stored, ("b.json", stored["b.json"])) is None
    assert determinism_note(series, "c3", {"c3": {"holds_for": here}}, {}, None) is None


def test_unmeasured_wins_over_regressed():
    assert analyse(DATA / "unmeasured").exit is ExitCode.UNMEASURED
    assert analyse(DATA / "good").exit is ExitCode.OK


def _runs_differ(axis: str, case: str, values) -> Series:
    return Series(env="e", name="bench_reproducibility.Reproducibility.track_runs_differ",
                  params=f"(axis='{axis}', case='{case}')", family="reproducibility", unit="runs differ (0/1)",
                  case=case, points=tuple(Point(c, v) for c, v in zip(("c1", "c2", "c3"), values)))


def test_image_changes_first_seen_where_images_do_not_reproduce_are_withheld_with_a_note():
    from detsim.track.judge.analysis import without_irreproducible

    series = [_runs_differ("process", "a01", [0.0, 0.0, 1.0]), _runs_differ("compiled", "a01", [0.0, 0.0, 0.0]),
              _series("h1", "determinism", [0.0, 0.0, 1.0], unit="changed (0/1)", case="a01"),
              _series("h2", "determinism", [0.0, 1.0, 1.0], unit="changed (0/1)", case="b02"),
              _series("cc", "hash count", [0.0, 0.0, 1.0], unit="cases changed")]
    findings = judge(series, "c3", {}, {}, {}).findings
    assert [f.label for f in findings] == ["NONDETERMINISTIC", "CHANGED", "CHANGED", "CHANGED"]
    kept, note = without_irreproducible(findings, series)
    # a01's eager hash changed at c3, where eager images did not reproduce: withheld; b02 changed at c2, a real
    # change; the compiled path reproduced at c3, so its count is still reported
    assert [(f.series.name, f.first_bad) for f in kept] == [
        ("bench_reproducibility.Reproducibility.track_runs_differ", "c3"), ("h2", "c2"), ("cc", "c3")]
    assert note.startswith("1 image-hash change not reported (at c3): the images there do not reproduce")
    assert without_irreproducible(kept[1:], series[2:]) == (kept[1:], None)
    # no compiled baseline here: the compiled path's fingerprint (no case) is judged by the compiled axis too
    compiled = [*series[:2], _series("cf", "fingerprint", [7.0, 7.0, 9.0], unit="sha256[:13] as a number")]
    findings = judge(compiled, "c3", {}, {}, {}).findings
    assert [f.label for f in findings] == ["NONDETERMINISTIC", "CHANGED"]
    assert without_irreproducible(findings, compiled) == (findings, None)


def test_the_page_history_is_strict_json_a_skip_kept_apart_from_a_failure():
    from detsim.track.judge.series import Point, Series
    from detsim.track.judge.analysis import page_history

    points = (Point("c1", 0.0), Point("c2", float("nan")), Point("c3", None), Point("c4", 1e-9))
    parity = Series(env="e", name="bench_parity.track_parity_a01", params="", family="parity", unit="1 - r",
                    case="a01", points=points)
    drawn = json.loads(json_text(page_history([parity], ["c1", "c2", "c3", "c4"], {})))
    assert drawn["parity"] == [["a01", "bench_parity.track_parity_a01",
                                [["c1", 0.0], ["c2", "nan"], ["c3", None], ["c4", 1e-9]]]]
