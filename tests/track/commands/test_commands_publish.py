"""``detsim-track publish``: bad input refused in one line before anything is written; the page drawn from
the latest verdict.json alone, built aside and swapped in whole (asv's page, the status page beside it, linked
from it, the folder made offline); a page that cannot be built leaves the old one as it was; in headless
Chromium (slow), the status page from disk with no network, and asv's own page served with its vendored
scripts and no network."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from detsim.track.cli import main
from detsim.track.commands import publish
from detsim.track.report.asvpage import ITEM
from detsim.track.report.events import ASV_SCRIPT, ASV_TAG
from detsim.track.report.page import COLOURS, is_ours
from detsim.track.report.page import GREEN, GREY, RED
from detsim.track.report.asvpage import remote_loads
from publish_assets import asv_published, edge_departure, fake_asset_cache, store_departure, stored_in

DATA = Path(__file__).resolve().parents[2] / "data" / "asv"
_real_asv_publish = publish.asv_publish
REPO = Path(__file__).resolve().parents[3]
ASV_WWW = Path(pytest.importorskip("asv.www", reason="the published page is asv's (pip install -e '.[dev]')").__path__[0])
NO_NPM = {"PATH": "/nonexistent"}


def _asv_page(root: Path, dest: Path) -> None:
    """``asv publish`` of a project whose commits are in no git repository: asv's own files, as it copies them."""
    shutil.copytree(ASV_WWW, dest, dirs_exist_ok=True)


@pytest.fixture
def project(tmp_path, monkeypatch, capsys):
    """A copy of the regressed fixture project, judged (its verdict in reports/latest), with a page as
    ``asv publish`` leaves it (asv's own files)."""
    root = tmp_path / "project"
    shutil.copytree(DATA / "regressed", root)
    assert main(["regressions", "--repo", str(root), "--remeasure", "0"]) == 1
    capsys.readouterr()
    monkeypatch.setattr(publish, "asv_publish", _asv_page)
    _asv_page(root, root / "reports" / "html")
    return root


def _publish(root: Path, *extra: str) -> int:
    return main(["publish", "--repo", str(root), *extra])


def test_no_verdict_is_one_line_and_exit_2_and_nothing_written(tmp_path, capsys, monkeypatch):
    root = tmp_path / "project"
    shutil.copytree(DATA / "regressed", root)
    monkeypatch.setattr(publish, "asv_publish", _asv_page)
    assert _publish(root) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "latest/verdict.json: no verdict there" in err
    assert "run `detsim-track regressions` first" in err
    assert not (root / "reports").exists()


@pytest.mark.parametrize("content, why", [("{not json", "unreadable"), ('{"report": "other"}', "not a verdict")])
def test_an_unusable_verdict_is_one_line_naming_it(project, capsys, content, why):
    verdict = project / "reports" / "latest" / "verdict.json"
    verdict.write_text(content)
    page = (project / "reports" / "html" / "index.html").read_text()
    assert _publish(project) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(verdict) in err and why in err
    assert (project / "reports" / "html" / "index.html").read_text() == page
    assert not (project / "reports" / "html" / "status.html").exists()


def test_the_page_reads_the_verdict_alone_never_the_history(project, capsys, tmp_path):
    # the history is gone after the judgement: the page is still drawn, from verdict.json
    shutil.rmtree(project / "results")
    cache = tmp_path / "cache"
    fake_asset_cache(cache)
    assert _publish(project, "--assets", str(cache)) == 0
    status = (project / "reports" / "html" / "status.html").read_text()
    [verdict] = json.loads((project / "reports" / "latest" / "verdict.json").read_text())["machines"].values()
    assert "parity regressed" in capsys.readouterr().out and f"latest <code>{verdict['latest'][:8]}" in status
    assert "UNDECIDED" not in status and "[undecided]" in status  # the verdict's words: --remeasure 0


def test_a_verdict_of_an_older_commit_than_head_is_refused(project, capsys):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "asv.conf.json"], ["commit", "-q", "-m", "one"]):
        subprocess.run([*git, *args], cwd=project, check=True, capture_output=True)
    assert _publish(project) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "but HEAD is" in err and "run `detsim-track regressions` first" in err


def test_a_machine_the_verdict_did_not_judge_is_one_line(project, capsys):
    assert _publish(project, "--machine", "elsewhere") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no verdict on machine elsewhere (judged: fixture-2cpu)" in err


def test_a_page_that_cannot_be_built_leaves_the_old_one_whole(project, capsys, tmp_path, monkeypatch):
    html = project / "reports" / "html"
    cache = tmp_path / "cache"
    fake_asset_cache(cache)
    assert _publish(project, "--assets", str(cache)) == 0
    before = {p.relative_to(html): p.read_bytes() for p in html.rglob("*") if p.is_file()}

    def half_then_fail(root, dest):
        _asv_page(root, dest)
        (dest / "status.html").write_text("half")
        raise OSError(28, "No space left on device", str(dest / "graphs"))

    monkeypatch.setattr(publish, "asv_publish", half_then_fail)
    capsys.readouterr()
    verdict = (project / "reports" / "latest" / "verdict.json").read_bytes()
    assert _publish(project, "--assets", str(cache)) == 2  # the page's own status: the verdict's stays 1
    assert (project / "reports" / "latest" / "verdict.json").read_bytes() == verdict
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("detsim-track publish: the page was not written: ") and "No space left on device" in err
    assert {p.relative_to(html): p.read_bytes() for p in html.rglob("*") if p.is_file()} == before
    assert not [p.name for p in html.parent.iterdir() if p.name.startswith(".")]  # no half-built folder left


def test_asv_publish_failing_is_one_line_and_the_old_page_stays(project, capsys, monkeypatch):
    monkeypatch.setattr(publish, "asv_publish", _real_asv_publish)
    index = (project / "reports" / "html" / "index.html").read_text()
    assert _publish(project) == 2  # asv cannot find these commits in any repository
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the page was not written: `asv publish` failed (" in err
    assert (project / "reports" / "html" / "index.html").read_text() == index


def test_a_status_page_not_written_here_is_never_replaced(project, capsys):
    html = project / "reports" / "html"
    mine = "<html><head><title>a page of my own</title></head></html>"
    (html / "status.html").write_text(mine)
    index = (html / "index.html").read_text()
    assert _publish(project, "--assets", str(project / "cache")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "was not written by detsim-track publish; not replaced" in err
    assert (html / "status.html").read_text() == mine and (html / "index.html").read_text() == index
    assert not (html / "vendor").exists()


def test_the_page_is_written_linked_and_the_folder_made_offline(project, capsys, tmp_path):
    html, cache = project / "reports" / "html", tmp_path / "cache"
    fake_asset_cache(cache)
    assert _publish(project, "--assets", str(cache)) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "wrote" in out and "parity regressed" in out and "memory ok" in out
    status = (html / "status.html").read_text()
    assert is_ours(status) and "a01_cubic_mosflm_center" in status
    index = (html / "index.html").read_text()
    assert index.count(ITEM) == 1 and remote_loads(index) == []
    assert index.replace("\n\t" + ITEM, "") != (ASV_WWW / "index.html").read_text()  # vendored too
    assert oct((html / "status.html").stat().st_mode & 0o777) == oct(0o644 & ~_umask())
    # again: its own page is replaced, the link and the copies are not doubled
    assert _publish(project, "--assets", str(cache)) == 0
    assert (html / "index.html").read_text() == index


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_without_npm_and_cache_one_line_says_so_and_asv_page_stays(project, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    html = project / "reports" / "html"
    assert _publish(project, "--assets", str(tmp_path / "empty-cache")) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and out[0].startswith("detsim-track publish: offline copies not made: npm is not installed")
    index = (html / "index.html").read_text()
    assert index.count(ASV_TAG) == 1 and (html / ASV_SCRIPT).is_file()  # the events on asv's graphs: offline
    assert index.replace("\n\t" + ITEM, "").replace(ASV_TAG + "\n", "") == (ASV_WWW / "index.html").read_text()
    assert is_ours((html / "status.html").read_text())


# -- in headless Chromium, with no network -------------------------------------------------------

def _browser_session(tmp_path):
    """The planted end-to-end test's WebDriver client, on Chromium with no network (its BROWSER_FLAGS)."""
    import test_asv_suite as suite

    chromium, driver = suite._browser()
    if not driver:
        pytest.skip("chromedriver is needed for screenshots (install chromium-driver or set DETSIM_CHROMEDRIVER)")
    assert any(flag.startswith("--host-resolver-rules=MAP * ~NOTFOUND") for flag in suite.BROWSER_FLAGS)
    return suite, suite._WebDriver(driver, chromium, tmp_path / "profile")


def _serve(suite, html):
    """``html`` served on a free local port in a thread of its own: (the server, its index.html's address)."""
    handler = functools.partial(suite._QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/index.html"


ROW_STATE = """
return Array.from(document.querySelectorAll('tr.family')).map(tr => {
  const cell = tr.querySelector('td.verdict').getBoundingClientRect();
  return {family: tr.dataset.family, status: tr.dataset.status, text: tr.innerText,
          x: Math.round(cell.left + 6), y: Math.round(cell.top + cell.height / 2)};
});
"""
PAGE_STATE = """
const accept = Array.from(document.querySelectorAll('svg.parity line.acceptance'));
return {title: document.title, scripts: document.scripts.length,
        loaded: performance.getEntriesByType('resource').map(e => e.name),
        accept: accept.map(l => l.getBoundingClientRect().width),
        worst: document.querySelector('svg.parity.worst').dataset.case,
        strips: Array.from(document.querySelectorAll('tr.strip')).map(tr =>
          [tr.dataset.case, Array.from(tr.querySelectorAll('td.cell')).map(td => td.dataset.state)]),
        text: document.body.innerText};
"""


def _hex(rgb) -> str:
    return "#%02x%02x%02x" % tuple(rgb[:3])


@pytest.mark.slow
def test_the_status_page_opens_from_disk_with_no_network(project, tmp_path, remeasured_as):
    pil = pytest.importorskip("PIL.Image")
    cache = tmp_path / "cache"
    fake_asset_cache(cache)
    remeasured_as(default=2.0)
    assert main(["regressions", "--repo", str(project)]) == 1  # the timing suspects re-measured: confirmed
    assert _publish(project, "--assets", str(cache)) == 0
    suite, browser = _browser_session(tmp_path)
    try:
        browser.get((project / "reports" / "html" / "status.html").as_uri())
        rows, state = browser.run(ROW_STATE), browser.run(PAGE_STATE)
        shot = tmp_path / "status.png"
        browser.screenshot(shot)
    finally:
        browser.close()
    assert state["title"].startswith("detsim status") and state["scripts"] == 0 and state["loaded"] == []
    assert [(r["family"], r["status"]) for r in rows] == [("timing", RED), ("memory", GREEN), ("cost", GREY),
                                                          ("parity", RED), ("determinism", RED)]
    text = {r["family"]: r["text"] for r in rows}
    assert "since 5432ab33" in text["parity"] and "a01_cubic_mosflm_center: r 1.000000000 -> 0.993700000" in text["parity"]
    assert "since 224b823e" in text["determinism"] and "o01_polar_0.9: image sha256" in text["determinism"]
    assert "EngineSweep.time_simulate(pixels=256, dtype='float64')" in text["timing"]
    image = pil.open(shot).convert("RGB")
    for r in rows:  # the colour of each verdict cell, as drawn
        assert _hex(image.getpixel((r["x"], r["y"]))) == COLOURS[r["status"]], r
    assert len(state["accept"]) == 2 and all(width > 100 for width in state["accept"])  # one line per case, drawn
    assert state["worst"] == "a01_cubic_mosflm_center"
    strips = dict(state["strips"])
    assert strips["a01_cubic_mosflm_center"] == ["not comparable", "same", "same", "changed", "same"]
    assert strips["o01_polar_0.9"] == ["not comparable", "same", "same", "same", "changed"]
    keep = os.environ.get("DETSIM_STATUS_SCREENSHOT")  # where to keep the checked page's picture (the README's)
    if keep:
        (REPO / keep).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, REPO / keep)
    assert "python -m http.server" in state["text"]


@pytest.mark.slow
def test_asv_page_served_with_vendored_scripts_draws_a_graph_with_no_network(tmp_path):
    root = asv_published(tmp_path)
    html = root / "reports" / "html"
    assert remote_loads((html / "index.html").read_text())  # as asv wrote it: from CDNs
    cache = REPO / ".asv" / "www-assets"  # the real npm packages, fetched once
    assert main(["regressions", "--repo", str(root), "--remeasure", "0"]) == 1
    code = main(["publish", "--repo", str(root), "--assets", str(cache)])
    assert code == 0
    if remote_loads((html / "index.html").read_text()):
        pytest.skip(f"the npm packages of asv's scripts are not in {cache} and npm could not fetch them")
    # the control: what the page loaded from a CDN before cannot be had in this browser
    (html / "probe.html").write_text('<script src="https://code.jquery.com/jquery-3.3.1.min.js" '
                                     'onload="document.title=\'loaded\'" onerror="document.title=\'blocked\'"></script>')
    suite, browser = _browser_session(tmp_path)
    server, site = _serve(suite, html)
    try:
        browser.get(site.replace("index.html", "probe.html"))
        assert browser.run("return document.title") == "blocked"
        browser.get(site)
        grid = suite._wait_for_graph(browser, min_coloured=1)
        browser.screenshot(tmp_path / "grid.png")
        assert "airspeed velocity" in grid["title"] and "bench_parity" in grid["text"], grid["title"]
        assert browser.run("return document.querySelector('#nav-li-status a').getAttribute('href')") == "status.html"
        loaded = browser.run("return performance.getEntriesByType('resource').map(e => e.name)")
        assert not [u for u in loaded if not u.startswith("http://127.0.0.1:")], loaded
        benchmark = "bench_engine.EngineSweep.time_simulate"
        browser.run("performance.setResourceTimingBufferSize(100000); performance.clearResourceTimings();")
        browser.get(f"{site}#{benchmark}?p-pixels=256&p-dtype=%27float64%27")
        state = suite._wait_for_graph(browser, min_coloured=200)
        browser.screenshot(tmp_path / "graph.png")
        assert benchmark in state["text"] and state["coloured"] >= 200, state["coloured"]
        browser.get(site.replace("index.html", "status.html"))
        assert browser.run("return document.querySelectorAll('tr.family').length") == 5
    finally:
        server.shutdown()
        browser.close()



# -- the history's events, marked on the graphs in headless Chromium ---------------------------------------

MARKS_STATE = """
const centre = e => { const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 3, r.height]; };
return Array.from(document.querySelectorAll('svg.parity')).map(svg => ({case: svg.dataset.case,
  points: Array.from(svg.querySelectorAll('circle.pt')).map(c => [c.querySelector('title').textContent.slice(0, 8),
                                                                  centre(c)[0]]),
  lines: Array.from(svg.querySelectorAll('line.event')).map(l => [l.dataset.step, ...centre(l)]),
  markers: Array.from(svg.querySelectorAll('path.event-marker')).map(centre)}));
"""


def _events_of(root: Path, family: str | None = None) -> list[dict]:
    """The events of the verdict ``detsim-track regressions`` stored for ``root`` (its one machine)."""
    [stored] = json.loads((root / "reports" / "latest" / "verdict.json").read_text())["machines"].values()
    return [e for e in stored["events"] if family is None or e["family"] == family]


@pytest.mark.slow
def test_the_status_page_in_a_browser_marks_each_parity_event_at_its_commit(project, tmp_path):
    pil = pytest.importorskip("PIL.Image")
    fake_asset_cache(tmp_path / "cache")
    assert _publish(project, "--assets", str(tmp_path / "cache")) == 0
    events = _events_of(project, "parity")
    assert [(e["case"], e["step"], e["commit"][:8]) for e in events] == [("a01_cubic_mosflm_center", "regressed",
                                                                          "5432ab33")]
    suite, browser = _browser_session(tmp_path)
    try:
        browser.get((project / "reports" / "html" / "status.html").as_uri())
        graphs, text = browser.run(MARKS_STATE), browser.run("return document.body.innerText")
        browser.screenshot(tmp_path / "status.png")
    finally:
        browser.close()
    image = pil.open(tmp_path / "status.png").convert("RGB")
    drawn = {g["case"]: g for g in graphs}
    assert sorted(drawn) == ["a01_cubic_mosflm_center", "o01_polar_0.9"]
    for case, graph in drawn.items():
        mine = [e for e in events if e["case"] == case]
        assert [step for step, *_ in graph["lines"]] == [e["step"] for e in mine], case
        points = dict(graph["points"])
        for event, (_, x, _, height), (mx, my, _) in zip(mine, graph["lines"], graph["markers"]):
            assert abs(x - points[event["commit"][:8]]) < 0.5 and abs(mx - x) < 0.5  # at its commit's point
            assert height > 80  # from the top of the plot to its floor
            assert _hex(image.getpixel((round(mx), round(my)))) == "#c62828"  # its triangle, red: the step flags
        assert len(graph["markers"]) == len(mine)
    assert "marks an event of that case's history at its commit" in text and "(1 drawn," in text


ASV_MARKS = r"""
const holder = $('#main-graph'), plot = holder.data('plot'), main = $.asv.main_json;
const markers = holder.find('.detsim-event').toArray();
if (!plot || plot === window.detsimShownBefore || !main || !markers.length) return null;  // the new address' graph
const axis = plot.getAxes().xaxis, mode = axis.options.mode, off = plot.getPlotOffset();
const canvas = holder.find('canvas.flot-base')[0];
const ratio = canvas.width / canvas.clientWidth, pixels = canvas.getContext('2d');
const revision = {};
for (const r in main.revision_to_hash) revision[main.revision_to_hash[r]] = Number(r);
const key = document.getElementById('detsim-events-key'), box = key && key.getBoundingClientRect();
const seen = key && box.height > 0 && document.elementFromPoint(box.left + 5, box.top + 5) !== null &&
  key.contains(document.elementFromPoint(box.left + 5, box.top + 5));  // shown, and not under asv's bar
return {mode: mode, key: key ? key.textContent : '', key_seen: seen, markers: markers.map(d => {
  const rev = revision[d.dataset.commit], at = off.left + axis.p2c(mode === 'time' ? main.revision_to_date[rev] : rev);
  const column = pixels.getImageData(Math.round(at * ratio), Math.round(off.top * ratio), 1,
                                     Math.round(plot.height() * ratio)).data;
  const want = getComputedStyle(d).color.match(/\d+/g).map(Number);  // the marker's colour, its line's
  let same = 0;  // how much of the plot's height the event's line covers in the commit's column
  for (let i = 0; i < column.length; i += 4)
    if ([0, 1, 2].every(c => Math.abs(column[i + c] - want[c]) < 30) && column[i + 3] > 200) same++;
  return {commit: d.dataset.commit, count: Number(d.dataset.count), title: d.title, colour: getComputedStyle(d).color,
          offset: parseFloat(d.style.left) + 5 - at, covered: same / (column.length / 4)};
})};
"""


SHOWN_BEFORE = "window.detsimShownBefore = window.jQuery && jQuery('#main-graph').data('plot');"
UNMARKED = """
const plot = jQuery('#main-graph').data('plot');
if (!plot || plot === window.detsimShownBefore) return null;
return {markers: jQuery('#main-graph .detsim-event').length, key: jQuery('#detsim-events-key').is(':visible')};
"""


def _asv_marks(browser, address: str) -> dict:
    """asv's main graph at ``address``, once drawn with the events' markers: their commits and where they are
    (never the graph shown before: opening another benchmark is no new page load in asv's page)."""
    import time

    browser.run(SHOWN_BEFORE)
    browser.get(address)
    deadline = time.monotonic() + 60
    while (state := browser.run(ASV_MARKS)) is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert state is not None, f"{address}: no event marked on asv's graph"
    return state


@pytest.mark.slow
def test_asvs_graphs_in_a_browser_mark_each_event_at_its_commit_with_its_key(tmp_path):
    import time

    root = asv_published(tmp_path)
    html = root / "reports" / "html"
    assert main(["regressions", "--repo", str(root), "--remeasure", "0"]) == 1
    assert main(["publish", "--repo", str(root), "--assets", str(REPO / ".asv" / "www-assets")]) == 0
    if remote_loads((html / "index.html").read_text()):
        pytest.skip("the npm packages of asv's scripts are not in .asv/www-assets and npm could not fetch them")
    [parity] = _events_of(root, "parity")
    timing = [e for e in _events_of(root, "timing") if e["benchmark"] == "bench_engine.EngineSweep.time_simulate"]
    assert len(timing) == 2 and timing[0]["commit"] == timing[1]["commit"] != parity["commit"]
    suite, browser = _browser_session(tmp_path)
    server, site = _serve(suite, html)
    try:
        for scale in ("", "?x-axis-scale=date"):  # on asv's commit axis, and its date axis
            state = _asv_marks(browser, f"{site}#{parity['benchmark']}{scale}")
            assert state["mode"] == ("time" if scale else None)
            [marker] = state["markers"]
            assert marker["commit"] == parity["commit"] and marker["count"] == 1, marker
            assert abs(marker["offset"]) < 1 and marker["covered"] > 0.9, marker  # over its commit, drawn
            assert marker["colour"] == "rgb(198, 40, 40)" and "regressed parity a01_cubic_mosflm_center" in marker["title"]
            assert state["key"].startswith("detsim events▼ red: a step that flags") and state["key_seen"], state["key"]
        state = _asv_marks(browser, f"{site}#{timing[0]['benchmark']}")  # (on the date axis still: asv keeps it)
        [marker] = state["markers"]  # both parameters' events, at one commit: one marker naming both
        assert marker["commit"] == timing[0]["commit"] and marker["count"] == 2 and abs(marker["offset"]) < 1
        assert "(128, float64)" in marker["title"] and "(256, float64)" in marker["title"]
        assert marker["colour"] == "rgb(117, 117, 117)" and marker["covered"] > 0.9  # not re-measured: grey
        state = _asv_marks(browser, f"{site}#{timing[0]['benchmark']}?p-pixels=256&p-dtype=%27float64%27")
        [marker] = state["markers"]  # one parameter chosen: its event alone
        assert marker["count"] == 1 and "(256, float64)" in marker["title"] and "(128," not in marker["title"]
        assert marker["covered"] > 0.9
        browser.run(SHOWN_BEFORE)
        browser.get(f"{site}#bench_engine.EngineMemory.peakmem_simulate")  # a benchmark without events
        deadline = time.monotonic() + 60
        while (unmarked := browser.run(UNMARKED)) is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert unmarked == {"markers": 0, "key": False}  # no marker, and the key hidden
    finally:
        server.shutdown()
        browser.close()

def test_two_machines_on_one_history_get_a_section_each_and_the_agreement(project, capsys, tmp_path, remeasured_as):
    asv = project / "results" / "asv"
    shutil.copytree(asv / "fixture-2cpu", asv / "fixture-1thread")
    machine = json.loads((asv / "fixture-1thread" / "machine.json").read_text())
    (asv / "fixture-1thread" / "machine.json").write_text(json.dumps({**machine, "machine": "fixture-1thread"}))
    cache = tmp_path / "cache"
    fake_asset_cache(cache)
    assert _publish(project, "--assets", str(cache)) == 0  # the verdict of one machine: its page alone
    assert 'data-machine="fixture-1thread"' not in (project / "reports" / "html" / "status.html").read_text()
    assert main(["regressions", "--repo", str(project), "--remeasure", "0"]) == 1
    capsys.readouterr()
    assert _publish(project, "--assets", str(cache)) == 0
    assert "fixture-1thread: timing undecided" in capsys.readouterr().out  # not re-measured yet
    remeasured_as(default=2.0)
    assert main(["regressions", "--repo", str(project)]) == 1  # re-measures, keeps the outcomes
    capsys.readouterr()
    assert _publish(project, "--assets", str(cache)) == 0
    out = capsys.readouterr().out
    assert "fixture-1thread: timing regressed" in out and "fixture-2cpu: timing regressed" in out
    page = (project / "reports" / "html" / "status.html").read_text()
    assert is_ours(page) and "on 2 machines" in page
    assert page.count('<section class="machine" data-machine="fixture-1thread">') == 1
    assert page.count('<section class="machine" data-machine="fixture-2cpu">') == 1
    assert "parity: both machines agree, 1 regressed on each" in page
    assert 'href="index.html#bench_parity.track_parity_a01_cubic_mosflm_center?machine=fixture-1thread' in page
    # one machine named: its page alone
    assert _publish(project, "--assets", str(cache), "--machine", "fixture-2cpu") == 0
    page = (project / "reports" / "html" / "status.html").read_text()
    assert 'data-machine="fixture-2cpu"' in page and "fixture-1thread" not in page


def test_a_status_page_that_is_a_link_is_not_followed(project, capsys, tmp_path):
    html = project / "reports" / "html"
    elsewhere = tmp_path / "elsewhere.html"
    elsewhere.write_text('<meta name="generator" content="detsim-track publish">')  # even one that looks ours
    (html / "status.html").symlink_to(elsewhere)
    assert _publish(project, "--assets", str(tmp_path / "cache")) == 2
    assert "status.html is not a regular file; not replaced" in capsys.readouterr().err
    assert elsewhere.read_text() == '<meta name="generator" content="detsim-track publish">'


def test_asvs_regressions_tab_lists_what_the_verdict_flags_without_re_measuring(tmp_path, capsys, remeasured_as):
    root = asv_published(tmp_path)
    html = root / "reports" / "html"
    own = json.loads((html / "regressions.json").read_text())["regressions"]
    measured = remeasured_as(default=1.0)  # re-measuring finds the timing steps to be noise
    assert main(["regressions", "--repo", str(root)]) == 1
    verdict = root / "reports" / "latest" / "verdict.json"
    [stored] = json.loads(verdict.read_text())["machines"].values()
    flags = [r for r in stored["regressions"] if r["label"] in ("REGRESSED", "CHANGED", "NONDETERMINISTIC")]
    count = len(measured)
    capsys.readouterr()
    assert main(["publish", "--repo", str(root), "--assets", str(tmp_path / "cache")]) == 0
    assert len(measured) == count  # the page reads the verdict: nothing re-measured
    assert "Regressions tab: the verdict's 3 flagged findings" in capsys.readouterr().out
    listed = json.loads((html / "regressions.json").read_text())["regressions"]
    assert sorted(e[0] for e in listed) == sorted(f["benchmark"] + f["params"] for f in flags)  # no parameters
    assert any(e[0].startswith("bench_engine.EngineSweep") for e in own)  # asv listed the noise as regressions
    assert all((html / e[1]).is_file() for e in listed)
    assert (html / "regressions.xml").read_text().count("<entry>") == 3
    before = (html / "regressions.json").read_bytes()
    assert main(["publish", "--repo", str(root), "--assets", str(tmp_path / "cache")]) == 0
    assert (html / "regressions.json").read_bytes() == before  # its own list rewritten the same


def test_a_folder_that_is_not_asvs_page_is_refused_and_left_alone(project, capsys, tmp_path):
    html = tmp_path / "mine"
    html.mkdir()
    (html / "notes.txt").write_text("my notes\n")
    assert _publish(project, "--html", str(html)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not asv's page (no index.html); not replaced" in err
    assert [p.name for p in html.iterdir()] == ["notes.txt"] and not list(tmp_path.glob(".mine*"))


TAB_STATE = """
const rows = Array.from(document.querySelectorAll('#regressions-body table.table:not(.ignored) tbody tr'));
return rows.map(tr => { const a = tr.querySelector('td a'); return {name: a.textContent, href: a.getAttribute('href'),
  cells: Array.from(tr.querySelectorAll('td')).map(td => td.textContent)}; });
"""


@pytest.mark.slow
@pytest.mark.parametrize("ratio, count", [(1.0, 3), (2.0, 6)], ids=["timing-noise", "timing-confirmed"])
def test_asvs_regressions_tab_in_a_browser_lists_the_verdict_and_its_links_draw(tmp_path, remeasured_as, ratio,
                                                                                 count):
    import time

    root = asv_published(tmp_path)
    html = root / "reports" / "html"
    remeasured_as(default=ratio)  # re-measuring finds the timing steps asv lists to be noise, or confirms them
    assert main(["regressions", "--repo", str(root)]) == 1
    assert main(["publish", "--repo", str(root), "--assets", str(REPO / ".asv" / "www-assets")]) == 0
    if remote_loads((html / "index.html").read_text()):
        pytest.skip("the npm packages of asv's scripts are not in .asv/www-assets and npm could not fetch them")
    listed = json.loads((html / "regressions.json").read_text())["regressions"]
    suite, browser = _browser_session(tmp_path)
    server, site = _serve(suite, html)
    try:
        browser.get(site + "#/regressions")
        deadline = time.monotonic() + 60
        while not (rows := browser.run(TAB_STATE)) and time.monotonic() < deadline:
            time.sleep(0.5)
        browser.screenshot(tmp_path / "regressions.png")
        assert sorted(r["name"] for r in rows) == sorted(e[0] for e in listed) and len(rows) == count, rows
        assert any("EngineSweep" in r["name"] for r in rows) == (ratio > 1)  # noise: not a regression here either
        for row in rows:  # each row's link opens its graph with points drawn
            browser.get(site + row["href"])
            state = suite._wait_for_graph(browser, min_coloured=20)
            assert row["name"].split("(")[0] in state["text"] and state["coloured"] >= 20, (row, state["coloured"])
    finally:
        server.shutdown()
        browser.close()


def test_a_targets_parity_finding_shows_where_its_image_departs(project, capsys, tmp_path, monkeypatch):
    monkeypatch.setattr("detsim.track.target.departure.stored", stored_in, raising=False)
    path = project / "reports" / "latest" / "verdict.json"
    whole = json.loads(path.read_text())
    [(machine, verdict)] = whole["machines"].items()
    [parity] = [f for f in verdict["regressions"] if f["family"] == "parity"]
    store_departure(project / "results" / "target", parity["first_bad"], parity["case"], edge_departure())
    cache = tmp_path / "cache"
    fake_asset_cache(cache)
    assert _publish(project, "--assets", str(cache)) == 0  # detsim's own verdict: no departure
    assert 'class="departure"' not in (project / "reports" / "html" / "status.html").read_text()
    path.write_text(json.dumps({**whole, "machines": {machine: {**verdict, "target_results": "results/target"}}}))
    assert _publish(project, "--assets", str(cache)) == 0
    page = (project / "reports" / "html" / "status.html").read_text()
    assert f'<div class="departure" data-case="{parity["case"]}">' in page
    assert "the images part at the edges: 100% of the difference in the outer 3 px" in page
    assert "the central region passes (r = 1.00000000) while the full frame fails" in page
    assert "<td>(2, 2)</td><td>0.901496</td><td>0.100166</td><td>9</td>" in page  # the worst pixel, both values
    path.write_text(json.dumps(whole))  # the flag names the results where the verdict does not
    assert _publish(project, "--assets", str(cache), "--target-results", str(project / "results" / "target")) == 0
    assert page == (project / "reports" / "html" / "status.html").read_text()
