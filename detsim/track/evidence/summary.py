"""The words of a bundle: ``summary.md`` and what the command prints, both opening with the comparison
with the previous bundle."""

from __future__ import annotations

from typing import Callable, Sequence

from detsim.track.evidence import pytest_runs as pr
from detsim.track.base.status import Status
from detsim.track.evidence.durations import FASTER_MIN_SAMPLES, MOVE_FLOOR_S, MOVE_RATIO
from detsim.track.evidence.outcomes import BundleResults, BundleChanges, DeviceRun, DurationMove, TestResult

SLOWEST = 10  # tests in summary.md's slowest-tests table
LISTED = 10  # items shown per listing of the change list

Item = tuple[str, list[str]]  # a line and its sub-lines


def run_line(run: DeviceRun) -> str:
    """One device's run in a line: counts, wall time, and the status when it is not ``ok``."""
    counts = ", ".join(f"{n} {o}" for o, n in run.counts.items() if n) or "no tests"
    wall = f" in {run.wall_s:.1f} s" if run.wall_s is not None else ""
    return f"{counts}{wall}" + ("" if run.status == Status.OK else f" [{run.status.upper()}: {run.why}]")


def _code(text: str, markdown: bool) -> str:
    return f"`{text}`" if markdown else text


def _line(level: int, text: str, markdown: bool) -> str:
    return ("  " * level + "- " if markdown else "  " * (level + 1)) + text


def _listing(title: str, items: list[Item], markdown: bool) -> list[str]:
    """A titled list; each item is a line and its sub-lines (shown indented)."""
    lines = [_line(0, f"{title} ({len(items)}):", markdown)]
    for text, sub in items[:LISTED]:
        lines += [_line(1, text, markdown)] + [_line(2, line, markdown) for line in sub]
    if len(items) > LISTED:
        lines.append(_line(1, f"... and {len(items) - LISTED} more", markdown))
    return lines


def _test_items(tests: Sequence, describe: Callable[..., str], markdown: bool) -> list[Item]:
    return [(f"{_code(t.device, markdown)} {_code(t.nodeid, markdown)}: {describe(t)}", []) for t in tests]


def _timing(t: DurationMove) -> str:
    return f"{t.was_s:.3f} s -> {t.now_s:.3f} s ({t.ratio:g}x)"


def _sections(comparison: BundleChanges, markdown: bool) -> list[tuple[str, list[Item]]]:
    """The change list's sections, in the order of docs/evidence.md."""
    rule = f"> {MOVE_RATIO:g}x and > {MOVE_FLOOR_S:g} s"
    return [
        ("new failures", _test_items(comparison.new_failures, lambda t: (t.message or t.outcome)
                                     + ("" if t.was else " (new test)"), markdown)),
        ("fixed", _test_items(comparison.fixed, lambda t: f"{t.was} -> {t.now}", markdown)),
        ("new warnings", [(f"{_code(w.text, markdown)} ({w.location}; {', '.join(w.devices)})", [])
                          for w in comparison.new_warnings]),
        (f"slower ({rule}, best load-corrected time)", _test_items(comparison.slower, _timing, markdown)),
        (f"faster ({rule}, against the best earlier time)",
         _test_items(comparison.faster, _timing, markdown)),
        ("changed artifacts", [(_code(a.file, markdown), [_code(d, markdown) for d in a.detail])
                               for a in comparison.changed_artifacts]),
        ("other outcome changes", _test_items(
            comparison.outcome_changes,
            lambda t: f"{t.was} -> {t.now}" + (f" ({t.skip_reason})" if t.skip_reason else ""), markdown)),
        ("tests added", _test_items(comparison.added, lambda t: "new", markdown)),
        ("tests removed", _test_items(comparison.removed, lambda t: "gone", markdown)),
        ("warnings gone", [(_code(w.text, markdown), []) for w in comparison.gone_warnings]),
        ("run status changes", [(f"{_code(r.device, markdown)}: {r.was} -> {r.now}", [])
                                for r in comparison.run_changes]),
    ]


def _notes(comparison: BundleChanges) -> list[str]:
    """What the change list adds below it: a busy machine, unjudged faster tests, a bad previous bundle."""
    notes = [f"{device}: the tests took a median {factor:g}x their previous time (a busier machine, or a "
             f"change that slows every test alike); per-test moves are judged after dividing it out"
             for device, factor in sorted(comparison.load_factors.items()) if factor >= MOVE_RATIO]
    if comparison.faster_unjudged:
        notes.append(f"{comparison.faster_unjudged} test(s) ran faster than their earlier time; not "
                     f"judged (fewer than {FASTER_MIN_SAMPLES} earlier measurements, any of which may be a load "
                     f"spike)")
    if comparison.previous_problems:
        notes.append(f"the previous bundle does not verify: {', '.join(comparison.previous_problems)}")
    return notes


def comparison_lines(comparison: BundleChanges | None, markdown: bool) -> list[str]:
    """The change list printed by the command and placed at the top of summary.md."""
    if comparison is None:
        return ["no previous bundle of this area: nothing to compare with (every failure counts as new)"]
    verdict = "changes" if comparison.changed else "no change"
    lines = [f"compared with {comparison.previous}: {verdict}"]
    for title, items in _sections(comparison, markdown):
        if items:
            lines += _listing(title, items, markdown)
    return lines + [_line(0, f"note: {n}", markdown) for n in _notes(comparison)]


def console_report(results: BundleResults, shown: object) -> str:
    """What the command prints: where the bundle is, per-device counts, the comparison, the verdict."""
    lines = [f"evidence {results.request.area}: {shown}"]
    lines += [f"  {d}: {run_line(r)}" for d, r in results.outcomes.runs.items()]
    lines += comparison_lines(results.comparison, markdown=False)
    lines.append(f"verdict: {results.verdict()} (exit {int(results.exit_code())})")
    return "\n".join(lines)


def render_summary(results: BundleResults, env: dict) -> str:
    """summary.md: verdict and comparison first, then runs, failures, skips, warnings, slowest tests."""
    comparison = comparison_lines(results.comparison, markdown=True)
    tests = results.outcomes.tests
    failing = [t for t in tests if t.failing]
    warnings = results.outcomes.warning_texts()
    slowest = sorted(tests, key=lambda t: -t.duration_s)[:SLOWEST]
    lines = [f"# Evidence: {results.request.area}, {results.stamp}", "",
             f"**Verdict: {results.verdict()}** (exit {int(results.exit_code())})", "",
             "## " + comparison[0][0].upper() + comparison[0][1:], *comparison[1:], ""]
    lines += _section("Runs", _runs(results, env))
    lines += _section(f"Failures ({len(failing)})", [
        f"- `{t.device}` `{t.nodeid}` ({t.outcome}): {t.message or '(no message)'}" for t in failing])
    lines += _reasons_section(tests, "skipped", "Skips by reason")
    if any(t.outcome == "xfailed" for t in tests):
        lines += _reasons_section(tests, "xfailed", "Expected failures by reason")
    lines += _section(f"Warnings ({len(warnings)})", [
        f"- `{w.text}` ({w.location}; {', '.join(w.devices)})" for w in warnings.values()])
    lines += _section(f"Slowest tests ({len(slowest)} of {len(tests)})", [
        "| wall (s) | device | test | outcome |", "|---|---|---|---|",
        *(f"| {t.duration_s:.3f} | {t.device} | `{t.nodeid}` | {t.outcome} |" for t in slowest)])
    logs = "".join(f", `{r.log}`" for r in results.outcomes.runs.values() if r.status != "not run")
    retimed = "`retime/` (re-timing runs), " if any(t.retimed_s for t in tests) else ""
    return "\n".join(lines + _section("Files", [
        f"`collect.log`{logs} (whole pytest output), the junit XML of each run, {retimed}`env.json`, "
        "`commands.txt` (re-runnable), `results.json` (per test), this summary, and `sha256.txt` (check with "
        "`detsim-track evidence --verify <this folder>`, or with `sha256sum -c sha256.txt` inside it)."]))


def _section(title: str, lines: list[str]) -> list[str]:
    return [f"## {title}", "", *(lines or ["None."]), ""]


def _runs(results: BundleResults, env: dict) -> list[str]:
    selection = " ".join(results.request.selection) or "(pytest's default: testpaths)"
    cuda = env["cuda"]
    gpu = cuda["device"] if cuda.get("available") else f"absent ({cuda.get('reason')})"
    code = (f"commit `{env['commit'][:12]}` on `{env.get('branch')}`{' (dirty)' if env.get('dirty') else ''}"
            if env.get("commit") else "not a git work tree")
    lines = [f"Selection `{selection}` from `{results.request.cwd}`; {results.collect.collected} tests "
             f"collected ({results.collect.why}).",
             f"Code: {code}. Python {env['python']}, torch {env['torch']}, pytest {env.get('pytest')}; "
             f"CPU {env['cpu']}, {env['torch_threads']} threads; CUDA {gpu}.", "",
             "| device | status | pytest exit | " + " | ".join(pr.OUTCOMES) + " | wall (s) |",
             "|---|---|---|" + "---|" * len(pr.OUTCOMES) + "---|"]
    for device, run in results.outcomes.runs.items():
        wall = f"{run.wall_s:.1f}" if run.wall_s is not None else "-"
        counts = " | ".join(str(run.counts[o]) for o in pr.OUTCOMES)
        lines.append(f"| {device} | {run.status} | {run.why} | {counts} | {wall} |")
    return lines


def _reasons_section(tests: Sequence[TestResult], outcome: str, title: str) -> list[str]:
    groups: dict[str, list[TestResult]] = {}
    for t in tests:
        if t.outcome == outcome:
            groups.setdefault(t.skip_reason or "(no reason given)", []).append(t)
    return _section(f"{title} ({sum(map(len, groups.values()))})", [
        f"- {reason} ({len(group)}): {', '.join(f'`{t.device}` `{t.nodeid}`' for t in group[:5])}"
        f"{', ...' if len(group) > 5 else ''}"
        for reason, group in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))])
