"""The verdict as text: values in their units, one line per finding, large hash groups as one line."""

from __future__ import annotations

from detsim.track.base.exitcodes import ExitCode
from detsim.track.verdict.finding import Finding
from detsim.track.verdict.lines import GROUP_HASHES, finding_text, fmt, report_lines
from detsim.track.history.series import Series
from detsim.track.verdict.analysis import Report, judgement_of

A, B, C = "a" * 40, "b" * 40, "c" * 40


def _hash_finding(case: str, last_good: str | None = A, first_bad: str = B) -> Finding:
    series = Series(env="e", name=f"bench_determinism.track_hash_changed_{case}", params="", family="determinism",
                    unit="changed (0/1)", case=case)
    return Finding(series, last_good, first_bad, 0.0, 1.0,
                   {"old_sha256": "1" * 64, "new_sha256": "2" * 64, "changed_again_at": []})


def _report(findings, **kw) -> Report:
    fields = dict(generated_at="t", machine="m", envs=("e",), commits=(A, B, C), latest=C, subjects={A: "first"},
                  regressions=tuple(findings), unmeasured=(), skipped=0, built=True, notes=(), exit=ExitCode.OK)
    return Report(**{**fields, **kw})


def _full(report: Report) -> list[str]:
    """The full text of one machine's verdict (a fleet of one)."""
    return report_lines(judgement_of({report.machine: report}))


def test_values_are_shown_in_their_units():
    assert [fmt(v, "seconds") for v in (2.5, 0.0123, 4.5e-5, 3e-8)] == ["2.5 s", "12.3 ms", "45 us", "30 ns"]
    assert fmt(3 * 2**20, "bytes") == "3.0 MiB" and fmt(12.345, "Mpixel-steps/s") == "12.35 Mpixel-steps/s"
    assert fmt(None, "seconds") == "?" and fmt(2.0, "") == "2"


def test_a_timing_line_names_values_ratio_and_evidence():
    series = Series(env="e", name="bench_engine.X.time_y", params="(n=1)", family="timing", unit="seconds")
    finding = Finding(series, A, B, 0.02, 0.04, {"rise": 2.0, "confirmation_evidence": "re-measured: x2.0"})
    assert finding_text(finding.record()) == "timing bench_engine.X.time_y(n=1): 20 ms -> 40 ms, x2.00 (re-measured: x2.0)"


def test_a_finding_line_says_since_which_commit_with_subjects():
    lines = _full(_report([_hash_finding("a01")], exit=ExitCode.REGRESSED))
    assert lines[0] == 'detsim-track: machine m, 3 commits recorded (aaaaaaaa .. cccccccc), latest cccccccc'
    assert lines[1] == (f"CHANGED image hash a01: {'1' * 64} -> {'2' * 64}, "
                        'since bbbbbbbb, last good aaaaaaaa "first"')
    assert lines[-1] == "summary: 1 regressed (determinism 1), 0 not measured, 0 skipped at the latest commit; exit 1"


def test_many_changed_images_of_one_commit_print_as_one_line():
    many = [_hash_finding(f"x{i}") for i in range(GROUP_HASHES + 1)]
    lines = _full(_report(many + [_hash_finding("y", last_good=None, first_bad=C)]))
    regressed = [line for line in lines if line.startswith("CHANGED")]
    assert regressed[0] == (f"CHANGED image hash of {GROUP_HASHES + 1} golden cases "
                            f"({', '.join(f'x{i}' for i in range(GROUP_HASHES + 1))}), since bbbbbbbb, "
                            'last good aaaaaaaa "first" (sha256s with --json)')
    assert regressed[1].startswith("CHANGED image hash y:") and regressed[1].endswith(
        "at every recorded commit since cccccccc")
    assert len(regressed) == 2


def test_the_full_text_names_each_skip_reason_before_the_notes():
    from detsim.track.verdict.skips import NO_CUDA, Skipped

    report = _report([], skipped=2, skips=(Skipped(NO_CUDA, ("t(device='cuda')", "u(device='cuda')")),), notes=("n",))
    assert _full(report)[1:3] == [
        "skipped at cccccccc: 2 CUDA benchmarks (no GPU here) (the benchmarks in --json)", "note: n"]


def test_not_measured_lines_only_when_the_commit_built_then_notes():
    report = _report([], unmeasured=("b.time_x(n=1)",), notes=("one", "two"), exit=ExitCode.UNMEASURED)
    assert _full(report)[1:] == [
        "NOT MEASURED at cccccccc: b.time_x(n=1)", "note: one", "note: two",
        "summary: 0 regressed, 1 not measured, 0 skipped at the latest commit; exit 2"]
    assert not any(line.startswith("NOT MEASURED") for line in _full(_report([], unmeasured=("x",), built=False)))


def _irreproducible(case: str, axis: str = "process") -> Finding:
    series = Series(env="e", name="bench_reproducibility.Reproducibility.track_runs_differ",
                    params=f"(axis='{axis}', case='{case}')", family="reproducibility", unit="runs differ (0/1)",
                    case=case)
    return Finding(series, A, B, 0.0, 1.0, {"axis": axis, "runs": "a render in a second fresh process"})


def test_cases_that_do_not_reproduce_along_one_axis_print_as_one_line_apart_from_changed_images():
    lines = _full(_report([_irreproducible("a01"), _irreproducible("s01"), _hash_finding("b02")],
                                 exit=ExitCode.REGRESSED))
    assert lines[1] == ("NONDETERMINISTIC images of 2 golden cases (a01, s01) differ between two runs (process: a "
                        'render in a second fresh process), since bbbbbbbb, last good aaaaaaaa "first"')
    assert lines[2].startswith("CHANGED image hash b02:")
