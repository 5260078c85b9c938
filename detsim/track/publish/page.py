"""``status.html``: one self-contained file (inline CSS and SVG, no script, nothing fetched).

A ``status.html`` without :data:`MARK` is someone else's and is never replaced (:func:`is_ours`).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Mapping, Sequence

from detsim.track.base.exitcodes import ExitCode
from detsim.track.base.metrics import PARITY_MIN_R
from detsim.track.publish.fingerprints import CHANGED, NOT_COMPARABLE, NOT_REPRODUCIBLE, SAME, State
from detsim.track.publish.graphs import FLOOR, fmt, parity_svg, worst_case
from detsim.track.publish.rows import AMBER, GREEN, GREY, RED, Row

GENERATOR = "detsim-track publish"
MARK = f'<meta name="generator" content="{GENERATOR}">'
COLOURS = {GREEN: "#2e7d32", RED: "#c62828", AMBER: "#f29900", GREY: "#9e9e9e"}  # verdict cell backgrounds
CELLS = {SAME: ("#a5d6a7", "="), CHANGED: ("#c62828", "\u2260"), NOT_REPRODUCIBLE: ("#6a1b9a", "~"),
         NOT_COMPARABLE: ("#e0e0e0", "\u00b7")}
CELL_WORDS = {SAME: "same as previous", CHANGED: "changed", NOT_REPRODUCIBLE: "not reproducible",
              NOT_COMPARABLE: "not comparable here"}

CSS = """
body{font-family:sans-serif;margin:16px 24px;color:#212121;background:#fff}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:22px 0 6px}
.meta,.hint{color:#555;font-size:13px;margin:2px 0} code{background:#f3f3f3;padding:0 3px}
table.families{border-collapse:collapse;margin-top:8px}
table.families td,table.families th{border:1px solid #ccc;padding:6px 10px;text-align:left;vertical-align:top;font-size:14px}
td.verdict{width:130px;height:22px;font-weight:bold}
ul.items{margin:4px 0 0 16px;padding:0;font-size:13px}
.multiples{display:flex;flex-wrap:wrap;gap:6px}
svg.parity{border:1px solid #ddd;background:#fff} svg.parity.worst{border:3px solid #c62828}
svg .title{font-size:11px;font-weight:bold} svg .tick{font-size:9px;text-anchor:end;fill:#555}
svg .grid{stroke:#eee} svg .acceptance{stroke:#c62828;stroke-dasharray:5,3;stroke-width:1.5}
svg .accept-label{font-size:9px;fill:#c62828}
svg .line{fill:none;stroke:#1565c0;stroke-width:1.2}
svg .pt{stroke:#1565c0;stroke-width:1.2;fill:#1565c0} svg .pt.floor{fill:#fff} svg .pt.bad{fill:#c62828;stroke:#c62828}
svg .failed{font-size:10px;fill:#757575;text-anchor:middle}
table.strips{border-collapse:collapse;font-size:11px}
table.strips td,table.strips th{border:1px solid #fff;padding:0}
table.strips th.commit{writing-mode:vertical-rl;font-weight:normal;font-family:monospace;padding:2px}
table.strips th.case{text-align:right;font-weight:normal;padding-right:6px;white-space:nowrap}
table.strips td.cell{width:18px;height:16px;text-align:center;color:#212121}
table.strips td.changed,table.strips td.not-reproducible{color:#fff;font-weight:bold}
.legend span.swatch{display:inline-block;width:14px;height:12px;margin:0 4px 0 12px;vertical-align:middle}
table.commits td{font-size:12px;padding:1px 8px} table.commits td:first-child{font-family:monospace}
"""


@dataclass(frozen=True)
class History:
    """What the page draws besides the rows."""

    parity: Sequence[tuple[str, str, list[tuple[str, float | None]]]]  # (case, benchmark, points oldest first)
    determinism: Mapping[str, list[State]]  # case -> states per commit
    determinism_benchmarks: Mapping[str, str]  # case -> its 0/1 track's benchmark name


def is_ours(text: str) -> bool:
    """Whether an existing ``status.html`` was written by this command (it carries :data:`MARK`)."""
    return MARK in text


def _short(commit: str | None, subjects: Mapping[str, str]) -> str:
    return f'<code>{escape(commit[:8])}</code> {escape(subjects.get(commit, ""))}' if commit else "?"


def _link(text: str, href: str | None) -> str:
    return f'<a href="{escape(href)}">{escape(text)}</a>' if href else escape(text)


def _title(text: str | None) -> str:
    return f' title="{escape(text)}"' if text else ""


def family_table(rows: Sequence[Row], report: Mapping) -> str:
    subjects, order = report.get("subjects", {}), list(report.get("commits", []))
    out = ['<table class="families"><tr><th>family</th><th>verdict</th><th>commit</th><th>details</th></tr>']
    for row in rows:
        commits = sorted({i.commit for i in row.items if i.commit}, key=lambda c: order.index(c) if c in order else -1)
        where = "<br>".join(f"since {_short(c, subjects)}" for c in commits) or f"at {_short(report.get('latest'), subjects)}"
        items = "".join(f"<li{_title(i.evidence)}>{_link(i.text, i.href)}</li>" for i in row.items)
        items = f'<ul class="items">{items}</ul>' if items else ""
        text = "#fff" if row.status in (GREEN, RED) else "#212121"
        out.append(f'<tr class="family" data-family="{escape(row.family)}" data-status="{escape(row.status)}">'
                   f'<td class="name">{escape(row.family)}</td>'
                   f'<td class="verdict" style="background:{COLOURS[row.status]};color:{text}">{escape(row.verdict)}</td>'
                   f'<td class="commit">{where}</td><td class="summary">{escape(row.summary)}{items}</td></tr>')
    out.append("</table>")
    return "".join(out)


def parity_section(history: History, subjects: Mapping[str, str], graph_href) -> str:
    if not history.parity:
        return "<h2>Parity</h2><p class=\"hint\">No parity track recorded.</p>"
    latest = {case: (points[-1][1] if points else None) for case, _, points in history.parity}
    worst = worst_case(latest)
    ordered = sorted(history.parity, key=lambda c: (c[0] != worst, c[0]))
    figures = "".join(parity_svg(case, points, worst=case == worst, subjects=subjects, href=graph_href(bench))
                      for case, bench, points in ordered)
    worst_text = f"worst at the latest commit: <b>{escape(worst)}</b>, 1 - r = {escape(fmt(latest[worst]))}" if worst else ""
    return (f"<h2>Parity with nanoBragg.c: 1 - r per golden case</h2>"
            f'<p class="hint">Log scale, commits oldest to newest left to right; hollow markers sit on the floor '
            f"(1 - r &lt;= {FLOOR:.0e}, exact agreement included); the dashed red line is the acceptance line "
            f"r &gt;= {PARITY_MIN_R}. {worst_text}</p><div class=\"multiples\">{figures}</div>")


def determinism_section(history: History, commits: Sequence[str], subjects: Mapping[str, str], graph_href) -> str:
    if not history.determinism:
        return "<h2>Determinism</h2><p class=\"hint\">No image hash recorded.</p>"
    legend = "".join(f'<span class="swatch" style="background:{CELLS[s][0]}"></span>{CELL_WORDS[s]}'
                     for s in (SAME, CHANGED, NOT_REPRODUCIBLE, NOT_COMPARABLE))
    head = "".join(f'<th class="commit" title="{escape(subjects.get(c, ""))}">{escape(c[:8])}</th>' for c in commits)
    body = []
    for case, states in history.determinism.items():
        by_commit = {s.commit: s for s in states}
        bench = history.determinism_benchmarks.get(case)
        name = f'<a href="{escape(graph_href(bench))}">{escape(case)}</a>' if bench else escape(case)
        cells = []
        for commit in commits:
            s = by_commit.get(commit) or State(commit, NOT_COMPARABLE, "not recorded")
            colour, symbol = CELLS[s.state]
            cells.append(f'<td class="cell {s.state.replace(" ", "-")}" style="background:{colour}" data-state="{s.state}" '
                         f'title="{escape(commit[:8])}: {CELL_WORDS[s.state]} ({escape(s.why)})">{symbol}</td>')
        body.append(f'<tr class="strip" data-case="{escape(case)}"><th class="case">{name}</th>{"".join(cells)}</tr>')
    changed = sum(s.state == CHANGED for states in history.determinism.values() for s in states)
    irreproducible = sum(s.state == NOT_REPRODUCIBLE for states in history.determinism.values() for s in states)
    counts = f"{changed} change(s)" + (f" and {irreproducible} not reproducible" if irreproducible else "")
    return (f"<h2>Determinism: each golden case's image against the previous recorded commit</h2>"
            f'<p class="hint legend">{legend} &mdash; {counts} in this history; hover a cell for why.</p>'
            f'<table class="strips"><tr><th></th>{head}</tr>{"".join(body)}</table>')


def commits_table(commits: Sequence[str], subjects: Mapping[str, str]) -> str:
    rows = "".join(f"<tr><td>{escape(c[:8])}</td><td>{escape(subjects.get(c, ''))}</td></tr>" for c in reversed(commits))
    return f'<h2>Recorded commits (newest first)</h2><table class="commits">{rows}</table>'


VERDICT_WORDS = {ExitCode.OK: "all good", ExitCode.REGRESSED: "something regressed",
                 ExitCode.UNMEASURED: "something could not be measured"}
SERVE_HINT = ('<p class="hint">This page needs no network and opens from disk. asv\'s interactive graphs '
              '(<a href="index.html">index.html</a>, and the links below) load their data over HTTP: serve this '
              "folder with <code>.venv/bin/asv preview</code> or <code>python -m http.server -d reports/html "
              "-b 127.0.0.1 8080</code> and open <code>http://127.0.0.1:8080/status.html</code>.</p>")


def document(title: str, body: str) -> str:
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">{MARK}'
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>{body}</body></html>\n")


def machine_section(report: Mapping, rows: Sequence[Row], history: History, graph_href) -> str:
    """One machine's verdict: its family table, notes, parity graphs, determinism strips and commits.
    ``graph_href(benchmark)``: the address of a benchmark's graph in asv's page."""
    subjects, commits = report.get("subjects", {}), list(report.get("commits", []))
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.get("notes", []))
    code = report.get("exit")
    return (f'<section class="machine" data-machine="{escape(str(report.get("machine", "")))}">'
            f'<p class="meta">machine <b>{escape(str(report.get("machine", "?")))}</b>, {len(commits)} commits recorded; '
            f"latest {_short(report.get('latest'), subjects)}; verdict: exit {escape(str(code))} "
            f"({VERDICT_WORDS.get(code, '?')}); generated {escape(str(report.get('generated_at', '')))}</p>"
            f"{family_table(rows, report)}"
            f'{f"<h2>Notes</h2><ul>{notes}</ul>" if notes else ""}'
            f"{parity_section(history, subjects, graph_href)}"
            f"{determinism_section(history, commits, subjects, graph_href)}"
            f"{commits_table(commits, subjects)}</section>")


def single_page(latest: str, section: str) -> str:
    """The page of one machine, from its :func:`machine_section`."""
    return document(f"detsim status: {latest[:8]}", "<h1>detsim: the latest verdict</h1>" + SERVE_HINT + section)


def fleet_html(fleet: Mapping, sections: Sequence[str]) -> str:
    """The page of several machines on one history: ``fleet`` is the stored verdict of several machines (its
    agreement lines, cross-machine facts, machines not judged and exit code), ``sections`` the
    :func:`machine_section` of each machine judged."""
    code = fleet.get("exit")
    machines = list(fleet.get("machines", {}))
    agree = "".join(f"<li>{escape(line)}</li>" for line in fleet.get("agreement", []))
    facts = "".join(f"<li>{escape(line)}</li>" for line in fleet.get("facts", []))
    failed = "".join(f"<li>{escape(m)}: not judged ({escape(why)})</li>" for m, why in fleet.get("not_judged", {}).items())
    toc = " &middot; ".join(f'<a href="#machine-{escape(m)}">{escape(m)}</a>' for m in machines)
    body = (f"<h1>detsim: the latest verdict on {len(machines)} machines</h1>"
            f'<p class="meta">verdict: exit {escape(str(code))} ({VERDICT_WORDS.get(code, "?")}); machines: {toc}</p>'
            + SERVE_HINT
            + f'<h2>Do the machines agree?</h2><ul class="agreement">{agree}{facts}{failed}</ul>'
            + "".join(f'<h2 id="machine-{escape(m)}">Machine {escape(m)}</h2>{section}'
                      for m, section in zip(machines, sections)))
    return document(f"detsim status: {len(machines)} machines", body)

