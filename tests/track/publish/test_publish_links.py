"""Addresses into asv's graphs, in the hash format asv 0.6.6's page parses; the status link in asv's navigation
bar, inserted once, the rest of the page untouched."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

from detsim.track.publish.links import ITEM, add_status_link, graph_url, param_values

ASV_INDEX = Path(__import__("asv").__file__).parent / "www" / "index.html"

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
    assert param_values(SWEEP, "(pixels=256, dtype='float64')") == {"pixels": "256", "dtype": "'float64'"}
    assert param_values(SWEEP, "(pixels=512, dtype='float64')") is None
    assert param_values({"params": []}, "") == {}


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
