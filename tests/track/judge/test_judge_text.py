"""detsim.track.judge.text: the verdict in full and on one screen."""

from __future__ import annotations

from detsim.track.base.exitcodes import ExitCode
from detsim.track.judge.finding import Finding, Confirmation
from detsim.track.judge.series import Series
from detsim.track.judge.text import GROUP_AT, GROUP_HASHES, WIDTH, View, finding_line, fitted, fmt, names_fitting, \
    report_lines, screen_lines, short_params, summary_line
from detsim.track.judge.skips import NO_BASELINE, NO_CUDA, NO_VALGRIND, Skipped, UNKNOWN
from detsim.track.judge.verdict import Judgement, Report, judgement_of


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
    assert finding_line(finding, view=View.FULL) == ("SUSPECT timing bench_engine.X.time_y(n=1): 20 ms -> 40 ms, x2.00 "
                                                     f"(re-measured: x2.0), since {B[:8]}, last good {A[:8]}")


def test_a_finding_line_says_since_which_commit_with_subjects():
    lines = _full(_report([_hash_finding("a01")], exit=ExitCode.REGRESSED))
    assert lines[0] == 'detsim-track: machine m, 3 commits recorded (aaaaaaaa .. cccccccc), latest cccccccc'
    assert lines[1] == (f"CHANGED image hash a01: {'1' * 64} -> {'2' * 64}, "
                        'since bbbbbbbb, last good aaaaaaaa "first"')
    assert lines[-1] == "summary: 1 changed; 0 measured, 0 noise, 0 skipped; by family: determinism 1; exit 1"


def test_the_full_summary_counts_what_the_screens_counts():
    report = _report([_hash_finding("a01"), _hash_finding("o01", last_good=B, first_bad=C)], exit=ExitCode.REGRESSED)
    full, screen = _full(report)[-1], summary_line(report)
    assert full.startswith(screen.rpartition("; exit ")[0] + "; by family: determinism 2")
    assert full.endswith("; exit 1") and screen.endswith("; exit 1")


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
    report = _report([], skipped=2, skips=(Skipped(NO_CUDA, ("t(device='cuda')", "u(device='cuda')")),), notes=("n",))
    assert _full(report)[1:3] == [
        "skipped at cccccccc: 2 CUDA benchmarks (no GPU here) (the benchmarks in --json)", "note: n"]


def test_not_measured_lines_only_when_the_commit_built_then_notes():
    report = _report([], unmeasured=("b.time_x(n=1)",), notes=("one", "two"), exit=ExitCode.UNMEASURED)
    assert _full(report)[1:] == [
        "NOT MEASURED at cccccccc: b.time_x(n=1)", "note: one", "note: two",
        "summary: 1 not measured; 0 measured, 0 noise, 0 skipped; exit 2"]
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


LONG_SUBJECT = "Refactor the sampling loop so that every detector convention shares one code path " * 3


def _hash(case: str, first_bad: str = B) -> Finding:
    series = Series(env="e", name=f"bench_determinism.track_hash_changed_{case}", params="", family="determinism",
                    unit="changed (0/1)", case=case)
    return Finding(series, A, first_bad, 0.0, 1.0, {"old_sha256": "1" * 64, "new_sha256": "2" * 64,
                                                    "changed_again_at": []})


def _timing(params: str, confirmation: str, ratio: float = 2.0, name: str = "bench_engine.EngineSweep.time_simulate",
            **detail) -> Finding:
    series = Series(env="e", name=name, params=params, family="timing",
                    unit="seconds")
    return Finding(series, A, B, 0.01, 0.01 * ratio, {"confirmation": confirmation, **detail})


def _screen_report(findings, **kw) -> Report:
    fields = dict(generated_at="t", machine="m", envs=("e",), commits=(A, B, C), latest=C,
                  subjects={B: LONG_SUBJECT, C: LONG_SUBJECT}, regressions=tuple(findings), unmeasured=(), skipped=0,
                  built=True, notes=(), exit=ExitCode.REGRESSED, measured=40)
    return Report(**{**fields, **kw})


def _screen(report: Report) -> list[str]:
    """The default output of one machine's verdict (a fleet of one)."""
    return screen_lines(judgement_of({report.machine: report}))


def test_a_line_keeps_its_facts_and_cuts_the_subject_to_fit():
    line = fitted("REGRESSED parity a01_cubic_mosflm_center: r 1.000000000 -> 0.993700000", B, {B: LONG_SUBJECT})
    assert len(line) == WIDTH and line.startswith("REGRESSED parity a01_cubic_mosflm_center: r 1.000000000 -> "
                                                  '0.993700000 since bbbbbbbb "Refactor the sampling loop')
    assert line.endswith('…"')
    assert fitted("CHANGED x", B, {B: "short"}) == 'CHANGED x since bbbbbbbb "short"'
    assert fitted("x" * 300, B, {}) == "x" * (WIDTH - 16) + "… since bbbbbbbb"  # even a head too long fits


def test_many_findings_of_one_cause_are_one_line_naming_the_first_that_fit():
    cases = [f"{chr(97 + i % 26)}{i:02d}_some_long_case_description" for i in range(54)]
    lines = _screen(_screen_report([_hash(c) for c in cases]))
    [changed] = [line for line in lines if line.startswith("CHANGED")]
    assert changed.startswith("CHANGED image hash of 54 golden cases (a00, b01, c02, ")
    assert ", ... +" in changed and 'since bbbbbbbb "Refactor' in changed and len(changed) <= WIDTH
    shown = changed.split("(", 1)[1].split(")")[0].split(", ")
    assert int(shown[-1].split("+")[1]) + len(shown) - 1 == 54  # the names shown and the count of the rest
    below = _screen(_screen_report([_hash(c) for c in cases[:GROUP_AT - 1]]))
    assert sum(line.startswith("CHANGED image hash a00_some_long") or line.startswith("CHANGED image hash b01")
               for line in below) == GROUP_AT - 1  # fewer than GROUP_AT: one line each, with old -> new
    assert names_fitting(["a01", "b02", "c03"], 8) == "a01, ... +2" and names_fitting(["a01"], 1) == "a01"


def test_noise_is_only_counted_and_an_undecided_step_shows_the_command_that_decides_it():
    decide = "detsim-track regressions --machine m --remeasure-budget 900"
    noise = _timing("(pixels=128)", Confirmation.NOISE)
    undecided = _timing("(n=2)", Confirmation.UNDECIDED, decide_command=decide)
    confirmed = _timing("(pixels=512)", Confirmation.CONFIRMED)
    lines = _screen(_screen_report([noise, undecided, confirmed]))
    assert not any(line.startswith("NOISE") for line in lines)
    [line] = [line for line in lines if line.startswith("UNDECIDED")]
    assert line.startswith("UNDECIDED timing EngineSweep.time_simulate(2): 10 ms -> 20 ms, x2.00 since "
                           "bbbbbbbb") and line.endswith(f"; decide: {decide}") and len(line) <= WIDTH
    assert any(line.startswith("REGRESSED timing EngineSweep.time_simulate(512)") for line in lines)
    assert lines[-1] == ("summary: 1 regressed, 1 undecided; 40 measured, 1 noise, 0 skipped; exit 1")
    alone = _timing("(pixels=256, steps_per_pixel=10, dtype='float64', device='cpu')", Confirmation.UNDECIDED, decide_command=decide)
    lines = _screen(_screen_report([alone]))  # its facts and the command do not fit one line: a line each
    assert lines[1].startswith("UNDECIDED timing EngineSweep.time_simulate(256, 10, float64, cpu): 10 ms -> 20 ms, "
                               "x2.00 since bbbbbbbb")
    assert lines[2] == f"decide: {decide} (re-measures the undecided steps)"
    several = _screen(_screen_report([undecided, _timing("(pixels=64)", Confirmation.UNDECIDED, decide_command=decide)]))
    assert [line for line in several if "decide:" in line] == [f"decide: {decide} (re-measures the undecided steps)"]


def test_a_long_benchmark_name_is_cut_before_its_change_and_commit_are():
    params = "(workload='P1', mode='eager', dtype='float32', device='cpu')"
    assert short_params(params) == "(P1, eager, float32, cpu)" and short_params("(case='a@1.5')") == "(a@1.5)"
    finding = _timing(params, Confirmation.CONFIRMED, name="bench_engine.PathThroughput." + "track_ns_per_pixel_step" * 6)
    [line] = [line for line in _screen(_screen_report([finding])) if line.startswith("REGRESSED")]
    assert len(line) <= WIDTH and "…: 10 ms -> 20 ms, x2.00 since bbbbbbbb" in line


def test_the_summary_says_what_was_skipped_and_why():
    skips = (Skipped(NO_BASELINE, ("h1", "h2", "h3")), Skipped(NO_CUDA, ("t(device='cuda')",)))
    line = summary_line(_screen_report([], skipped=4, skips=skips, exit=ExitCode.OK))
    assert line == ("summary: nothing to act on; 40 measured, 0 noise, 4 skipped: 3 image hashes (no baseline for "
                    "this machine class), 1 CUDA benchmark (no GPU here); exit 0")
    many = skips + tuple(Skipped(NO_VALGRIND, (f"c{i}",)) for i in range(3)) + (Skipped(UNKNOWN, ("x",)),)
    line = summary_line(_screen_report([], skipped=8, skips=many, exit=ExitCode.OK))
    assert line.startswith("summary: nothing to act on; 40 measured, 0 noise, 8 skipped: 3 image hashes (no "
                           "baseline for this machine class), ") and line.endswith(" more; exit 0")
    assert len(line) <= WIDTH


def test_failures_at_the_latest_commit_are_lines_of_their_own():
    many = tuple(f"bench_engine.EngineSweep.time_simulate(pixels={n})" for n in range(20))
    lines = _screen(_screen_report([], unmeasured=many, exit=ExitCode.UNMEASURED))
    assert lines[1].startswith("NOT MEASURED at cccccccc: 20 benchmarks failed there (bench_engine.EngineSweep")
    assert lines[1].endswith(")") and len(lines[1]) <= WIDTH and "20 not measured" in lines[-1]
    unbuilt = _screen(_screen_report([], unmeasured=many, built=False, exit=ExitCode.UNMEASURED))
    assert unbuilt[1] == "NOT MEASURED at cccccccc: nothing (the commit did not build, or its suite did not import)"


def test_every_machine_of_a_fleet_follows_the_same_rules():
    reports = {m: _screen_report([_hash(f"x{i:02d}_case") for i in range(10)], machine=m) for m in ("m1", "m2")}
    fleet = Judgement(reports=reports, failed={"m3": "HEAD 12345678 was not measured " * 10},
                        agreement=("determinism: both machines agree, 10 regressed on each",), facts=(),
                        exit=ExitCode.UNMEASURED)
    lines = screen_lines(fleet)
    assert all(len(line) <= WIDTH for line in lines)
    assert sum(line.startswith("CHANGED image hash of 10 golden cases") for line in lines) == 2
    assert [line for line in lines if line.startswith("summary:")] == [summary_line(r) for r in reports.values()]
    assert lines[-3:] == ["machines: m1, m2, m3", "determinism: both machines agree, 10 regressed on each",
                          "fleet: exit 2 (the worst of the machines'; 2 wins)"]
