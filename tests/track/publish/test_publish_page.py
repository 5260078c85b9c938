"""status.html: self-contained, marked as this command's, with the rows, parity graphs and determinism strips."""

from __future__ import annotations

import re

from detsim.track.publish.fingerprints import CHANGED, NOT_COMPARABLE, SAME, State
from detsim.track.publish.page import COLOURS, GENERATOR, MARK, History, is_ours, machine_section, single_page
from detsim.track.publish.rows import AMBER, GREEN, GREY, RED, Item, Row

C1, C2 = "1" * 40, "2" * 40
REPORT = {"machine": "m", "commits": [C1, C2], "latest": C2, "subjects": {C1: "Base", C2: "Plant <b>"},
          "notes": ["a note & more"], "exit": 1, "generated_at": "20260101T000000Z"}
ROWS_ = [Row("timing", RED, "regressed", "1 regressed", (Item("t: 1 -> 2", "index.html#t?p-x=%271%27", C2, "re-measured: x2 <slower>"),)),
         Row("memory", GREEN, "ok", "1 measured"), Row("cost", GREY, "not measured", "none"),
         Row("parity", AMBER, "not comparable", "1 skipped"), Row("determinism", GREEN, "ok", "2 measured")]
HISTORY = History(parity=[("w01", "bench_parity.track_parity_w01", [(C1, 0.0), (C2, 0.2)]),
                          ("a01", "bench_parity.track_parity_a01", [(C1, 0.0), (C2, 0.0)])],
                  determinism={"w03": [State(C1, NOT_COMPARABLE, "first recorded here"), State(C2, CHANGED, "differs")],
                               "a01": [State(C1, NOT_COMPARABLE, "first recorded here"), State(C2, SAME, "same")]},
                  determinism_benchmarks={"w03": "bench_determinism.track_hash_changed_w03"})


def _page(history: History | None = None) -> str:
    return single_page(REPORT["latest"], machine_section(REPORT, ROWS_, history or HISTORY,
                                                         lambda bench: f"index.html#{bench}"))


def test_the_page_loads_nothing_and_carries_its_mark():
    page = _page()
    assert is_ours(page) and MARK in page and GENERATOR == "detsim-track publish"
    assert "<script" not in page and " src=" not in page and "url(" not in page
    assert not re.search(r'href="(https?:)?//', page)  # every link stays in the folder
    assert "Plant &lt;b&gt;" in page and "a note &amp; more" in page  # escaped
    assert "asv preview" in page and "python -m http.server" in page  # how to serve asv's own graphs
    assert not is_ours("<html><head><title>mine</title></head></html>")


def test_each_family_row_has_its_colour_and_commit():
    page = _page()
    rows = re.findall(r'<tr class="family" data-family="(\w+)" data-status="([\w ]+)">(.*?)</tr>', page)
    assert [(f, s) for f, s, _ in rows] == [("timing", RED), ("memory", GREEN), ("cost", GREY), ("parity", AMBER),
                                          ("determinism", GREEN)]
    for _, status, body in rows:
        assert f"background:{COLOURS[status]}" in body
    assert "since <code>22222222</code> Plant &lt;b&gt;" in rows[0][2]
    assert 'href="index.html#t?p-x=%271%27"' in rows[0][2]
    assert '<li title="re-measured: x2 &lt;slower&gt;">' in rows[0][2]  # the confirmation's evidence on hover
    assert "at <code>22222222</code>" in rows[1][2]


def test_parity_graphs_put_the_worst_case_first_and_determinism_strips_every_commit():
    page = _page()
    assert re.findall(r'<svg [^>]*data-case="(\w+)"', page) == ["w01", "a01"]
    assert 'class="parity worst" data-case="w01"' in page and page.count('class="acceptance"') == 2
    strips = dict(re.findall(r'<tr class="strip" data-case="(\w+)">(.*?)</tr>', page))
    assert re.findall(r'data-state="([\w ]+)"', strips["w03"]) == [NOT_COMPARABLE, CHANGED]
    assert re.findall(r'data-state="([\w ]+)"', strips["a01"]) == [NOT_COMPARABLE, SAME]
    assert 'href="index.html#bench_determinism.track_hash_changed_w03"' in strips["w03"]
    assert "same as previous" in page and "not comparable here" in page and "1 change(s)" in page


def test_a_strip_shows_not_reproducible_apart_from_changed():
    from dataclasses import replace

    from detsim.track.publish.fingerprints import NOT_REPRODUCIBLE

    history = replace(HISTORY, determinism={**HISTORY.determinism, "s01": [
        State(C1, NOT_COMPARABLE, "first recorded here"), State(C2, NOT_REPRODUCIBLE, "two runs differ (process)")]})
    page = _page(history)
    strips = dict(re.findall(r'<tr class="strip" data-case="(\w+)">(.*?)</tr>', page))
    assert re.findall(r'data-state="([\w ]+)"', strips["s01"]) == [NOT_COMPARABLE, NOT_REPRODUCIBLE]
    assert 'class="cell not-reproducible"' in strips["s01"] and "two runs differ (process)" in strips["s01"]
    assert "1 change(s) and 1 not reproducible in this history" in page and "not reproducible</p>" not in page
