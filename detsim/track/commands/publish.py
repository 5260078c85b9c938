"""``detsim-track publish``: the page of the latest verdict, built whole and swapped in: asv's page (``asv
publish`` run here), the status page beside it, asv's Regressions tab rewritten to the verdict's findings, and
the folder made offline.

Every verdict on the page is read from ``verdict.json`` (by default the latest, ``reports/latest``): nothing
is judged or re-measured here. What the page shows, what is refused and the exit status are docs/tracking.md's
("Reading the page"); a page that cannot be written is one line and exit 2, apart from the verdict's status.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Mapping

from detsim.track.base.exitcodes import BadInput, ExitCode
from detsim.track.commands import refuse
from detsim.track.base.output import REPORTS, atomic_write_bytes, atomic_write_text
from detsim.track.base.provenance import repo_root
from detsim.track.judge.family import Family
from detsim.track.judge.results_files import ResultsError, checkout_head, load_config, project_repo
from detsim.track.report.events import ASV_SCRIPT, add_asv_script, asv_script
from detsim.track.report.asvpage import FEED, HTML_DIR, LIST, STATUS_PAGE, TabError, add_status_link, html_folder, \
    read_index, replacing, tab, tab_json, vendor_pages
from detsim.track.report.page import is_ours, status_page
from detsim.track.judge.verdict import Judgement, Report, VerdictError, latest_file, read_verdict

HELP = "publish the latest verdict: asv's page, the status page beside it, the folder made offline, swapped in whole"
ASSET_CACHE = Path(".asv") / "www-assets"  # npm tarballs, relative to the project


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--html", type=Path, default=None,
                        help=f"the published folder, replaced whole (default: html_dir of asv.conf.json, {HTML_DIR})")
    parser.add_argument("--repo", type=Path, default=None,
                        help="project checkout holding asv.conf.json (default: the enclosing git work tree)")
    parser.add_argument("--verdict", type=Path, default=None, metavar="FILE",
                        help=f"the verdict to publish (default: {REPORTS}/latest/verdict.json of the project, "
                             "the last one `detsim-track regressions` wrote)")
    parser.add_argument("--machine", action="append", default=None,
                        help="publish this machine's verdict; repeat for several (default: every machine the "
                             "verdict judged, and which machines agree)")
    parser.add_argument("--target-results", type=Path, default=None, metavar="DIR",
                        help="a target's recorded results (what `detsim-track record` wrote; default: the verdict's "
                             "target_results): the page shows where the image of each parity finding departs")
    parser.add_argument("--assets", type=Path, default=None,
                        help="folder of the npm tarballs of asv's scripts (default: .asv/www-assets of the project)")


class PageError(Exception):
    """The page could not be built (one line); the published folder stays as it was."""


def check_html(html: Path) -> None:
    """Refuse to replace ``html`` unless it is absent, empty or asv's page, and any status page in it ours."""
    if html.is_symlink() or (html.exists() and not html.is_dir()):
        raise BadInput(f"--html {html}: not a folder; not replaced")
    if not html.exists():
        return
    if any(html.iterdir()) and not (html / "index.html").is_file():
        raise BadInput(f"--html {html}: not asv's page (no index.html); not replaced")
    status = html / STATUS_PAGE
    if status.is_symlink() or (status.exists() and not status.is_file()):
        raise BadInput(f"--html {html}: {STATUS_PAGE} is not a regular file; not replaced")
    if status.exists():
        try:
            text = status.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise BadInput(f"--html {html}: {STATUS_PAGE} cannot be read ({exc.strerror or exc}); not replaced") from exc
        if not is_ours(text):
            raise BadInput(f"--html {html}: {STATUS_PAGE} was not written by detsim-track publish; not replaced")
    if not os.access(html.parent, os.W_OK | os.X_OK):
        raise BadInput(f"--html {html}: {html.parent} is not writable")


def chosen(verdict: Judgement, path: Path, machines: list[str] | None, head: str | None) -> dict[str, Report]:
    """Machine -> its stored verdict, of ``machines`` (default every one judged); each must be judged there,
    at HEAD where ``head`` is known (a verdict of an older commit is never published as the latest)."""
    judged = verdict.reports
    missing = [m for m in machines or () if m not in judged]
    if missing:
        raise BadInput(f"{path}: no verdict on machine {', '.join(missing)} (judged: {', '.join(judged)}); "
                       "run `detsim-track regressions` for it first")
    picked = {m: judged[m] for m in machines} if machines else dict(judged)
    for machine, report in picked.items():
        if head and report.latest != head:
            raise BadInput(f"{path}: judged {report.latest[:8]} on {machine}, but HEAD is {head[:8]}: "
                           "run `detsim-track regressions` first")
    return picked


def asv_publish(root: Path, dest: Path) -> None:
    """asv's own page of the project's results, written to ``dest`` (:class:`PageError`: one line)."""
    done = subprocess.run([sys.executable, "-m", "asv", "publish", "--html-dir", str(dest)], cwd=root,
                          capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        raise PageError(f"`asv publish` failed ({lines[-1].strip() if lines else f'exit {done.returncode}'})")


def departures(report: Report, results: Path | None, root: Path) -> list[dict]:
    """Where the image of each parity finding of a target's verdict ``report`` departs, as ``detsim-track
    record`` stored it in ``results`` (default: the verdict's ``target_results``, under ``root``); none for
    detsim's own verdict. Each record gets the finding's ``case`` and first bad ``commit``, and its sentence."""
    results = results or (root / report.target_results if report.target_results else None)
    if results is None:
        return []
    from detsim.track.target.departure import sentence, stored

    found = []
    for finding in report.regressions:
        case = finding.series.case
        if finding.series.family == Family.PARITY and case and finding.first_bad:
            record = stored(results, finding.first_bad, case)
            if record is not None:
                found.append({**record, "case": case, "commit": finding.first_bad, "sentence": sentence(record)})
    return found


def run(args: argparse.Namespace) -> int:
    root = (args.repo or repo_root() or Path.cwd()).resolve()
    try:
        html = args.html or html_folder(root, load_config(root))
        path = args.verdict or latest_file(root / REPORTS)
        verdict = read_verdict(path)
        picked = chosen(verdict, path, args.machine, checkout_head(project_repo(root, load_config(root))))
        if args.target_results is not None:  # the flag names a target's recording: its page reads as a target's
            picked = {machine: replace(report, target_results=str(args.target_results))
                      for machine, report in picked.items()}
        check_html(html)
    except (BadInput, ResultsError, VerdictError) as exc:
        return refuse(f"detsim-track publish: {exc}")
    try:
        with replacing(html) as new:
            asv_publish(root, new)
            said = _write_page(new, verdict, picked, args.assets or root / ASSET_CACHE, shown=html,
                               departed=lambda report: departures(report, args.target_results, root))
    except (PageError, TabError) as exc:
        return refuse(f"detsim-track publish: the page was not written: {exc}")
    except OSError as exc:
        return refuse(f"detsim-track publish: the page was not written: {exc.filename or html}: "
                      f"{exc.strerror or exc}")
    for line in said[:-1]:
        print(line)
    print(f"detsim-track publish: wrote {html / STATUS_PAGE} ({said[-1]})")
    return ExitCode.OK


def _write_page(html: Path, verdict: Judgement, picked: Mapping[str, Report], assets: Path, shown: Path,
                departed) -> list[str]:
    """The status page, the Regressions tab, the link and the offline copies, into asv's page in ``html``
    (``shown``: where it will be; ``departed(report)``: a machine's departures); the lines to print, the last
    the page's summary."""
    index, benchmarks = read_index(html)
    text, summaries = status_page(verdict, picked, benchmarks, departed)
    listed = tab(picked, index, html) if index is not None else None
    said = []
    atomic_write_text(html / STATUS_PAGE, text)
    if listed is not None:
        atomic_write_text(html / LIST, tab_json(listed.entries))
        atomic_write_bytes(html / FEED, listed.feed)
        summaries.append(f"Regressions tab: the verdict's {len(listed.entries)} flagged finding"
                         f"{'s' * (len(listed.entries) != 1)}")
        if listed.missing:
            said.append(f"detsim-track publish: not in the Regressions tab, no graph of them on asv's page: "
                        f"{', '.join(listed.missing)}")
    page = html / "index.html"
    text = page.read_text(encoding="utf-8")
    linked = add_status_link(text)
    if linked is None:
        said.append(f"detsim-track publish: {shown / page.name} has no navigation bar: no link to {STATUS_PAGE} added")
    marked = add_asv_script(linked or text)  # the events on asv's graphs (None: a page without a head)
    if marked is not None:
        atomic_write_text(html / ASV_SCRIPT, asv_script(picked))
    if (marked or linked or text) != text:
        atomic_write_text(page, marked or linked)
    problem = vendor_pages(html, assets)
    if problem:
        said.append(f"detsim-track publish: offline copies not made: {problem}")
    return [*said, "; ".join(summaries)]
