"""Addresses into asv's graphs, in the hash format asv 0.6.6's page parses."""

from __future__ import annotations

from urllib.parse import unquote

from detsim.track.publish.links import graph_url, param_values

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
