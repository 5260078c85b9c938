"""detsim.track.report.events: the page's list of a machine's events and their marks on the graphs, from its stored
verdict."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import types
from pathlib import Path

import pytest

from detsim.track.judge.analysis import analyse
from detsim.track.report.events import ASV_SCRIPT, ASV_TAG, add_asv_script, asv_marks, asv_script, colour, \
    events_section, svg_marks
from detsim.track.report.page import machine_page

DATA = Path(__file__).resolve().parents[2] / "data" / "asv"


def test_the_events_are_listed_newest_first_red_where_they_flag_grey_unconfirmed_and_escaped():
    records = analyse(DATA / "regressed").single.as_json()["events"]
    html = events_section(records, {records[-1]["commit"]: "<b>o01</b> & more"})
    assert html.startswith("<h2>Events: every step of the history (6)</h2>")
    rows = html.split("<tr ")[1:]
    assert len(rows) == 6 and "224b823e changed image hash o01_polar_0.9" in rows[0]
    assert "cf5345b8 regressed (suspect)" in rows[-1]
    assert ["#c62828" in row for row in rows] == [True] * 3 + [False] * 3  # the image and parity steps red
    assert all("#757575" in row for row in rows[3:])  # the timing suspects grey: nothing known to be wrong
    assert "&lt;b&gt;o01&lt;/b&gt; &amp; more" in rows[0] and "<b>o01" not in html
    fixed = {**records[0], "step": "fixed", "label": "FIXED"}
    assert "#2e7d32" in events_section([fixed], {}) and events_section([], {}) == ""


def test_the_machine_page_holds_the_section_only_where_there_are_events():
    regressed = analyse(DATA / "regressed").single
    page, _ = machine_page(regressed, {})
    assert "<h2>Events: every step of the history (6)</h2>" in page
    assert page.index("Events: every step") < page.index("Recorded commits")
    good, _ = machine_page(analyse(DATA / "good").single, {})
    assert "Events:" not in good


def test_each_parity_event_is_marked_at_its_commit_on_its_cases_graph():
    report = analyse(DATA / "regressed").single
    regressed = report.as_json()
    page, _ = machine_page(report, {})
    graphs = {svg.split('data-case="', 1)[1].split('"', 1)[0]: svg for svg in page.split("<svg ")[1:]}
    marks = {case: re.findall(r'<line [^>]*class="event" data-step="(\w+)"[^>]*><title>([^<]*)</title>', svg)
             for case, svg in graphs.items()}
    assert marks == {"a01_cubic_mosflm_center": [
        ("regressed", "5432ab33 regressed parity a01_cubic_mosflm_center: 1 - r 0 -&gt; 0.0063 (after cf5345b8)")],
        "o01_polar_0.9": []}  # its change is an image hash's, not a parity step
    commits, [step] = regressed["commits"], [e for e in regressed["events"] if e["family"] == "parity"]
    x = float(re.search(r'<line x1="([\d.]+)"[^>]*class="event"', graphs["a01_cubic_mosflm_center"]).group(1))
    assert x == round(50 + commits.index(step["commit"]) * (300 - 8 - 50) / (len(commits) - 1), 1)  # its commit's
    marker = re.search(r'<path d="M([\d.]+),18 h8 [^"]*" class="event-marker"', graphs["a01_cubic_mosflm_center"])
    assert float(marker.group(1)) == round(x - 4, 1)  # the triangle on its line, at the plot's top
    assert "topped by &#9660; marks an event" in page and "(1 drawn, every event listed under Events below)" in page
    good, _ = machine_page(analyse(DATA / "good").single, {})
    assert "marks an event" not in good  # no key where nothing is marked
    green = svg_marks([{**step, "step": "improved"}], {step["commit"]: 10.0}, 1, 2)
    assert "".join(green).count('"#2e7d32"') == 2 and "#c62828" not in "".join(green)  # a step that does not flag


def test_asvs_page_loads_the_events_script_once_and_it_holds_each_benchmarks_events():
    report = analyse(DATA / "regressed").single
    regressed = report.as_json()
    marks = asv_marks({"m": report})
    parity = marks["bench_parity.track_parity_a01_cubic_mosflm_center"]
    assert parity == [{"commit": "5432ab332fd4600933fd741ef2e638f38b152b2b", "step": "regressed", "params": "",
                       "flags": True, "color": "#c62828",
                       "text": "5432ab33 regressed parity a01_cubic_mosflm_center: 1 - r 0 -> 0.0063 (after cf5345b8)"}]
    timing = marks["bench_engine.EngineSweep.time_simulate"]
    assert [m["params"] for m in timing] == ["(pixels=128, dtype='float64')", "(pixels=256, dtype='float64')"]
    assert [(m["color"], m["flags"]) for m in timing] == [("#757575", False)] * 2  # suspects: grey, not flagging
    confirmed = [{**e, "label": "REGRESSED"} for e in report.as_json()["events"] if e["family"] == "timing"]
    assert {colour(e) for e in confirmed} == {"#c62828"}  # once re-measuring confirms them: red
    assert sum(len(v) for v in marks.values()) == len(regressed["events"])
    assert asv_marks({"a": report, "b": report})[
        "bench_parity.track_parity_a01_cubic_mosflm_center"][1]["text"].startswith("b: 5432ab33 regressed")
    page = "<html><head><script src='asv.js'></script></head><body></body></html>"
    once = add_asv_script(page)
    assert once.index(ASV_TAG) > once.index("asv.js") and add_asv_script(once) == once
    assert add_asv_script("<body>no head</body>") is None
    assert "https://" not in asv_script({"m": report})  # nothing from the network


NODE_CHECK = r"""
var hooks = {processOptions: [], draw: []}, plugins = [];
var main = {revision_to_hash: {"3": "aaa", "7": "bbb"}, revision_to_date: {"3": 3000, "7": 7000}};
var parse = function () { return {params: {"p-a": ["1"], "x-axis-scale": ["date"]}}; };  // asv's, of the hash
global.window = {location: {hash: "#bench.x?p-a=1"}, jQuery: {plot: {plugins: plugins},
  asv: {main_json: main, parse_hash_string: parse},
  each: function (list, f) { for (var i = 0; i < list.length; i++) { f(i, list[i]); } }}};
eval(require("fs").readFileSync(process.argv[2], "utf8"));
var plot = {hooks: hooks, getPlaceholder: function () { return {attr: function () { return "main-graph"; }}; }};
plugins[0].init(plot);
var out = {};
[["time", {mode: "time"}], ["commits", {mode: null, axisLabel: "commits"}], ["param", {axisLabel: "pixels"}]]
  .forEach(function (c) {
    var options = {xaxis: c[1], grid: {markings: [{color: "#ddd", xaxis: {from: 1, to: 1}}]}};
    hooks.processOptions[0](plot, options);
    out[c[0]] = options.grid.markings.map(function (m) { return [m.color, m.xaxis.from]; });
  });
out.unknown = detsimEventX("ccc", {mode: "time"}, main);
out.shown = [["(a=1, b='x')", {"p-a": ["2", "1"]}], ["(a=2, b='x')", {"p-a": ["1"]}], ["(a=10)", {"p-a": ["1"]}],
             ["(a=2)", {"p-b": ["1"]}], ["", {"p-a": ["1"]}]].map(function (c) { return detsimEventShown(c[0], c[1]); });
console.log(JSON.stringify(out));
"""


def test_the_plugin_adds_the_benchmarks_events_to_asvs_markings_at_their_commits(tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the plugin's JavaScript is not run")
    script = tmp_path / ASV_SCRIPT
    events = [
        {"commit": "bbb", "step": "regressed", "benchmark": "bench.x", "family": "cost", "label": "REGRESSED",
         "unit": "instructions", "old": 1.0, "new": 2.0, "before": "aaa", "params": "(a=1)", "env": "e"},
        {"commit": "aaa", "step": "improved", "benchmark": "bench.x", "family": "cost", "label": "IMPROVED",
         "unit": "instructions", "old": 2.0, "new": 1.0, "before": None, "params": "(a=2)", "env": "e"},
        {"commit": "aaa", "step": "fixed", "benchmark": "bench.other", "family": "cost", "label": "FIXED",
         "unit": "instructions", "old": 2.0, "new": 1.0, "before": None, "params": "", "env": "e"}]
    report = types.SimpleNamespace(events=[types.SimpleNamespace(to_dict=lambda e=e: e) for e in events])
    script.write_text(asv_script({"m": report}))
    (tmp_path / "check.js").write_text(NODE_CHECK)
    done = subprocess.run([node, str(tmp_path / "check.js"), str(script)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {  # asv's own marking kept; only bench.x's event of the selected a=1, where
        # the x axis is commits
        "time": [["#ddd", 1], ["#c62828", 7000]], "commits": [["#ddd", 1], ["#c62828", 7]],
        "param": [["#ddd", 1]], "unknown": None, "shown": [True, False, False, True, True]}
