"""status.html: the family rows from a synthetic verdict (colours, words, commits, graph links), the parity graphs'
log-scale maths, and the page: self-contained, marked as this command's, with its graphs, strips and departures."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest

from detsim.track.base.exitcodes import ExitCode
from detsim.track.base.metrics import PARITY_MIN_R
from detsim.track.judge.series import Point, Series
from detsim.track.judge.fingerprints import CHANGED, NOT_COMPARABLE, NOT_REPRODUCIBLE, SAME, State
from detsim.track.report.page import ACCEPT, AMBER, COLOURS, FLOOR, GENERATOR, GREEN, GREY, MARK, RED, ROWS, \
    SERVE_HINT, TICKS, Frame, History, Item, Row, document, family_rows, fmt, is_ours, log_y, machine_page, \
    departing_case, family_table, machine_section, parity_svg, presence, worst_case, x_of, NOTHING_RECORDED, TARGET_UNCOUNTED
from detsim.track.judge.analysis import families_at
from detsim.track.judge.verdict import Report
from detsim.track.judge.finding import Finding

from publish_assets import edge_departure

# ---- publish rows: The family rows from a synthetic verdict: colours, words, the commits named and the graph links.

C1, C2, C3 = "1" * 40, "2" * 40, "3" * 40
SWEEP = "bench_engine.EngineSweep.time_simulate"
BENCHMARKS = {SWEEP: {"param_names": ["pixels"], "params": [["128", "256"]]},
              "bench_parity.track_parity_w01": {"params": []}, "bench_determinism.track_hash_changed_w03": {"params": []}}


def _series(name, family, values, params="", case=None, unit="seconds"):
    return Series(env="e", name=name, params=params, family=family, unit=unit, case=case,
                  points=tuple(Point(c, v) for c, v in zip((C1, C2, C3), values)))


SLOW = _series(SWEEP, "timing", [1.0, 1.0, 2.0], "(pixels=256)")
FAST = _series(SWEEP, "timing", [1.0, 1.0, 1.0], "(pixels=128)")
PARITY = _series("bench_parity.track_parity_w01", "parity", [0.0, 0.0, 0.9], case="w01", unit="1 - r")
HASH = _series("bench_determinism.track_hash_changed_w03", "determinism", [0.0, 0.0, 1.0], case="w03", unit="changed (0/1)")
MEMORY = _series("bench_engine.EngineMemory.peakmem_simulate", "memory", [1e8, 1e8, None], unit="bytes")
REFERENCE = _series("bench_engine.MachineReference.time_reference", "reference", [1.0, 1.0, 1.0])


def _report(findings, unmeasured=(), **fields) -> Report:
    return Report(generated_at="20260101T000000Z", machine="m", envs=("e",), commits=(C1, C2, C3), latest=C3,
                  subjects={C1: "one", C2: "two", C3: "three"}, regressions=tuple(findings), unmeasured=tuple(unmeasured),
                  skipped=0, built=True, notes=(), exit=ExitCode.REGRESSED, **fields)


FINDINGS = [Finding(SLOW, C2, C3, 1.0, 2.0, {"rank_test_p": 1e-6}), Finding(PARITY, C2, C3, 0.0, 0.9),
            Finding(HASH, C2, C3, 0.0, 1.0, {"old_sha256": "a" * 64, "new_sha256": "b" * 64})]


def test_presence_counts_the_latest_point_and_merges_families():
    throughput = _series("bench_engine.Throughput.track_pixel_steps_per_second", "throughput", [5, 5, float("nan")],
                         unit="Mpixel-steps/s")
    here = presence(families_at([SLOW, FAST, MEMORY, REFERENCE, throughput], C3))
    assert set(here) == {"timing", "memory"}  # the reference has no row; throughput joins timing
    assert (here["timing"].measured, here["timing"].skipped) == (2, 1)
    assert here["memory"].failed == ["bench_engine.EngineMemory.peakmem_simulate"]


def test_rows_from_a_regressed_report():
    rows = family_rows(_report(FINDINGS, [MEMORY.label]), presence(families_at([SLOW, FAST, PARITY, HASH, MEMORY], C3)), BENCHMARKS)
    by = {r.family: r for r in rows}
    assert [r.family for r in rows] == list(ROWS)
    assert {f: r.status for f, r in by.items()} == {"timing": RED, "memory": AMBER, "cost": GREY, "parity": RED,
                                                    "determinism": RED}
    [slow] = by["timing"].items
    assert slow.text == f"{SWEEP}(pixels=256): 1 -> 2 seconds (x2.00)" and slow.commit == C3
    assert slow.href == f"index.html#{SWEEP}?p-pixels=256&commits=22222222-33333333"
    assert by["parity"].items[0].text == "w01: r 1.000000000 -> 0.100000000"
    assert by["determinism"].items[0].text == f"w03: image sha256 {'a' * 12} -> {'b' * 12}"
    assert by["memory"].verdict == "not measured" and by["memory"].summary == "1 failed at the latest commit"
    assert by["memory"].items[0].href == "index.html#bench_engine.EngineMemory.peakmem_simulate"
    assert by["cost"].summary == NOTHING_RECORDED
    target = {r.family: r for r in family_rows(_report(FINDINGS, [MEMORY.label], target_results="/t"),
                                               presence(families_at([SLOW, PARITY], C3)), BENCHMARKS)}
    cost = target["cost"]
    assert (cost.status, cost.verdict, cost.summary) == (GREY, "not counted", TARGET_UNCOUNTED)
    assert target["memory"].summary == NOTHING_RECORDED


def test_confirmations_are_shown_and_undecided_or_noise_neither_make_a_row_red_nor_amber():
    undecided = Finding(SLOW, C2, C3, 1.0, 2.0, {"confirmation": "undecided", "decide_command": "detsim-track regressions --machine m"})
    noise = Finding(SLOW, C2, C3, 1.0, 2.0, {"confirmation": "noise"})
    confirmed = Finding(SLOW, C2, C3, 1.0, 2.0, {"confirmation": "confirmed", "confirmation_evidence": "x2.0, p=0.001"})
    here = presence(families_at([SLOW, FAST], C3))
    [row] = [r for r in family_rows(_report([undecided]), here, BENCHMARKS) if r.family == "timing"]
    assert (row.status, row.verdict) == (GREY, "undecided") and row.items[0].text.endswith("[undecided]")
    assert "`detsim-track regressions --machine m` decides" in row.summary
    [row] = [r for r in family_rows(_report([noise]), here, BENCHMARKS) if r.family == "timing"]
    assert row.status == GREEN and "1 dismissed as noise" in row.summary
    [row] = [r for r in family_rows(_report([confirmed]), here, BENCHMARKS) if r.family == "timing"]
    assert row.status == RED and row.items[0].text.endswith("[confirmed]") and row.items[0].evidence == "x2.0, p=0.001"


def test_hashes_skipped_on_another_machine_class_are_not_comparable():
    skipped = _series("bench_determinism.track_hash_changed_w03", "determinism", [0.0, 0.0, float("nan")], case="w03")
    rows = family_rows(_report([]), presence(families_at([FAST, skipped], C3)), BENCHMARKS, "image hashes not compared: ...")
    [row] = [r for r in rows if r.family == "determinism"]
    assert (row.status, row.verdict, row.summary) == (AMBER, "not comparable", "image hashes not compared: ...")
    assert [r.status for r in rows if r.family == "timing"] == [GREEN]


def test_a_family_outside_the_five_gets_its_own_row():
    other = _series("bench_x.track_something", "track", [1, 1, 1], unit="things")
    rows = family_rows(_report([]), presence(families_at([other], C3)), BENCHMARKS)
    assert [r.family for r in rows] == [*ROWS, "track"] and rows[-1].status == GREEN


def test_fingerprints_count_for_determinism_and_the_machine_class_has_no_row():
    prints = _series("bench_determinism.track_fingerprint_w03", "fingerprint", [7.0, 7.0, 7.0], case="w03")
    klass = _series("bench_determinism.track_machine_class", "machine class", [1.0, 1.0, 1.0])
    skipped = _series("bench_determinism.track_hash_changed_w03", "determinism", [0.0, 0.0, float("nan")], case="w03")
    rows = family_rows(_report([]), presence(families_at([prints, klass, skipped], C3)), BENCHMARKS)
    assert [r.family for r in rows] == list(ROWS)
    [row] = [r for r in rows if r.family == "determinism"]
    assert row.status == GREEN and row.summary == "1 measured, none regressed (1 skipped)"


def test_the_determinism_row_says_not_reproducible_before_changed():
    runs = _series("bench_reproducibility.Reproducibility.track_runs_differ", "reproducibility", [0.0, 0.0, 1.0],
                   "(axis='threads', case='w03')", case="w03", unit="runs differ (0/1)")
    irreproducible = Finding(runs, C2, C3, 0.0, 1.0, {"axis": "threads", "runs": "2 threads against 1"})
    both = {r.family: r for r in family_rows(_report([irreproducible, FINDINGS[2]]), presence(families_at([HASH, runs], C3)),
                                             BENCHMARKS)}
    row = both["determinism"]
    assert (row.status, row.verdict, row.summary) == (RED, "not reproducible", "1 not reproducible, 1 changed")
    assert row.items[0].text == "w03: two runs differ (threads)" and row.items[0].commit == C3
    changed = {r.family: r for r in family_rows(_report(FINDINGS[2:]), presence(families_at([HASH], C3)), BENCHMARKS)}
    assert (changed["determinism"].verdict, changed["determinism"].summary) == ("changed", "1 changed")


# ---- publish graphs: Parity graphs: the log-scale maths, the floor, the acceptance line and the worst case.

FRAME = Frame(left=0, right=100, top=0, bottom=160)  # 16 decades over 160 units: 10 units a decade


def test_log_y_places_decades_evenly_and_clamps_at_the_floor():
    assert log_y(1.0, FRAME) == 0
    assert log_y(1e-8, FRAME) == pytest.approx(80)
    assert log_y(1e-9, FRAME) == pytest.approx(90)  # a tenth of 1e-8 is one decade lower
    assert log_y(1e-16 * 1.0001, FRAME) < 160  # just above the floor is drawn above it
    for at_or_below in (FLOOR, 0.0, -1e-12, 1e-20):
        assert log_y(at_or_below, FRAME) == 160
    assert log_y(1.5, FRAME) == 0  # r < 0: clamped to the top


def test_the_acceptance_line_is_the_metrics_one():
    assert ACCEPT == 1 - PARITY_MIN_R
    assert log_y(ACCEPT, FRAME) == pytest.approx(-10 * math.log10(ACCEPT))


def test_ticks_x_and_labels():
    assert TICKS == [1.0, 1e-4, 1e-8, 1e-12, 1e-16]
    assert [x_of(i, 3, FRAME) for i in range(3)] == [0, 50, 100]
    assert x_of(0, 1, FRAME) == 50
    assert fmt(0.0) == "<= 1e-16" and fmt(1e-9) == "1e-09" and fmt(None) == "failed" and fmt(float("nan")) == "skipped"


def _ys(svg: str, cls: str) -> list[float]:
    return [float(y) for y in re.findall(rf'<circle cx="[\d.]+" cy="([\d.]+)" r="3" class="pt {cls}"', svg)]


def test_the_svg_draws_floor_points_hollow_the_acceptance_line_and_breaks_at_gaps():
    points = [("a" * 40, 0.0), ("b" * 40, 1e-9), ("c" * 40, None), ("d" * 40, float("nan")), ("e" * 40, 0.03)]
    svg = parity_svg("w01", points, worst=True, subjects={"e" * 40: "Plant a break"})
    frame = Frame()
    assert svg.startswith("<svg") and svg.endswith("</svg>") and 'class="parity worst"' in svg
    [line] = re.findall(r'<line [^>]*class="acceptance"[^>]*>', svg)
    assert f'y1="{log_y(ACCEPT):.1f}"' in line and 'data-value="0.0005"' in line
    assert _ys(svg, "floor") == [frame.bottom]  # 0 sits on the floor, hollow
    assert _ys(svg, "ok") == [pytest.approx(log_y(1e-9), abs=0.05)]
    assert _ys(svg, "bad") == [pytest.approx(log_y(0.03), abs=0.05)]  # past the line
    assert svg.count('class="failed"') == 1  # the failed commit; the skipped one is not drawn
    assert svg.count("<polyline") == 1  # 0 -> 1e-9 joined; the gap breaks the line before 0.03
    assert "eeeeeeee Plant a break: 1 - r = 0.03" in svg and "&lt;=1e-16" in svg


def test_worst_case_is_the_largest_measured_latest_value():
    assert worst_case({"a": 0.0, "b": 1e-9, "c": None, "d": float("nan")}) == "b"
    assert worst_case({"a": None}) is None
    assert worst_case({"b": 0.0, "a": 0.0}) == "a"  # ties: the first by name


def test_nothing_is_framed_as_the_worst_where_every_case_keeps_to_the_parity_rule():
    for latest, caption in (({"a01": 0.0, "b02": 1e-17}, "every measured case is on the floor"),
                            ({"a01": 0.0, "b02": ACCEPT / 2}, "every measured case keeps to r &gt;= ")):
        history = History(parity=[(case, f"bench_parity.track_parity_{case}", [(C1, 0.0), (C2, value)])
                                  for case, value in latest.items()], determinism={}, determinism_benchmarks={})
        page = _page(history)
        assert "(worst)" not in page and 'class="parity worst"' not in page and "Worst at the latest" not in page
        assert caption in page
        assert departing_case(latest) is None
    assert departing_case({"a01": 0.0, "b02": ACCEPT * 2}) == "b02"


# ---- publish page: status.html: self-contained, marked as this command's, with the rows, parity graphs and determinism strips.

REPORT = Report(generated_at="20260101T000000Z", machine="m", envs=("e",), commits=(C1, C2), latest=C2,
                subjects={C1: "Base", C2: "Plant <b>"}, regressions=(), unmeasured=(), skipped=0, built=True,
                notes=("a note & more",), exit=ExitCode.REGRESSED)
ROWS_ = [Row("timing", RED, "regressed", "1 regressed", (Item("t: 1 -> 2", "index.html#t?p-x=%271%27", C2, "re-measured: x2 <slower>"),)),
         Row("memory", GREEN, "ok", "1 measured"), Row("cost", GREY, "not measured", "none"),
         Row("parity", AMBER, "not comparable", "1 skipped"), Row("determinism", GREEN, "ok", "2 measured")]
HISTORY = History(parity=[("w01", "bench_parity.track_parity_w01", [(C1, 0.0), (C2, 0.2)]),
                          ("a01", "bench_parity.track_parity_a01", [(C1, 0.0), (C2, 0.0)])],
                  determinism={"w03": [State(C1, NOT_COMPARABLE, "first recorded here"), State(C2, CHANGED, "differs")],
                               "a01": [State(C1, NOT_COMPARABLE, "first recorded here"), State(C2, SAME, "same")]},
                  determinism_benchmarks={"w03": "bench_determinism.track_hash_changed_w03"})


def _page(history: History | None = None) -> str:
    return document("detsim status", SERVE_HINT + machine_section(REPORT, ROWS_, history or HISTORY,
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


def test_an_ok_row_names_no_since_even_where_a_step_was_dismissed_as_noise():
    noise = Row("timing", GREEN, "ok", "3 measured, none regressed; 1 dismissed as noise",
                (Item("t: 1 -> 1.1 [noise]", None, C2, "re-measured: x1.0"),))
    table = family_table([noise], REPORT)
    assert "since" not in table and "at <code>22222222</code>" in table and "[noise]" in table


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

    history = replace(HISTORY, determinism={**HISTORY.determinism, "s01": [
        State(C1, NOT_COMPARABLE, "first recorded here"), State(C2, NOT_REPRODUCIBLE, "two runs differ (process)")]})
    page = _page(history)
    strips = dict(re.findall(r'<tr class="strip" data-case="(\w+)">(.*?)</tr>', page))
    assert re.findall(r'data-state="([\w ]+)"', strips["s01"]) == [NOT_COMPARABLE, NOT_REPRODUCIBLE]
    assert 'class="cell not-reproducible"' in strips["s01"] and "two runs differ (process)" in strips["s01"]
    assert "1 change(s) and 1 not reproducible in this history" in page and "not reproducible</p>" not in page


def test_a_skipped_parity_point_is_a_gap_and_a_failed_one_a_cross():
    report = replace(REPORT, commits=("c1", "c2", "c3"), latest="c3", notes=(), history={"parity": [[
        "a01", "bench_parity.track_parity_a01", [["c1", 0.0], ["c2", "nan"], ["c3", None]]]]})
    section, _ = machine_page(report, {})
    assert section.count('class="pt ') == 1 and section.count('class="failed"') == 1


def test_a_targets_parity_finding_shows_where_its_image_departs(tmp_path):
    record = edge_departure()
    assert record["where"] == "edges" and record["central_passes_full_fails"]  # what the plant makes
    shown = {**record, "case": "a01_cubic_mosflm_center", "commit": C2, "sentence": "the images part at the edges"}
    page = document("t", machine_section(REPORT, ROWS_, HISTORY, lambda bench: "#", [shown]))
    [section] = re.findall(r'<div class="departure" data-case="a01_cubic_mosflm_center">(.*?)</div>', page)
    assert "at <code>22222222</code> Plant &lt;b&gt;: the images part at the edges." in section
    assert "full frame r = 0.89331296 (fails); central region rows 16-48, cols 16-48 r = 1.00000000 (passes)" in section
    assert "the difference sits: edges" in section
    blocks = re.findall(r'<td style="background:hsl\(0,80%,(\d+)%\)" title="([^"]+)">', section)
    assert len(blocks) == 16 * 16  # the map, block by block: the edge band dark, the middle white
    assert blocks[0] == ("40", "0.889") and blocks[16 * 8 + 8] == ("100", "0")
    worst = re.findall(r"<tr><td>\((\d+), (\d+)\)</td><td>([^<]+)</td><td>([^<]+)</td><td>([^<]+)</td></tr>", section)
    assert worst[0] == ("2", "2", "0.901496", "0.100166", "9") and len(worst) == len(record["worst"])
    assert "table.departure-map" in page and "table.departure-map" not in _page()  # its style only when shown
