"""detsim.track.report.events: the page's list of a machine's events, from its stored verdict."""

from __future__ import annotations

from pathlib import Path

from detsim.track.judge.analysis import analyse
from detsim.track.report.events import events_section
from detsim.track.report.page import machine_page

DATA = Path(__file__).resolve().parents[2] / "data" / "asv"


def test_the_events_are_listed_newest_first_red_where_they_flag_and_escaped():
    records = analyse(DATA / "regressed").single.as_json()["events"]
    html = events_section(records, {records[-1]["commit"]: "<b>o01</b> & more"})
    assert html.startswith("<h2>Events: every step of the history (6)</h2>")
    rows = html.split("<tr ")[1:]
    assert len(rows) == 6 and "224b823e changed image hash o01_polar_0.9" in rows[0]
    assert "cf5345b8 regressed (suspect)" in rows[-1] and all("#c62828" in row for row in rows)
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
