"""``status.html``: the latest verdict of one machine or several, one self-contained file (inline CSS and SVG,
no script, nothing fetched), drawn from the stored verdict alone.

Its parts: one row per family with the latest verdict, its colour and its links into asv's graphs (the families
and what each colour means are docs/tracking.md's, "Reading the page"), the verdict's notes, the parity
histories on a log scale of 1 - r, the determinism strips, where a target's image departs from the reference
(for its parity findings), and the recorded commits. A ``status.html`` without :data:`MARK` is someone else's
and is never replaced (:func:`is_ours`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape
from typing import Callable, Mapping, Sequence

from detsim.track.base.exitcodes import MEANING, worst as worst_exit
from detsim.track.base.metrics import PARITY_MIN_R
from detsim.track.report.asvpage import graph_url
from detsim.track.judge.fingerprints import CHANGED, NOT_COMPARABLE, NOT_REPRODUCIBLE, SAME, State
from detsim.track.judge.family import Family
from detsim.track.judge.finding import Confirmation
from detsim.track.judge.text import View, finding_line
from detsim.track.judge.verdict import Judgement, Report
from detsim.track.report.events import events_section, svg_key, svg_marks

GENERATOR = "detsim-track publish"
MARK = f'<meta name="generator" content="{GENERATOR}">'

# ---- the family rows -------------------------------------------------------------------------------------
# A timing finding whose confirmation says ``undecided`` or ``noise`` does not make a row red; only undecided
# steps make it grey (never amber: nothing is known to be wrong).
ROWS = (Family.TIMING, Family.PEAK_MEMORY, Family.COUNTED_COST, Family.PARITY, Family.IMAGE_CHANGED)
MERGED = {Family.THROUGHPUT: Family.TIMING, Family.CASES_CHANGED: Family.IMAGE_CHANGED,
          Family.IMAGE_FINGERPRINT: Family.IMAGE_CHANGED, Family.RUNS_DIFFER: Family.IMAGE_CHANGED}
# the determinism row's words by the labels of its findings, the first that applies (finding.FAMILY_LABELS)
DETERMINISM_WORDS = (("NONDETERMINISTIC", "not reproducible"), ("CHANGED", "changed"))
HIDDEN = (Family.MACHINE_REFERENCE, Family.MACHINE_CLASS)  # the machine's own speed and class: context, not verdicts
GREEN, RED, AMBER, GREY = "ok", "regressed", "attention", "not measured"
UNDECIDED = (Confirmation.SUSPECT, Confirmation.UNDECIDED)  # timing confirmations of a step not re-measured
NOT_COUNTED = (*UNDECIDED, Confirmation.NOISE)  # timing confirmations that do not make a row red
NOTHING_RECORDED = "no benchmark of this family recorded"
# a target's cost row where its recording has no instruction counts: what was not asked for (docs/target-counts.md)
TARGET_UNCOUNTED = ("not counted for this target: its spec's count_instructions is off (true counts each case's "
                    "whole process under callgrind: docs/target-counts.md)")


@dataclass
class Presence:
    """How a family's series stand at the latest commit."""

    measured: int = 0
    failed: list[str] = field(default_factory=list)  # series labels
    skipped: int = 0


def presence(families: Mapping[str, Mapping]) -> dict[str, Presence]:
    """Row family -> how its series stand at the latest commit, from the verdict's ``families`` (family ->
    ``measured``, ``failed`` labels, ``skipped``); the machine's own speed and class are left out."""
    out: dict[str, Presence] = {}
    for family, state in families.items():
        if family in HIDDEN:
            continue
        row = out.setdefault(MERGED.get(family, family), Presence())
        row.measured += state["measured"]
        row.failed.extend(state["failed"])
        row.skipped += state["skipped"]
    return out


@dataclass(frozen=True)
class Item:
    text: str
    href: str | None = None
    commit: str | None = None  # the first bad commit it names
    evidence: str | None = None  # what decided the confirmation (shown on hover)


@dataclass(frozen=True)
class Row:
    family: Family
    status: str  # GREEN, RED, AMBER or GREY
    verdict: str  # the words shown in the coloured cell
    summary: str
    items: tuple[Item, ...] = ()


def family_rows(report: Report, present: Mapping[str, Presence], benchmarks: Mapping[str, Mapping],
                note_not_comparable: str | None = None, machine: str | None = None) -> list[Row]:
    """The rows of the verdict ``report``: :data:`ROWS` first, then any other
    family with series. ``note_not_comparable``: why determinism was not compared here, if it was not;
    ``machine``: links show that machine's series only (several machines on one history)."""
    findings: dict[str, list[Mapping]] = {}
    for record in (f.to_dict() for f in report.regressions):
        family = record.get("family", Family.OTHER_TRACK)
        findings.setdefault(MERGED.get(family, family), []).append(record)
    extra = sorted((set(present) | set(findings)) - set(ROWS) - set(HIDDEN))
    rows = []
    for family in (*ROWS, *extra):
        here, found = present.get(family, Presence()), findings.get(family, [])
        items = []
        for record in found:
            confirmation = record.get("confirmation")
            text = finding_line(record, view=View.PAGE) + (f" [{confirmation}]" if confirmation else "")
            href = graph_url(record.get("benchmark", ""), record.get("params", ""), benchmarks,
                             commits=(record.get("last_good"), record.get("first_bad") or ""), machine=machine) \
                if record.get("benchmark") else None
            items.append(Item(text, href, record.get("first_bad"), record.get("confirmation_evidence")))
        for label in here.failed:
            name, _, params = label.partition("(")
            items.append(Item(f"{label}: failed at the latest commit",
                              graph_url(name, "(" + params if params else "", benchmarks, machine=machine)))
        counted = [r for r in found if r.get("confirmation") not in NOT_COUNTED]
        undecided = [r for r in found if r.get("confirmation") in UNDECIDED]
        if counted and family == Family.IMAGE_CHANGED:
            status = RED
            labels = [r.get("label") for r in counted]
            verdict = next(word for label, word in (*DETERMINISM_WORDS, (None, "regressed"))
                           if label is None or label in labels)
            summary = ", ".join(f"{labels.count(label)} {word}" for label, word in DETERMINISM_WORDS if label in labels) \
                or f"{len(counted)} regressed"
        elif counted:
            status, verdict = RED, "regressed"
            summary = f"{len(counted)} regressed" + (f", {len(undecided)} undecided" if undecided else "")
        elif here.failed or (family == Family.IMAGE_CHANGED and here.skipped and not here.measured):
            status = AMBER
            if here.failed:
                verdict, summary = "not measured", f"{len(here.failed)} failed at the latest commit"
            else:
                verdict, summary = "not comparable", note_not_comparable or \
                    f"{here.skipped} skipped at the latest commit (not comparable on this machine)"
            if here.measured:
                summary += f"; {here.measured} measured"
        elif undecided:
            status, verdict = GREY, "undecided"
            command = undecided[0].get("decide_command")
            summary = f"{len(undecided)} undecided" + (f" (`{command}` decides)" if command else "") + \
                (f"; {here.measured} measured" if here.measured else "")
        elif not here.measured and family == Family.COUNTED_COST and report.target_results and not here.skipped:
            status, verdict, summary = GREY, "not counted", TARGET_UNCOUNTED  # not asked for: nothing failed
        elif not here.measured:
            status, verdict = GREY, "not measured"
            summary = f"{here.skipped} skipped at the latest commit" if here.skipped else NOTHING_RECORDED
        else:
            status, verdict = GREEN, "ok"
            summary = f"{here.measured} measured, none regressed" + (f" ({here.skipped} skipped)" if here.skipped else "")
            noise = len(found) - len(counted) - len(undecided)
            if noise:
                summary += f"; {noise} dismissed as noise"
        rows.append(Row(family, status, verdict, summary, tuple(items)))
    return rows


# ---- parity histories: inline SVG on a log scale of 1 - r ----------------------------------------------
# asv draws 1 - r on a linear axis, where 0 and 1e-9 look the same. Here commits are evenly spaced, oldest
# first; a value at or below FLOOR is drawn on the floor as a hollow marker; a failed point (None) is a grey
# cross on the floor, a skipped one (NaN) is not drawn; the line breaks at both.
FLOOR = 1e-16  # 1 - r at or below this is drawn on the floor (float64 cannot resolve r closer to 1)
TOP = 1.0  # the axis' top: r = 0
ACCEPT = 1 - PARITY_MIN_R  # the acceptance line on the 1 - r scale
WIDTH, HEIGHT = 300, 130
# every 4 decades from the top down to the floor
TICKS = [10.0 ** e for e in range(round(math.log10(TOP)), round(math.log10(FLOOR)) - 1, -4)]


@dataclass(frozen=True)
class Frame:
    """The plot area in SVG units: x from ``left`` to ``right``, y from ``top`` (1 - r = TOP) to ``bottom`` (FLOOR)."""

    left: float = 50
    right: float = WIDTH - 8
    top: float = 18
    bottom: float = HEIGHT - 14


def log_y(value: float, frame: Frame = Frame()) -> float:
    """The y of 1 - r = ``value`` on the log axis, clamped to the floor (values at or below :data:`FLOOR`, 0 and
    negatives included) and to the top."""
    if value <= FLOOR or value >= TOP:
        return frame.bottom if value <= FLOOR else frame.top
    share = (math.log10(value) - math.log10(FLOOR)) / (math.log10(TOP) - math.log10(FLOOR))
    return frame.bottom - share * (frame.bottom - frame.top)


def x_of(index: int, count: int, frame: Frame = Frame()) -> float:
    """Commit ``index`` of ``count``, evenly spaced; a single commit sits in the middle."""
    if count <= 1:
        return (frame.left + frame.right) / 2
    return frame.left + index * (frame.right - frame.left) / (count - 1)


def fmt(value: float | None) -> str:
    """A 1 - r value as the page prints it: ``<= 1e-16`` at the floor, else three significant digits."""
    if value is None:
        return "failed"
    if math.isnan(value):
        return "skipped"
    return f"<= {FLOOR:.0e}" if value <= FLOOR else f"{value:.3g}"


def parity_svg(case: str, points: list[tuple[str, float | None]], *, worst: bool = False,
               subjects: dict[str, str] | None = None, href: str | None = None, events: Sequence[Mapping] = ()) -> str:
    """One case's history: ``points`` are (commit, 1 - r) oldest first (None failed, NaN skipped); ``events``
    (its series' records in ``verdict.json``) marked at their commits."""
    frame, subjects = Frame(), subjects or {}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="parity{" worst" if worst else ""}" '
           f'data-case="{escape(case)}" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
           f'role="img" aria-label="1 - r of {escape(case)} per commit, log scale">']
    title = escape(case) + (" (worst)" if worst else "")
    if href:
        title = f'<a href="{escape(href)}">{title}</a>'
    out.append(f'<text x="{frame.left}" y="12" class="title">{title}</text>')
    for tick in TICKS:
        y = log_y(tick, frame)
        label = "1" if tick == 1 else f"1e{round(math.log10(tick))}"
        out.append(f'<line x1="{frame.left}" x2="{frame.right}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{frame.left - 3}" y="{y + 3:.1f}" class="tick">{"&lt;=" * (tick == FLOOR)}{label}</text>')
    y = log_y(ACCEPT, frame)
    out.append(f'<line x1="{frame.left}" x2="{frame.right}" y1="{y:.1f}" y2="{y:.1f}" class="acceptance" '
               f'data-value="{ACCEPT:.6g}"><title>acceptance line: 1 - r = {ACCEPT:.4g} (r &gt;= {PARITY_MIN_R})</title></line>')
    out.append(f'<text x="{frame.left + 3}" y="{y - 3:.1f}" class="accept-label">r &gt;= {PARITY_MIN_R}</text>')
    lines: list[list[str]] = [[]]  # runs of consecutive measured points
    dots = []
    for i, (commit, value) in enumerate(points):
        x = x_of(i, len(points), frame)
        where = f"{commit[:8]} {escape(subjects.get(commit, ''))}".strip()
        if value is None or math.isnan(value):
            lines.append([])
            if value is None:
                dots.append(f'<text x="{x:.1f}" y="{frame.bottom + 4:.1f}" class="failed">x<title>{where}: failed</title></text>')
            continue
        y = log_y(value, frame)
        lines[-1].append(f"{x:.1f},{y:.1f}")
        kind = "floor" if value <= FLOOR else "bad" if value > ACCEPT else "ok"
        dots.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" class="pt {kind}">'
                    f'<title>{where}: 1 - r = {fmt(value)}</title></circle>')
    out += [f'<polyline points="{" ".join(run)}" class="line"/>' for run in lines if len(run) > 1]
    out += svg_marks(events, {c: x_of(i, len(points), frame) for i, (c, _) in enumerate(points)}, frame.top,
                     frame.bottom)
    return "".join([*out, *dots, "</svg>"])


def worst_case(latest: dict[str, float | None]) -> str | None:
    """The case with the largest measured 1 - r at the latest commit (None: none measured)."""
    measured = {c: v for c, v in latest.items() if v is not None and not math.isnan(v)}
    return max(sorted(measured), key=lambda c: measured[c]) if measured else None


def departing_case(latest: dict[str, float | None]) -> str | None:
    """The worst case at the latest commit where it departs from the parity rule (1 - r above the acceptance
    line); None where every measured case keeps to it, so that nothing is framed as the worst."""
    worst = worst_case(latest)
    return worst if worst is not None and latest[worst] > ACCEPT else None


def parity_caption(latest: dict[str, float | None]) -> str:
    """What the parity section says of the latest commit: the departing case, or that none departs."""
    worst, departing = worst_case(latest), departing_case(latest)
    if departing is not None:
        return f"Worst at the latest commit: <b>{escape(departing)}</b>, 1 - r = {escape(fmt(latest[departing]))}."
    if worst is None:
        return ""
    if latest[worst] <= FLOOR:
        return f"At the latest commit every measured case is on the floor (1 - r &lt;= {FLOOR:.0e})."
    return (f"At the latest commit every measured case keeps to r &gt;= {PARITY_MIN_R} (largest 1 - r: "
            f"{escape(worst)}, {escape(fmt(latest[worst]))}).")


# ---- the page --------------------------------------------------------------------------------------------
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
DEPARTURE_CSS = """
table.departure-map{border-collapse:collapse} table.departure-map td{width:10px;height:10px;padding:0}
table.worst{border-collapse:collapse;font-size:12px} table.worst td,table.worst th{border:1px solid #ccc;padding:1px 6px}
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


def _item_html(item: Item) -> str:
    title = f' title="{escape(item.evidence)}"' if item.evidence else ""
    text = f'<a href="{escape(item.href)}">{escape(item.text)}</a>' if item.href else escape(item.text)
    return f"<li{title}>{text}</li>"


def family_table(rows: Sequence[Row], report: Report) -> str:
    subjects, order = report.subjects, list(report.commits)
    out = ['<table class="families"><tr><th>family</th><th>verdict</th><th>commit</th><th>details</th></tr>']
    for row in rows:
        # an ok row changed nowhere: the commits its items name (steps dismissed as noise) are no "since"
        named = {i.commit for i in row.items if i.commit} if row.status != GREEN else set()
        commits = sorted(named, key=lambda c: order.index(c) if c in order else -1)
        where = "<br>".join(f"since {_short(c, subjects)}" for c in commits) or f"at {_short(report.latest, subjects)}"
        items = "".join(_item_html(i) for i in row.items)
        items = f'<ul class="items">{items}</ul>' if items else ""
        text = "#fff" if row.status in (GREEN, RED) else "#212121"
        out.append(f'<tr class="family" data-family="{escape(row.family)}" data-status="{escape(row.status)}">'
                   f'<td class="name">{escape(row.family)}</td>'
                   f'<td class="verdict" style="background:{COLOURS[row.status]};color:{text}">{escape(row.verdict)}</td>'
                   f'<td class="commit">{where}</td><td class="summary">{escape(row.summary)}{items}</td></tr>')
    out.append("</table>")
    return "".join(out)


def parity_section(history: History, subjects: Mapping[str, str], graph_href, events: Sequence[Mapping] = ()) -> str:
    if not history.parity:
        return "<h2>Parity</h2><p class=\"hint\">No parity track recorded.</p>"
    latest = {case: (points[-1][1] if points else None) for case, _, points in history.parity}
    departing = departing_case(latest)
    ordered = sorted(history.parity, key=lambda c: (c[0] != departing, c[0]))
    marked = {case: [e for e in events if e["family"] == Family.PARITY and e.get("case") == case]
              for case, _, _ in history.parity}
    figures = "".join(parity_svg(case, points, worst=case == departing, subjects=subjects, href=graph_href(bench),
                                 events=marked[case])
                      for case, bench, points in ordered)
    drawn = sum(e["commit"] in {c for c, _ in points} for case, _, points in history.parity for e in marked[case])
    worst_text = parity_caption(latest)
    return (f"<h2>Parity with nanoBragg.c: 1 - r per golden case</h2>"
            f'<p class="hint">Log scale, commits oldest to newest left to right; hollow markers sit on the floor '
            f"(1 - r &lt;= {FLOOR:.0e}, exact agreement included); the dashed red horizontal line is the acceptance "
            f"line r &gt;= {PARITY_MIN_R}. {worst_text} {svg_key(drawn)}</p><div class=\"multiples\">{figures}</div>")


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


def _heat(value: float) -> str:
    """A map block's colour: white for no difference, darker red up to a relative difference of 1 (log scale
    from 1e-8)."""
    level = 0.0 if value <= 0 else min(1.0, max(0.0, (math.log10(value) + 8) / 8))
    return f"hsl(0,80%,{100 - 60 * level:.0f}%)"


def departure_facts(record: Mapping) -> str:
    """Both Pearson r and where the difference sits: ``full frame r = ... (fails); central region rows a-b,
    cols c-d r = ... (passes); the difference sits at the edges``."""
    full, central = record["full"], record["central"]
    r = lambda x: "undefined" if x is None else f"{x:.8f}"  # noqa: E731
    return (f"full frame r = {r(full['r'])} ({'passes' if full['passes'] else 'fails'}); central region rows "
            f"{central['rows'][0]}-{central['rows'][1]}, cols {central['cols'][0]}-{central['cols'][1]} r = "
            f"{r(central['r'])} ({'passes' if central['passes'] else 'fails'}); the difference sits: {record['where']}")


def departure_section(departures: Sequence[Mapping], subjects: Mapping[str, str]) -> str:
    """Where a target's image departs, for each of its parity findings: ``departures`` are the stored
    records (as ``detsim.track.target.departure.departure`` makes them) with the finding's ``case`` and
    ``commit`` and the record's ``sentence`` added."""
    if not departures:
        return ""
    parts = ["<h2>Where the images depart (the target's parity findings)</h2>"
             '<p class="hint">Largest relative difference per block of the image against the reference '
             "(white: none, dark red: 1 or more; hover a block for its value); the worst pixels with both values.</p>"]
    for d in departures:
        cells = "".join("<tr>" + "".join(f'<td style="background:{_heat(v)}" title="{v:.3g}"></td>' for v in row)
                        + "</tr>" for row in d["map"])
        pixels = "".join(f"<tr><td>({w['s']}, {w['f']})</td><td>{number_text(w['target'])}</td><td>{number_text(w['reference'])}</td>"
                        f"<td>{number_text(w['ratio'])}</td></tr>" for w in d["worst"])
        parts.append(f'<div class="departure" data-case="{escape(d["case"])}"><p><b>{escape(d["case"])}</b> at '
                     f"{_short(d['commit'], subjects)}: {escape(d['sentence'])}.</p>"
                     f'<p class="hint">{escape(departure_facts(d))}</p><table class="departure-map">{cells}</table>'
                     f'<table class="worst"><tr><th>pixel (s, f)</th><th>target</th><th>reference</th><th>ratio</th>'
                     f"</tr>{pixels}</table></div>")
    return "".join(parts)


def number_text(value) -> str:
    """A value of a departure record: six significant digits, or ``undefined`` (None)."""
    return "undefined" if value is None else f"{value:.6g}"


def commits_table(commits: Sequence[str], subjects: Mapping[str, str]) -> str:
    rows = "".join(f"<tr><td>{escape(c[:8])}</td><td>{escape(subjects.get(c, ''))}</td></tr>" for c in reversed(commits))
    return f'<h2>Recorded commits (newest first)</h2><table class="commits">{rows}</table>'


SERVE_HINT = ('<p class="hint">This page needs no network and opens from disk. asv\'s interactive graphs '
              '(<a href="index.html">index.html</a>, and the links below) load their data over HTTP: serve this '
              "folder with <code>.venv/bin/asv preview</code> or <code>python -m http.server -d reports/html "
              "-b 127.0.0.1 8080</code> and open <code>http://127.0.0.1:8080/status.html</code>.</p>")


def document(title: str, body: str) -> str:
    css = CSS + DEPARTURE_CSS if 'class="departure"' in body else CSS
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">{MARK}'
            f"<title>{escape(title)}</title><style>{css}</style></head><body>{body}</body></html>\n")


def machine_section(report: Report, rows: Sequence[Row], history: History, graph_href,
                    departures: Sequence[Mapping] = ()) -> str:
    """One machine's verdict: its family table, notes, parity graphs, determinism strips, departures and
    commits. ``graph_href(benchmark)``: the address of a benchmark's graph in asv's page."""
    subjects, commits = report.subjects, list(report.commits)
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.notes)
    code = int(report.exit)
    return (f'<section class="machine" data-machine="{escape(report.machine)}">'
            f'<p class="meta">machine <b>{escape(report.machine)}</b>, {len(commits)} commits recorded; '
            f"latest {_short(report.latest, subjects)}; verdict: exit {code} "
            f"({MEANING.get(code, '?')}); generated {escape(report.generated_at)}</p>"
            f"{family_table(rows, report)}"
            f'{f"<h2>Notes</h2><ul>{notes}</ul>" if notes else ""}'
            f"{parity_section(history, subjects, graph_href, [e.to_dict() for e in report.events])}"
            f"{determinism_section(history, commits, subjects, graph_href)}"
            f"{departure_section(departures, subjects)}"
            f"{events_section([e.to_dict() for e in report.events], subjects)}"
            f"{commits_table(commits, subjects)}</section>")


def machine_page(report: Report, benchmarks: Mapping[str, Mapping], departures: Sequence[Mapping] = ()
                 ) -> tuple[str, list[Row]]:
    """One machine's section of the page and its rows, from its stored verdict; ``benchmarks``: asv's list
    (for the links into its graphs); ``departures``: as :func:`departure_section` takes them."""
    note = next((n for n in report.notes if n.startswith("image hashes not compared")), None)
    machine = report.machine  # links show this machine's series only
    rows = family_rows(report, presence(report.families), benchmarks, note, machine)
    drawn = report.history
    history = History(
        parity=[(case, bench, [(commit, float(v) if isinstance(v, str) else v) for commit, v in points])
                for case, bench, points in drawn.get("parity", [])],  # "nan": skipped there
        determinism={case: [State(*s) for s in states] for case, states in (drawn.get("determinism") or {}).items()},
        determinism_benchmarks=drawn.get("determinism_benchmarks") or {})
    section = machine_section(report, rows, history, lambda bench: graph_url(bench, "", benchmarks, machine=machine),
                              departures)
    return section, rows


def status_page(verdict: Judgement, picked: Mapping[str, Report], benchmarks: Mapping,
                departures: Callable[[Report], Sequence[Mapping]] = lambda report: ()) -> tuple[str, list[str]]:
    """The status page of the machines ``picked`` (machine -> its stored verdict) of ``verdict``, and one
    summary per machine (``family verdict, ...``); ``departures(report)``: a machine's departure records."""
    summaries, sections = [], []
    for machine, report in picked.items():
        section, rows = machine_page(report, benchmarks, departures(report))
        sections.append(section)
        summaries.append(f"{machine}: " * (len(picked) > 1) + ", ".join(f"{r.family} {r.verdict}" for r in rows))
    if len(picked) == 1:
        [report] = picked.values()
        title, body = f"detsim status: {report.latest[:8]}", "<h1>detsim: the latest verdict</h1>" + SERVE_HINT
        return document(title, body + sections[0]), summaries
    whole = set(picked) == set(verdict.reports)  # the agreement is the whole fleet's
    code = int(verdict.exit if whole else worst_exit(*(r.exit for r in picked.values())))
    agree = "".join(f"<li>{escape(line)}</li>" for line in (*verdict.agreement, *verdict.facts) if whole)
    failed = "".join(f"<li>{escape(m)}: not judged ({escape(why)})</li>"
                     for m, why in (verdict.failed.items() if whole else ()))
    toc = " &middot; ".join(f'<a href="#machine-{escape(m)}">{escape(m)}</a>' for m in picked)
    body = (f"<h1>detsim: the latest verdict on {len(picked)} machines</h1>"
            f'<p class="meta">verdict: exit {escape(str(code))} ({MEANING.get(code, "?")}); machines: {toc}</p>'
            + SERVE_HINT + f'<h2>Do the machines agree?</h2><ul class="agreement">{agree}{failed}</ul>'
            + "".join(f'<h2 id="machine-{escape(m)}">Machine {escape(m)}</h2>{section}'
                      for m, section in zip(picked, sections)))
    return document(f"detsim status: {len(picked)} machines", body), summaries
