"""asv's published folder: the links into its graphs and the status link, its Regressions tab rewritten to the
verdict, its CDN scripts copied in, and the folder swapped in whole."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from detsim.track.judge import confirm
from detsim.track.judge.finding import flags
from detsim.track.judge.verdict import Judgement
from detsim.track.base.output import json_text
from detsim.track.report import asvpage
from detsim.track.report.asvpage import ASSETS, ITEM, LIST, NPM_CACHE, TabError, _graph_path, add_status_link, \
    fetch_missing, graph_url, local_path, read_index, remote_loads, replacing, rewrite, tab, tab_json, \
    vendor_pages
from detsim.track.judge.analysis import analyse

from publish_assets import asv_published, fake_asset_cache


# ---- publish links: Addresses into asv's graphs, in the hash format asv 0.6.6's page parses; the status link in asv's navigation

ASV_WWW = Path(pytest.importorskip("asv.www", reason="the published page is asv's (pip install -e '.[dev]')").__path__[0])
ASV_INDEX = ASV_WWW / "index.html"

SWEEP = {"param_names": ["pixels", "dtype"], "params": [["128", "256"], ["'float32'", "'float64'"]]}
BENCHMARKS = {"bench_engine.EngineSweep.time_simulate": SWEEP, "bench_parity.track_parity_a01": {"params": []}}


def _parse_hash(url: str) -> tuple[str, dict[str, list[str]]]:
    """What asv.js's parse_hash_string makes of the address' hash (its algorithm, in Python)."""
    hashed = url.split("#", 1)[1]
    location, _, rest = hashed.partition("?")
    params: dict[str, list[str]] = {}
    for part in filter(None, rest.split("&")):
        key, value = part.split("=")
        params.setdefault(unquote(key.replace("+", " ")), []).append(unquote(value.replace("+", " ")))
    return unquote(location), params


def test_parameter_values_are_asv_own_texts():
    _, params = _parse_hash(graph_url("bench_engine.EngineSweep.time_simulate", "(pixels=256, dtype='float64')",
                                      BENCHMARKS))
    assert params == {"p-pixels": ["256"], "p-dtype": ["'float64'"]}
    assert graph_url("bench_engine.EngineSweep.time_simulate", "(pixels=512, dtype='float64')", BENCHMARKS) == \
        "index.html#bench_engine.EngineSweep.time_simulate"


def test_a_parametrized_graph_selects_its_series_and_highlights_the_commits():
    url = graph_url("bench_engine.EngineSweep.time_simulate", "(pixels=256, dtype='float64')", BENCHMARKS,
                    commits=("1234567890abcdef", "fedcba0987654321"))
    assert url.startswith("index.html#bench_engine.EngineSweep.time_simulate?")
    location, params = _parse_hash(url)
    assert location == "bench_engine.EngineSweep.time_simulate"
    assert params == {"p-pixels": ["256"], "p-dtype": ["'float64'"], "commits": ["12345678-fedcba09"]}
    assert SWEEP["params"][1].index(params["p-dtype"][0]) == 1  # asv's includes() test finds it


def test_plain_graphs_and_unknown_combinations():
    assert graph_url("bench_parity.track_parity_a01", "", BENCHMARKS) == "index.html#bench_parity.track_parity_a01"
    assert graph_url("bench_parity.track_parity_a01", "", BENCHMARKS, commits=(None, "abcdef0123")) == \
        "index.html#bench_parity.track_parity_a01?commits=abcdef01"
    # a combination asv does not list opens the graph with asv's default selection
    assert graph_url("gone.bench", "(x=1)", BENCHMARKS) == "index.html#gone.bench"


def test_the_link_follows_the_regressions_tab_and_nothing_else_changes():
    text = ASV_INDEX.read_text()
    linked = add_status_link(text)
    assert linked.count(ITEM) == 1 and 'href="status.html"' in linked
    assert linked.index(ITEM) > linked.index('<li id="nav-li-regressions">')
    assert linked.replace("\n\t" + ITEM, "") == text
    assert add_status_link(linked) == linked


def test_a_page_without_the_regressions_tab_or_a_navigation_bar():
    page = '<nav><ul class="nav navbar-nav navbar-left">\n<li><a href="#/">Grid</a></li>\n</ul></nav>'
    linked = add_status_link(page)
    assert linked.index(ITEM) < linked.index("</ul>") and linked.replace("\n\t" + ITEM, "") == page
    assert add_status_link("<html><body>no navigation</body></html>") is None


# ---- publish regressions tab: asv's Regressions tab from the verdict: exactly the flagged findings, in asv's own format (the same entries

@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A project whose page ``asv publish`` wrote, and asv's own list of regressions there."""
    root = asv_published(tmp_path_factory.mktemp("tab"))
    html = root / "reports" / "html"
    return root, html, json.loads((html / LIST).read_text())["regressions"]


@pytest.fixture(autouse=True)
def _outcomes_kept_per_test(monkeypatch, tmp_path):
    """Each test re-measures afresh: the outcomes go to its own folder, never into the shared project."""
    monkeypatch.setattr(confirm, "CACHE", tmp_path / "confirmations.json")


def _verdict(root: Path, remeasured_as, ratio: float):
    """The one machine's verdict, and all machines' as ``verdict.json`` stores them, read back (machine -> verdict)."""
    remeasured_as(default=ratio)
    judgement = confirm.confirm(analyse(root), root)
    return judgement.single, Judgement.from_json(json.loads(json_text(judgement.as_json()))).reports


def test_graph_paths_are_asvs():
    from asv.graph import Graph

    params = {"machine": "m/1", "python": "3.11", "numpy": "", "torch": None, "branch": "main"}
    assert _graph_path(params, "bench_x.Y.time_z") == Graph.get_file_path(params, "bench_x.Y.time_z") + ".json"


def test_the_tab_lists_exactly_the_findings_the_verdict_flags(published, remeasured_as):
    root, html, asvs = published
    report, stored = _verdict(root, remeasured_as, 2.0)  # the timing steps re-measured: confirmed
    listed = tab(stored, read_index(html)[0], html)
    names = [entry[0] for entry in listed.entries]
    flagged = [f for verdict in stored.values() for f in verdict.regressions if flags(f.to_dict())]
    assert len(names) == len(flagged) == sum(f.is_verdict for f in report.regressions) == 6
    assert "bench_engine.Throughput.track_pixel_steps_per_second" in names  # asv's page does not judge it
    own = {entry[0]: entry for entry in asvs}
    for entry in listed.entries:
        assert (html / entry[1]).is_file()  # the row's hover graph loads it
        if entry[0] in own:  # a benchmark both list: asv's own entry, field for field (its values aside)
            assert entry[:4] == own[entry[0]][:4]
            assert [jump[:2] for jump in entry[6]] == [jump[:2] for jump in own[entry[0]][6]]
    assert own.keys() <= set(names)
    assert listed.missing == ()
    assert json.loads(tab_json(listed.entries)) == {"regressions": [list(e) for e in listed.entries]}


def test_timing_steps_found_to_be_noise_are_not_listed_and_the_feed_follows(published, remeasured_as):
    root, html, asvs = published
    report, stored = _verdict(root, remeasured_as, 1.0)  # re-measuring finds no step: noise
    listed = tab(stored, read_index(html)[0], html)
    assert {e[0] for e in asvs} - {e[0] for e in listed.entries} == {
        "bench_engine.EngineSweep.time_simulate(128, 'float64')", "bench_engine.EngineSweep.time_simulate(256, 'float64')"}
    assert not any(e[0].startswith("bench_engine.") for e in listed.entries)
    feed = listed.feed.decode()
    assert feed.count("<entry>") == len(listed.entries) == 3 and "REGRESSED parity a01_cubic_mosflm_center" in feed
    assert "EngineSweep" not in feed


def test_a_finding_the_page_has_no_graph_of_is_named_not_listed(published, remeasured_as, tmp_path):
    root, html, _ = published
    report, stored = _verdict(root, remeasured_as, 1.0)
    index, _ = read_index(html)
    index = {**index, "graph_param_list": [{**p, "machine": "elsewhere"} for p in index["graph_param_list"]]}
    listed = tab(stored, index, html)
    assert listed.entries == () and len(listed.missing) == 3
    assert "bench_parity.track_parity_a01_cubic_mosflm_center on fixture-2cpu" in listed.missing


@pytest.mark.parametrize("name, text, message", [
    ("regressions.json", '{"mine": 1}', "regressions.json: not asv's (no regressions)"),
    ("regressions.json", "not json", "regressions.json: not asv's"),
    ("index.json", '{"revision_to_hash": {}}', "index.json: not asv's (no revision_to_hash, benchmarks"),
])
def test_files_that_are_not_asvs_are_refused(tmp_path, name, text, message):
    (tmp_path / "index.json").write_text(json.dumps({k: {} for k in ("revision_to_hash", "benchmarks", "params")}
                                                    | {"graph_param_list": []}))
    (tmp_path / "regressions.json").write_text('{"regressions": []}')
    assert read_index(tmp_path)[0]["graph_param_list"] == []
    (tmp_path / name).write_text(text)
    with pytest.raises(TabError) as raised:
        read_index(tmp_path)
    assert message in str(raised.value) and str(tmp_path / name) in str(raised.value)
    assert read_index(tmp_path / "nothing") == (None, {})


def test_with_two_machines_each_entry_is_its_machines_graph_as_asv_lists_it(tmp_path, remeasured_as):
    root = asv_published(tmp_path)
    asv = root / "results" / "asv"
    shutil.copytree(asv / "fixture-2cpu", asv / "fixture-b")
    (asv / "fixture-b" / "machine.json").write_text(json.dumps({"machine": "fixture-b", "version": 1}))
    for path in (asv / "fixture-b").glob("*-virtualenv*.json"):
        data = json.loads(path.read_text())
        data["params"]["machine"] = "fixture-b"
        path.write_text(json.dumps(data))
    done = subprocess.run([sys.executable, "-m", "asv", "publish"], cwd=root, capture_output=True, text=True,
                          env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    html = root / "reports" / "html"
    own = {(e[0], e[2]["machine"]): e for e in json.loads((html / LIST).read_text())["regressions"]}
    remeasured_as(default=1.0)
    judgement = confirm.confirm(analyse(root), root)
    listed = tab(judgement.reports, read_index(html)[0], html)
    noise = {key for key in own if key[0].startswith("bench_engine.")}  # asv's timing steps, noise here
    assert len(noise) == 4 and sorted((e[0], e[2]["machine"]) for e in listed.entries) == sorted(set(own) - noise)
    for entry in listed.entries:
        mine = own[(entry[0], entry[2]["machine"])]
        assert entry[:4] == mine[:4] and f"machine-{entry[2]['machine']}" in entry[1] and (html / entry[1]).is_file()


# ---- publish vendor: The offline rewrite: CDN tags pointed at local copies from npm tarballs, or the page left as it was.

JQUERY = "https://code.jquery.com/jquery-3.3.1.min.js"
CSS = "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css"
PAGE = f"""<!doctype html><html><head>
<script src="{JQUERY}" integrity="sha256-abc=" crossorigin="anonymous" onerror="js_load_failure()"></script>
<link rel="stylesheet" href="{CSS}" integrity="sha256-def=" crossorigin="anonymous">
<script src="asv.js"></script>
<link rel="alternate" type="application/atom+xml" href="https://example.org/feed.xml"/>
</head><body><a href="https://github.com/airspeed-velocity/asv/">asv</a></body></html>
"""


def test_only_loading_tags_from_other_hosts_count():
    assert [address for _, address in remote_loads(PAGE)] == [JQUERY, CSS]


def test_rewrite_points_tags_at_copies_and_drops_cdn_only_attributes():
    new, missing = rewrite(PAGE, {JQUERY: "vendor/j.js", CSS: "vendor/b.css"})
    assert missing == []
    assert '<script src="vendor/j.js" onerror="js_load_failure()"></script>' in new
    assert '<link rel="stylesheet" href="vendor/b.css">' in new
    assert "integrity" not in new and "crossorigin" not in new
    assert new.replace('src="vendor/j.js"', "").count("vendor/") == 1
    assert 'href="https://github.com/airspeed-velocity/asv/"' in new  # a link, not a load
    partial, missing = rewrite(PAGE, {JQUERY: "vendor/j.js"})
    assert missing == [CSS]


def test_vendor_pages_copies_the_files_and_rewrites_once(tmp_path):
    html, cache = tmp_path / "html", tmp_path / "cache"
    html.mkdir()
    (html / "index.html").write_text(PAGE)
    (html / "error.html").write_text("<html>no scripts</html>")
    fake_asset_cache(cache)
    assert vendor_pages(html, cache, npm="/nonexistent/npm") is None  # everything cached: npm is not needed
    text = (html / "index.html").read_text()
    assert remote_loads(text) == []
    for address in (JQUERY, CSS):
        spec, member = ASSETS[address]
        copy = html / local_path(spec, member)
        assert f'"{local_path(spec, member)}"' in text and copy.read_text() == f"/* {spec} {member} */"
    assert (html / "error.html").read_text() == "<html>no scripts</html>"
    assert vendor_pages(html, cache, npm="/nonexistent/npm") is None and (html / "index.html").read_text() == text


def test_without_npm_or_cache_the_page_is_left_and_one_line_says_why(tmp_path):
    html, cache = tmp_path / "html", tmp_path / "cache"
    html.mkdir()
    (html / "index.html").write_text(PAGE)
    fake_asset_cache(cache, specs={"jquery@3.3.1"})
    problem = vendor_pages(html, cache, npm="/nonexistent/npm")
    assert "bootstrap@3.1.1" in problem and "\n" not in problem
    assert (html / "index.html").read_text() == PAGE and not (html / "vendor").exists()
    assert fetch_missing(cache, ["jquery@3.3.1"], npm="/nonexistent/npm") is None


def test_an_unknown_cdn_address_leaves_that_page_alone(tmp_path):
    html, cache = tmp_path / "html", tmp_path / "cache"
    html.mkdir()
    odd = PAGE.replace("</head>", '<script src="https://cdn.example.org/new-lib.js"></script></head>')
    (html / "index.html").write_text(odd)
    fake_asset_cache(cache)
    assert "https://cdn.example.org/new-lib.js" in vendor_pages(html, cache, npm="/nonexistent/npm")
    assert (html / "index.html").read_text() == odd


def test_the_table_covers_every_cdn_tag_of_asv_page():
    page = ASV_INDEX.read_text()
    assert sorted(address for _, address in remote_loads(page)) == sorted(ASSETS)


def test_npm_keeps_its_cache_and_logs_in_the_asset_folder_not_the_home_folder(tmp_path):
    """A stand-in npm records its arguments and writes the tarball where `npm pack` would."""
    cache = tmp_path / "assets"
    npm = tmp_path / "npm"
    npm.write_text(f"#!{sys.executable}\n"
                   "import json, pathlib, sys\n"
                   "pathlib.Path('argv.json').write_text(json.dumps(sys.argv[1:]))\n"
                   "pathlib.Path(sys.argv[-1].replace('@', '-') + '.tgz').write_bytes(b'')\n")
    npm.chmod(0o755)
    assert fetch_missing(cache, ["jquery@3.3.1"], npm=str(npm)) is None
    argv = json.loads((cache / "argv.json").read_text())
    assert argv[:2] == ["pack", "--silent"] and argv[-1] == "jquery@3.3.1"
    assert argv[argv.index("--cache") + 1] == str((cache / NPM_CACHE).resolve())  # its _cacache and _logs


# ---- publish swap: A published folder replaced whole: the new one built aside, swapped in, the old one gone, nothing left

def _page(folder, text):
    folder.mkdir(exist_ok=True)
    (folder / "index.html").write_text(text)


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_the_new_folder_replaces_the_old_whole(tmp_path, monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(asvpage, "_exchange", lambda a, b: False)
    html = tmp_path / "html"
    _page(html, "old")
    (html / "stale.json").write_text("from the old page")
    with replacing(html) as new:
        _page(new, "new")
    assert sorted(p.name for p in html.iterdir()) == ["index.html"] and (html / "index.html").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["html"]
    assert html.stat().st_mode & 0o777 == 0o777 & ~_umask()


def test_a_first_page_is_renamed_into_place(tmp_path):
    html = tmp_path / "reports" / "html"
    with replacing(html) as new:
        _page(new, "first")
    assert (html / "index.html").read_text() == "first" and [p.name for p in html.parent.iterdir()] == ["html"]


def test_a_failed_build_leaves_the_old_folder_and_nothing_beside_it(tmp_path):
    html = tmp_path / "html"
    _page(html, "old")
    with pytest.raises(OSError):
        with replacing(html) as new:
            _page(new, "half")
            raise OSError(28, "No space left on device")
    assert (html / "index.html").read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["html"]


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask
