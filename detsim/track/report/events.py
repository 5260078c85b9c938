"""A machine's events (:mod:`detsim.track.judge.events`) on the page, drawn from its stored verdict: the list of
every step of every series, each line as the verdict's text writes it (:func:`detsim.track.judge.text.event_text`),
newest first, with its commit's subject; and each event marked at its commit on its series' graphs: a dotted
vertical line topped by a triangle on the status page's own graphs (:func:`svg_marks`, said in words by
:func:`svg_key`), and on asv's graphs (:func:`asv_script`, offline: a script of the page's own, a flot plugin
that adds the benchmark's events to the main graph's markings, each with a marker that names it on hover)."""

from __future__ import annotations

import json
import re
from html import escape
from typing import Mapping, Sequence

from detsim.track.judge.events import FLAGGING
from detsim.track.judge.finding import CONFIRMATION_LABELS
from detsim.track.judge.text import event_text
from detsim.track.judge.verdict import Report

COLOR = {True: "#c62828", False: "#2e7d32"}  # by whether the step flags (judge.events.FLAGGING; grey: unconfirmed)
UNCONFIRMED = "#757575"  # a timing step that re-measuring has not confirmed (suspect, undecided or noise): grey,
# as the page's undecided timing row: nothing is known to be wrong
UNCONFIRMED_LABELS = frozenset(CONFIRMATION_LABELS.values())
STYLE = {flagging: f"color:{color}" for flagging, color in COLOR.items()}  # inline: the page's style sheet is
# another module's


def colour(event: Mapping) -> str:
    """An event's colour (``verdict.json``'s record): red where its step flags, green where it does not, grey
    where it is a timing step that re-measuring has not confirmed."""
    return UNCONFIRMED if event["label"] in UNCONFIRMED_LABELS else COLOR[event["step"] in FLAGGING]


CELL = "font-size:12px;padding:1px 8px"


def events_section(events: Sequence[Mapping], subjects: Mapping[str, str]) -> str:
    """``<h2>`` and a table of ``events`` (``verdict.json``'s records), newest first; nothing without any."""
    if not events:
        return ""
    rows = "".join(
        f'<tr style="color:{colour(e)}"><td style="{CELL};font-family:monospace">'
        f'{escape(event_text(e))}</td><td style="{CELL}">{escape(subjects.get(e["commit"], ""))}</td></tr>'
        for e in reversed(events))
    return (f"<h2>Events: every step of the history ({len(events)})</h2>"
            f'<table class="events">{rows}</table>')


MARKER = 4  # half the width of the triangle that tops an event's line on the status page's graphs, SVG units


def svg_marks(events: Sequence[Mapping], x_at: Mapping[str, float], top: float, bottom: float) -> list[str]:
    """A dotted vertical line from ``top`` to ``bottom`` at each event's commit (``x_at``: commit -> x; an event
    at a commit not drawn is left out), topped by a triangle, both in its :func:`colour`, its text on hover."""
    marks = []
    for e in events:
        if e["commit"] not in x_at:
            continue
        x, drawn, text = x_at[e["commit"]], colour(e), escape(event_text(e))
        marks.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}" class="event" '
                     f'data-step="{escape(e["step"])}" stroke="{drawn}" stroke-width="1.5" stroke-dasharray="1.5,2">'
                     f'<title>{text}</title></line>')
        marks.append(f'<path d="M{x - MARKER:.1f},{top} h{2 * MARKER} l{-MARKER},{MARKER + 2} z" class="event-marker" '
                     f'fill="{drawn}"><title>{text}</title></path>')
    return marks


def svg_key(count: int) -> str:
    """The sentence that says what the marks of :func:`svg_marks` are, where ``count`` of them are drawn."""
    if not count:
        return ""
    return (f"Each dotted vertical line topped by &#9660; marks an event of that case's history at its commit: "
            f'<span style="{STYLE[True]}">red</span> where a step flags it (regressed, broken), '
            f'<span style="{STYLE[False]}">green</span> where it improves or is fixed; hover one for its values '
            f"({count} drawn, every event listed under Events below).")


# ---- on asv's graphs ----
ASV_SCRIPT = "detsim-events.js"  # written into asv's published folder beside index.html
ASV_TAG = f'<script type="text/javascript" src="{ASV_SCRIPT}"></script>'
_HEAD_END = re.compile(r"</head>", re.I)
# A flot plugin (flot 0.8, as asv 0.6.6's page loads it): on asv's main graph (#main-graph) of the benchmark in
# the page's address, each of its events is a vertical line at its commit (x: the commit's date on asv's time
# axis, its revision on the commit axis; none where a parameter is on the x axis) and a marker above the plot
# naming it on hover (one marker per commit, naming each of its events), with a key saying what they are
# (DETSIM_KEY, a panel of asv's side bar, shown while the graph has any). An event of one combination of the benchmark's parameters is left out where the address
# selects other values of them (p-NAME=VALUE, asv's own selection). detsimEventX is the x rule alone,
# detsimEventShown the parameter rule (the tests run both).
PLUGIN = r"""
function detsimEventX(commit, xaxis, main) {
  var rev = null;
  for (var r in main.revision_to_hash) { if (main.revision_to_hash[r] === commit) { rev = Number(r); } }
  if (rev === null) { return null; }
  if (xaxis.mode === "time") { return main.revision_to_date[rev]; }
  return (xaxis.mode !== "categories" && (!xaxis.axisLabel || xaxis.axisLabel === "commits")) ? rev : null;
}
function detsimEventShown(params, selected) {
  var inner = ", " + params.replace(/^\(|\)$/g, "") + ",";
  for (var key in selected) {
    var name = key.slice(2), values = selected[key];
    if (key.indexOf("p-") !== 0 || inner.indexOf(", " + name + "=") < 0) { continue; }
    if (!values.some(function (v) { return inner.indexOf(", " + name + "=" + v + ",") >= 0; })) { return false; }
  }
  return true;
}
(function ($) {
  if (!$ || !$.plot) { return; }
  function benchmark() {
    return decodeURIComponent((window.location.hash || "").replace(/^#\/?/, "").split("?")[0]);
  }
  function selected() {
    return ($.asv && $.asv.parse_hash_string) ? $.asv.parse_hash_string(window.location.hash).params : {};
  }
  $.plot.plugins.push({name: "detsim-events", version: "1", options: {}, init: function (plot) {
    var drawn = [];
    plot.hooks.processOptions.push(function (plot, options) {
      drawn = [];
      if (plot.getPlaceholder().attr("id") !== "main-graph" || !$.asv || !$.asv.main_json) { return; }
      var chosen = selected();
      $.each(DETSIM_EVENTS[benchmark()] || [], function (i, e) {
        var x = detsimEventX(e.commit, options.xaxis, $.asv.main_json);
        if (x === null || x === undefined || !detsimEventShown(e.params || "", chosen)) { return; }
        drawn.push({x: x, event: e});
        options.grid.markings = (options.grid.markings || []).concat(
          [{color: e.color, lineWidth: 2, xaxis: {from: x, to: x}}]);
      });
    });
    plot.hooks.draw.push(function (plot) {
      var holder = plot.getPlaceholder(), offset = plot.getPlotOffset(), axis = plot.getAxes().xaxis;
      if (holder.attr("id") !== "main-graph") { return; }  // the overview below it: no marks, the key left alone
      holder.find(".detsim-event").remove();
      var at = {}, order = [];  // one marker per commit, naming each of its events
      $.each(drawn, function (i, d) {
        if (!at[d.x]) { at[d.x] = []; order.push(d.x); }
        at[d.x].push(d.event);
      });
      $.each(order, function (i, x) {
        var events = at[x], flagging = events.filter(function (e) { return e.flags; });
        $("<div class='detsim-event'>&#9660;</div>")
          .attr({title: events.map(function (e) { return e.text; }).join("\n"), "data-commit": events[0].commit,
                 "data-count": events.length})
          .css({position: "absolute", left: offset.left + axis.p2c(x) - 5, top: offset.top - 13,
                color: (flagging[0] || events[0]).color, "font-size": "11px", cursor: "default"}).appendTo(holder);
      });
      var key = $("#detsim-events-key");  // a panel of asv's side bar, after the parameters' panels
      if (!key.length) {
        key = $("<div class='panel panel-default' id='detsim-events-key'><div class='panel-heading'>detsim events" +
                "</div><div class='panel-body' style='font-size: 11px; padding: 4px 6px'></div></div>");
        key.find(".panel-body").html(DETSIM_KEY);
        var params = $("#graphdisplay-navigation-params");
        if (params.length) { key.insertAfter(params); } else { key.appendTo($("#graphdisplay-navigation")); }
      }
      key.toggle(drawn.length > 0);
    });
  }});
}(window.jQuery));
"""


def asv_marks(picked: Mapping[str, Report]) -> dict[str, list[dict]]:
    """Benchmark -> the events of every machine ``picked`` (machine -> its stored verdict), in their order: the
    commit, the step, the parameters of its series, whether it is drawn red, its colour and the line that names it
    (with its machine where there are several)."""
    marks: dict[str, list[dict]] = {}
    for machine, report in picked.items():
        for e in (event.to_dict() for event in report.events):
            text = (f"{machine}: " if len(picked) > 1 else "") + event_text(e)
            marks.setdefault(e["benchmark"], []).append(
                {"commit": e["commit"], "step": e["step"], "params": e["params"],
                 "flags": colour(e) == COLOR[True], "color": colour(e), "text": text})
    return marks


def asv_key() -> str:
    """What the marks on asv's graphs are: the body of the panel the plugin adds to asv's side bar
    (``DETSIM_KEY``), shown while the graph has any."""
    return (f"<span style='{STYLE[True]}'>&#9660; red</span>: a step that flags ({', '.join(FLAGGING)})<br>"
            f"<span style='{STYLE[False]}'>&#9660; green</span>: improved or fixed<br>"
            f"<span style='color:{UNCONFIRMED}'>&#9660; grey</span>: a timing step not confirmed by re-measuring<br>"
            "Each &#9660; above the graph and its line mark a commit: hover the &#9660; for its events (every event "
            "is on the Status page).")


def asv_script(picked: Mapping[str, Report]) -> str:
    """The script that marks the events of ``picked`` on asv's graphs (:data:`ASV_SCRIPT`)."""
    return (f"var DETSIM_EVENTS = {json.dumps(asv_marks(picked), sort_keys=True)};\n"
            f"var DETSIM_KEY = {json.dumps(asv_key())};\n{PLUGIN.lstrip()}")


def add_asv_script(text: str) -> str | None:
    """asv's ``index.html`` (``text``) loading :data:`ASV_SCRIPT` last in its head, after asv's own scripts and
    flot (unchanged where it does); None: no ``</head>``."""
    if ASV_TAG in text:
        return text
    end = _HEAD_END.search(text)
    return None if end is None else text[:end.start()] + ASV_TAG + "\n" + text[end.start():]
