"""``detsim-track regressions``: what changed in the stored asv history, where, and since which commit (its
rules, output and exit status: docs/tracking.md, "The verdict"). The one command that judges: it records the
judgement in ``reports/<STAMP>/verdict.json`` (every view reads that file), ``verdict.txt`` and ``verdict.md``
(:mod:`detsim.track.report.markdown`, also appended to ``$GITHUB_STEP_SUMMARY`` where that is set), each
atomically, replacing only this command's, then moves ``reports/latest`` to them
(:mod:`detsim.track.judge.verdict`). Here:
the options, the files and ``--explain``; :mod:`detsim.track.judge.analysis` judges and
:mod:`detsim.track.judge.confirm` re-measures (a target's suspects: its installed commits, plugged in from
:mod:`detsim.track.target.retiming`)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import replace
from pathlib import Path

from detsim.track.base.exitcodes import ExitCode
from detsim.track.commands import count, refuse
from detsim.track.base.output import REPORTS, OutputError, add_json_option, atomic_write_text, \
    check_output_file, is_report_of, json_text, utc_stamp, write_json
from detsim.track.base.provenance import repo_root
from detsim.track.base.where import OWN_FAMILIES, read_where, where_note
from detsim.track.judge.confirm import BUDGET_S, MAX_REMEASURED, Measurer, confirm
from detsim.track.judge.results_files import ResultsError, load_config, target_results
from detsim.track.judge.text import report_lines, screen_lines
from detsim.track.judge.analysis import analyse
from detsim.track.judge.verdict import COMMAND, JSON_FILE, MARKDOWN_FILE, TEXT_FILE, Judgement, Report, VerdictError, \
    check_latest, judgement_of, point_latest
from detsim.track.report.asvpage import STATUS_PAGE, html_folder
from detsim.track.report.markdown import SUMMARY_ENV, append_to_summary, markdown_lines, page_link

HELP = "report benchmarks whose latest value regressed in the stored asv history (the default command)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, default=None,
                        help="project checkout holding asv.conf.json (default: the enclosing git work tree)")
    parser.add_argument("--machine", action="append", default=None,
                        help="asv machine name; repeat for several (default: every machine recorded, each "
                             "judged on its own series, then which machines agree)")
    parser.add_argument("--remeasure", type=count, default=MAX_REMEASURED, metavar="N",
                        help="re-measure at most N timing suspects, the largest first, interleaved at their last "
                             f"good and first bad commits (default {MAX_REMEASURED}; 0: report them unconfirmed)")
    parser.add_argument("--remeasure-budget", type=_seconds, default=BUDGET_S, metavar="S",
                        help=f"seconds of re-measuring at most (default {BUDGET_S:.0f})")
    parser.add_argument("--explain", action="store_true",
                        help="when something regressed, explain it across its commits (detsim-track explain: "
                             "the functions that grew, the first changed quantity or op), with an evidence bundle")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print the full report (every finding with its evidence, the notes) instead of one "
                             "line per finding that needs action")
    parser.add_argument("--out-root", type=Path, default=None, metavar="DIR",
                        help=f"write the full report to DIR/<STAMP>/{TEXT_FILE} and {JSON_FILE} "
                             f"(default DIR: {REPORTS} of the project)")
    add_json_option(parser, "the report")


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text}")
    return value


def _twins(folder: Path, machine: str) -> dict[str, str | None] | None:
    """A target's commits and the commit whose results each took, as its recording holds them."""
    from detsim.track.target.project import Project

    try:
        return Project(folder).twins(machine)
    except ValueError as exc:
        raise ResultsError(str(exc)) from None


def _where_measured(report: Report, root: Path) -> Report:
    """``report`` with a note saying where its commits' measures were taken, where a Dask cluster's workers took
    some: a target's as the recording's rows store it, detsim's own as its results' sidecar does
    (:mod:`~detsim.track.base.where`)."""
    if not report.target_results:
        folder = root / load_config(root).get("results_dir", "results") / report.machine
        try:
            line = where_note(report.machine, report.commits, read_where(folder), OWN_FAMILIES)
        except ValueError as exc:
            raise ResultsError(str(exc)) from None
        return replace(report, notes=(*report.notes, line)) if line else report
    from detsim.track.recorder.cluster import measured_where
    from detsim.track.target.project import Project

    try:
        line = measured_where(Project(Path(report.target_results)), report.machine, report.commits)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ResultsError(f"{report.target_results}: a row of the recording is not readable ({exc})") from None
    return replace(report, notes=(*report.notes, line)) if line else report


def _measurer(root: Path) -> contextlib.AbstractContextManager[Measurer | None]:
    """How the project's timing suspects are re-measured: a target's installed commits, side by side, for a
    target's recording; detsim's own (None) for detsim."""
    if target_results(root, load_config(root)) is None:
        return contextlib.nullcontext()
    from detsim.track.target.retiming import target_measurer

    return target_measurer(root)


def report_files(folder: Path) -> tuple[Path, Path]:
    """The full report's text and JSON files in ``folder``, checked before the work: each new, or a previous
    report of this command (a rerun within the same second); anything else there is never replaced (the
    Markdown file beside them neither)."""
    text, data = folder / TEXT_FILE, folder / JSON_FILE
    check_output_file(data, "report", COMMAND)
    for other in (text, folder / MARKDOWN_FILE):
        if other.exists() and not (other.is_file() and is_report_of(data, COMMAND)):
            raise OutputError(f"report {other}: exists and is not this command's; refusing to replace it")
    return text, data


def run(args: argparse.Namespace) -> int:
    root = (args.repo or repo_root() or Path.cwd()).resolve()
    folder = (args.out_root or root / REPORTS) / utc_stamp()
    try:
        if args.json is not None:
            check_output_file(args.json, "--json", COMMAND)
        text_file, json_file = report_files(folder)
        check_latest(folder.parent)
        with _measurer(root) as measurer:
            judgement = confirm(analyse(root, args.machine, _twins), root, limit=args.remeasure,
                                budget_s=args.remeasure_budget, progress=_say, repo=args.repo, measurer=measurer)
        judgement = judgement_of({m: _where_measured(r, root) for m, r in judgement.reports.items()}, judgement.failed)
    except (ResultsError, OutputError, VerdictError) as exc:
        return refuse(f"detsim-track: {exc}")
    full = report_lines(judgement)
    data = judgement.as_json()
    page = page_link(folder, html_folder(root, load_config(root)) / STATUS_PAGE)
    markdown = "\n".join(markdown_lines(judgement, page)) + "\n"
    written = _write_report(text_file, json_file, full, data, markdown)
    if written:
        _to_summary(markdown)
    if args.verbose:
        lines = full
    else:
        notes = sum(len(r.notes) for r in judgement.reports.values()) + len(judgement.facts)
        lines = screen_lines(judgement)
        if written:
            where = folder.relative_to(Path.cwd()) if folder.is_relative_to(Path.cwd()) else folder
            there = f", {notes} note{'s' * (notes != 1)}" if notes else ""  # the path is never cut
            lines = [*lines, f"full report{there} (-v prints it): {where}/{TEXT_FILE} and {JSON_FILE}"]
    print("\n".join(lines))
    if not written:
        return judgement.exit or ExitCode.UNMEASURED
    if args.json is not None:
        try:
            write_json(args.json, data)
        except OSError as exc:  # the place changed since the check: say so; a verdict's 1 or 2 stays
            print(f"detsim-track: --json {args.json}: not written ({exc.strerror or exc})", file=sys.stderr)
            return judgement.exit or ExitCode.UNMEASURED
    if args.explain and judgement.exit == ExitCode.REGRESSED:
        _explain(root, judgement, json_file)
    return judgement.exit


def _say(line: str) -> None:
    """A progress line, on stderr so that the verdict alone is on stdout."""
    print(line, file=sys.stderr, flush=True)


def _write_report(text_file: Path, json_file: Path, lines: list[str], data: dict, markdown: str) -> bool:
    """The full report's three files (JSON, text, Markdown), each atomically, all or none, then the link to the
    latest verdict moved to them; False (and one line) when the place changed since it was checked."""
    markdown_file = json_file.parent / MARKDOWN_FILE
    try:
        atomic_write_text(json_file, json_text(data))
        try:
            atomic_write_text(text_file, "\n".join(lines) + "\n")
            atomic_write_text(markdown_file, markdown)
            point_latest(json_file.parent)
        except OSError:
            for written in (json_file, text_file, markdown_file):
                written.unlink(missing_ok=True)
            raise
    except OSError as exc:
        print(f"detsim-track: report {text_file.parent}: not written ({exc.strerror or exc})", file=sys.stderr)
        return False
    return True


def _to_summary(markdown: str) -> None:
    """The Markdown verdict appended to the job summary where ``$GITHUB_STEP_SUMMARY`` names one (a summary
    that cannot be written is said in one line; the verdict's exit status stays)."""
    try:
        append_to_summary(markdown)
    except OSError as exc:
        print(f"detsim-track: ${SUMMARY_ENV}: not appended to ({exc.strerror or exc})", file=sys.stderr)


def _explain(root: Path, judgement: Judgement, verdict: Path) -> None:
    """Run ``detsim-track explain`` on the verdict just written, its bundle in the verdict's report folder
    (its exit status does not change the verdict's)."""
    from detsim.track.commands import explain as cmd_explain

    if judgement.single is None:
        print("detsim-track: --explain explains one machine's verdict: give --machine", file=sys.stderr)
        return
    parser = argparse.ArgumentParser(prog="detsim-track explain")
    cmd_explain.add_arguments(parser)
    cmd_explain.run(parser.parse_args(["--root", str(root), "--machine", judgement.single.machine,
                                       "--verdict", str(verdict), "--out", str(verdict.parent / cmd_explain.AREA)]))
