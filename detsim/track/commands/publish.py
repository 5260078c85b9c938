"""``detsim-track publish``: after ``asv publish``, a status page beside asv's and the folder made offline.

What the page shows, what is refused and the exit status are docs/tracking.md's ("Reading the page").
Timing steps are never re-measured here: their outcomes are read from ``.asv/confirmations.json``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from detsim.track.base.exitcodes import ExitCode
from detsim.track.commands import refuse
from detsim.track.runtime.output import atomic_write_bytes, atomic_write_text
from detsim.track.base.provenance import repo_root
from detsim.track.history.asvresults import load_recorded, recorded_machines
from detsim.track.history.jsonc import ResultsError, load_config
from detsim.track.history.series import build_series
from detsim.track.confirm.apply import confirm_fleet, confirm_report
from detsim.track.verdict.analysis import Report, analyse, analyse_fleet
from detsim.track.publish.fingerprints import determinism_states
from detsim.track.publish.links import STATUS_PAGE, add_status_link, graph_url
from detsim.track.publish.page import History, fleet_html, is_ours, machine_section, single_page
from detsim.track.publish.regressions_tab import FEED, LIST, TabError, has_tab, read_index, tab, tab_json
from detsim.track.publish.rows import family_rows, presence
from detsim.track.publish.vendor import vendor_pages

HELP = "after `asv publish`: write status.html beside asv's page and make the published folder work offline"
ASSET_CACHE = Path(".asv") / "www-assets"  # npm tarballs, relative to the project


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--html", type=Path, default=None,
                        help="asv's published folder (default: html_dir of asv.conf.json, reports/html)")
    parser.add_argument("--repo", type=Path, default=None,
                        help="project checkout holding asv.conf.json (default: the enclosing git work tree)")
    parser.add_argument("--machine", action="append", default=None,
                        help="asv machine name; repeat for several (default: every machine recorded, each with "
                             "its own verdict, and which machines agree)")
    parser.add_argument("--assets", type=Path, default=None,
                        help="folder of the npm tarballs of asv's scripts (default: .asv/www-assets of the project)")


class BadInput(Exception):
    """One line naming the input; exit 2 before anything is written."""


def check_html(html: Path) -> Path:
    """The status page's path in ``html``, after checking the folder holds asv's page and nothing foreign."""
    if not (html / "index.html").is_file():
        raise BadInput(f"--html {html}: no asv page there (no index.html; run `asv publish` first)")
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
    if not os.access(html, os.W_OK | os.X_OK) or not os.access(html / "index.html", os.W_OK):
        raise BadInput(f"--html {html}: not writable")
    return status


def machine_page(root: Path, report: Report) -> tuple[str, list]:
    """One machine's section of the page and its rows, from its verdict and what ``root`` stores for it."""
    recorded = load_recorded(root, report.machine)
    series = build_series(recorded.files, recorded.benchmarks, recorded.config)
    note = next((n for n in report.notes if n.startswith("image hashes not compared")), None)
    machine = report.machine  # links show this machine's series only
    rows = family_rows(report.as_json(), presence(series, report.latest), recorded.benchmarks, note, machine)
    parity = {}
    for s in series:
        if s.family == "parity" and s.case and len(s.points) >= len(parity.get(s.case, ("", "", []))[2]):
            parity[s.case] = (s.case, s.name, [(p.commit, p.value) for p in s.points])
    history = History(
        parity=[parity[c] for c in sorted(parity)],
        determinism=determinism_states(root, series, report.commits),
        determinism_benchmarks={s.case: s.name for s in series if s.family == "determinism" and s.case})
    section = machine_section(report.as_json(), rows, history,
                              lambda bench: graph_url(bench, "", recorded.benchmarks, machine=machine))
    return section, rows


def build_page(root: Path, machines: list[str] | None) -> tuple[str, list[str], list[Report]]:
    """The status page's text, one summary per machine (``family verdict, ...``) and the machines' verdicts
    (with several machines, each machine's and where they agree); timing steps are not re-measured."""
    machines = machines or recorded_machines(root)
    if len(machines) <= 1:
        report = confirm_report(analyse(root, machines[0] if machines else None), root, limit=0)
        section, rows = machine_page(root, report)
        return single_page(report.latest, section), [", ".join(f"{r.family} {r.verdict}" for r in rows)], [report]
    fleet = confirm_fleet(analyse_fleet(root, machines), root, limit=0)
    sections, summaries = [], []
    for machine, report in fleet.reports.items():
        section, rows = machine_page(root, report)
        sections.append(section)
        summaries.append(f"{machine}: " + ", ".join(f"{r.family} {r.verdict}" for r in rows))
    return fleet_html(fleet.as_json(), sections), summaries, list(fleet.reports.values())


def run(args: argparse.Namespace) -> int:
    root = (args.repo or repo_root() or Path.cwd()).resolve()
    try:
        html = args.html
        if html is None:
            html = root / load_config(root).get("html_dir", "reports/html")
        status = check_html(html)
        index = read_index(html) if has_tab(html) else None
        text, summaries, reports = build_page(root, args.machine)
        listed = tab(reports, index, html) if index is not None else None
    except (BadInput, ResultsError, TabError) as exc:
        return refuse(f"detsim-track publish: {exc}")
    atomic_write_text(status, text)
    if listed is not None:
        atomic_write_text(html / LIST, tab_json(listed.entries))
        atomic_write_bytes(html / FEED, listed.feed)
        summaries.append(f"Regressions tab: the verdict's {len(listed.entries)} flagged finding"
                         f"{'s' * (len(listed.entries) != 1)}")
        if listed.missing:
            print(f"detsim-track publish: not in the Regressions tab, no graph of them on asv's page: "
                  f"{', '.join(listed.missing)}")
    index = html / "index.html"
    linked = add_status_link(index.read_text(encoding="utf-8"))
    if linked is None:
        print(f"detsim-track publish: {index} has no navigation bar: no link to {STATUS_PAGE} added")
    elif linked != index.read_text(encoding="utf-8"):
        atomic_write_text(index, linked)
    vendored = vendor_pages(html, args.assets or root / ASSET_CACHE)
    if vendored.problem:
        print(f"detsim-track publish: offline copies not made: {vendored.problem}")
    print(f"detsim-track publish: wrote {status} ({'; '.join(summaries)})")
    return ExitCode.OK
