"""A machine's events (:mod:`detsim.track.judge.events`) on the page, drawn from its stored verdict: the list of
every step of every series, each line as the verdict's text writes it (:func:`detsim.track.judge.text.event_text`),
newest first, with its commit's subject; and each event marked at its commit on its series' graphs: a vertical
line on the status page's own graphs (:func:`svg_marks`), and on asv's graphs (:func:`asv_script`, offline: a
script of the page's own, a flot plugin that adds the benchmark's events to the main graph's markings, each with
a marker that names it on hover)."""

from __future__ import annotations

import json
import re
from html import escape
from typing import Mapping, Sequence

from detsim.track.judge.text import event_text
from detsim.track.judge.verdict import Report

FLAGGING_STEPS = ("regressed", "changed", "irreproducible", "broken")  # drawn red; "improved" and "fixed" green
COLOR = {True: "#c62828", False: "#2e7d32"}  # by whether the step flags
STYLE = {flagging: f"color:{color}" for flagging, color in COLOR.items()}  # inline: the page's style sheet is
# another module's
CELL = "font-size:12px;padding:1px 8px"


def events_section(events: Sequence[Mapping], subjects: Mapping[str, str]) -> str:
    """``<h2>`` and a table of ``events`` (``verdict.json``'s records), newest first; nothing without any."""
    if not events:
        return ""
    rows = "".join(
        f'<tr style="{STYLE[e["step"] in FLAGGING_STEPS]}"><td style="{CELL};font-family:monospace">'
        f'{escape(event_text(e))}</td><td style="{CELL}">{escape(subjects.get(e["commit"], ""))}</td></tr>'
        for e in reversed(events))
    return (f"<h2>Events: every step of the history ({len(events)})</h2>"
            f'<table class="events">{rows}</table>')


def svg_marks(events: Sequence[Mapping], x_at: Mapping[str, float], top: float, bottom: float) -> list[str]:
    """A dashed vertical line from ``top`` to ``bottom`` at each event's commit (``x_at``: commit -> x; an event
    at a commit not drawn is left out), coloured by its step, its text on hover."""
    return [f'<line x1="{x_at[e["commit"]]:.1f}" x2="{x_at[e["commit"]]:.1f}" y1="{top}" y2="{bottom}" '
            f'class="event" data-step="{escape(e["step"])}" stroke="{COLOR[e["step"] in FLAGGING_STEPS]}" '
            f'stroke-width="1.5" stroke-dasharray="3,2"><title>{escape(event_text(e))}</title></line>'
            for e in events if e["commit"] in x_at]


# ---- on asv's graphs ----
ASV_SCRIPT = "detsim-events.js"  # written into asv's published folder beside index.html
ASV_TAG = f'<script type="text/javascript" src="{ASV_SCRIPT}"></script>'
_HEAD_END = re.compile(r"</head>", re.I)
# A flot plugin (flot 0.8, as asv 0.6.6's page loads it): on asv's main graph (#main-graph) of the benchmark in
# the page's address, each of its events is a vertical line at its commit (x: the commit's date on asv's time
# axis, its revision on the commit axis; none where a parameter is on the x axis) and a marker above the plot
# naming it on hover. detsimEventX is the x rule alone (the tests run it).
PLUGIN = r"""
function detsimEventX(commit, xaxis, main) {
  var rev = null;
  for (var r in main.revision_to_hash) { if (main.revision_to_hash[r] === commit) { rev = Number(r); } }
  if (rev === null) { return null; }
  if (xaxis.mode === "time") { return main.revision_to_date[rev]; }
  return (xaxis.mode !== "categories" && (!xaxis.axisLabel || xaxis.axisLabel === "commits")) ? rev : null;
}
(function ($) {
  if (!$ || !$.plot) { return; }
  function benchmark() {
    return decodeURIComponent((window.location.hash || "").replace(/^#\/?/, "").split("?")[0]);
  }
  $.plot.plugins.push({name: "detsim-events", version: "1", options: {}, init: function (plot) {
    var drawn = [];
    plot.hooks.processOptions.push(function (plot, options) {
      drawn = [];
      if (plot.getPlaceholder().attr("id") !== "main-graph" || !$.asv || !$.asv.main_json) { return; }
      $.each(DETSIM_EVENTS[benchmark()] || [], function (i, e) {
        var x = detsimEventX(e.commit, options.xaxis, $.asv.main_json);
        if (x === null || x === undefined) { return; }
        drawn.push({x: x, event: e});
        options.grid.markings = (options.grid.markings || []).concat(
          [{color: e.color, lineWidth: 2, xaxis: {from: x, to: x}}]);
      });
    });
    plot.hooks.draw.push(function (plot) {
      var holder = plot.getPlaceholder(), offset = plot.getPlotOffset(), axis = plot.getAxes().xaxis;
      holder.find(".detsim-event").remove();
      $.each(drawn, function (i, d) {
        $("<div class='detsim-event'>&#9660;</div>").attr("title", d.event.text).css({
          position: "absolute", left: offset.left + axis.p2c(d.x) - 5, top: offset.top - 13,
          color: d.event.color, "font-size": "11px", cursor: "default"}).appendTo(holder);
      });
    });
  }});
}(window.jQuery));
"""


def asv_marks(picked: Mapping[str, Report]) -> dict[str, list[dict]]:
    """Benchmark -> the events of every machine ``picked`` (machine -> its stored verdict), in their order: the
    commit, the step, its colour and the line that names it (with its machine where there are several)."""
    marks: dict[str, list[dict]] = {}
    for machine, report in picked.items():
        for e in (event.to_dict() for event in report.events):
            text = (f"{machine}: " if len(picked) > 1 else "") + event_text(e)
            marks.setdefault(e["benchmark"], []).append(
                {"commit": e["commit"], "step": e["step"], "color": COLOR[e["step"] in FLAGGING_STEPS], "text": text})
    return marks


def asv_script(picked: Mapping[str, Report]) -> str:
    """The script that marks the events of ``picked`` on asv's graphs (:data:`ASV_SCRIPT`)."""
    return f"var DETSIM_EVENTS = {json.dumps(asv_marks(picked), sort_keys=True)};\n{PLUGIN.lstrip()}"


def add_asv_script(text: str) -> str | None:
    """asv's ``index.html`` (``text``) loading :data:`ASV_SCRIPT` last in its head, after asv's own scripts and
    flot (unchanged where it does); None: no ``</head>``."""
    if ASV_TAG in text:
        return text
    end = _HEAD_END.search(text)
    return None if end is None else text[:end.start()] + ASV_TAG + "\n" + text[end.start():]
