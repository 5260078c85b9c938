"""asv's Regressions tab (``regressions.json``, its Atom feed ``regressions.xml``) rewritten from the verdict, so
that every page gives one answer (docs/tracking.md): exactly the findings it flags, each in asv 0.6.6's own
format, which its page (``asv/www/regressions.js``) renders and links from: ``{"regressions": [[name, graph
path, graph params, parameter index, last value, best value, [[last good, first bad, old, new]]], ...]}``, the
graph that of the finding's machine, first branch and environment, the revisions as ``index.json`` numbers them
(the last good null for adjacent commits, asv's rule). The feed's entry ids are asv's (``asv.feed``), so that a
feed reader sees asv's entry for the same benchmark and commits as the same one.
"""

from __future__ import annotations

import datetime as _dt
import importlib.util
import io
import itertools
import json
import re
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Iterable, Mapping
from urllib.parse import urlencode

from detsim.track.judge.history import param_labels
from detsim.track.judge.finding import flags
from detsim.track.judge.text import finding_text, where_text

LIST, FEED, INDEX = "regressions.json", "regressions.xml", "index.json"
UNSAFE = re.compile('[<>:"/\\\\^|?*\x00-\x1f]')  # asv's util.sanitize_filename (and asv.js)


class TabError(Exception):
    """The published folder's tab or index cannot be read (the message names the file)."""


@dataclass(frozen=True)
class Tab:
    """What the tab lists: asv's entries, the feed's bytes, and the findings that have no graph in the page."""

    entries: tuple[list, ...]
    feed: bytes
    missing: tuple[str, ...]  # findings the page has no graph or commit for (named, not listed)


def has_tab(html: Path) -> bool:
    """Whether ``asv publish`` wrote the tab (its list or its feed) into ``html``."""
    return (html / LIST).exists() or (html / FEED).exists()


def read_index(html: Path) -> dict:
    """asv's ``index.json`` of ``html``, and a check that its ``regressions.json`` is asv's list (never replaced
    otherwise); :class:`TabError` naming the file."""
    for name, fields in ((INDEX, ("revision_to_hash", "benchmarks", "graph_param_list", "params")),
                         (LIST, ("regressions",))):
        path = html / name
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise TabError(f"{path}: not a regular file; not replaced")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise TabError(f"{path}: not asv's ({getattr(exc, 'strerror', None) or exc})") from None
        if not isinstance(data, dict) or not all(key in data for key in fields):
            raise TabError(f"{path}: not asv's (no {', '.join(fields)})")
        if name == INDEX:
            index = data
    if importlib.util.find_spec("asv") is None:  # the feed is written by asv's own writer
        raise TabError(f"{html / FEED}: asv is not installed here to write its feed")
    return index


def _graph_path(params: Mapping[str, object], benchmark: str) -> str:
    """asv's ``Graph.get_file_path``: one folder per parameter, sorted, then the benchmark."""
    parts = sorted(UNSAFE.sub("_", f"{key}-null" if value is None else f"{key}-{value}" if value else key)
                   for key, value in params.items())
    return "/".join(["graphs", *parts, UNSAFE.sub("_", benchmark)]) + ".json"


def _env_matches(params: Mapping[str, object], env: str, machine_keys: set[str]) -> bool:
    """Whether a graph's parameters are those of the environment named ``env`` (``virtualenv-py3.11-numpy-
    torch2.13.0``: the python version and each requirement with its version)."""
    tokens = set(env.split("-"))
    requirements = {k: v for k, v in params.items()
                    if k not in machine_keys | {"branch", "python"} and not k.startswith("env-")}
    return f"py{params.get('python')}" in tokens and all(f"{k}{v or ''}" in tokens for k, v in requirements.items())


def graph_params(index: Mapping, machine: str, env: str) -> dict | None:
    """The graph parameter set of ``machine``'s series in ``env`` on the first branch (None: none)."""
    sets = [p for p in index["graph_param_list"] if p.get("machine") == machine]
    branches = index["params"].get("branch") or []
    if branches:
        sets = [p for p in sets if p.get("branch") in (branches[0], None)] or sets
    machine_keys = set((index.get("machines") or {}).get(machine) or {})
    return next((p for p in sets if _env_matches(p, env, machine_keys)), sets[0] if sets else None)


def entry(record: Mapping, machine: str, index: Mapping, revisions: Mapping[str, int], html: Path) -> list | None:
    """asv's entry of one flagged finding; None where the page has no graph of it or not its first bad commit."""
    bench = index["benchmarks"].get(record["benchmark"])
    params = graph_params(index, machine, record["env"])
    bad = revisions.get(record["first_bad"])
    if bench is None or params is None or bad is None:
        return None
    path = _graph_path(params, record["benchmark"])
    if not (html / path).is_file():
        return None
    name, position = record["benchmark"], None
    if bench.get("params"):
        labels = param_labels(bench)
        if record["params"] not in labels:
            return None
        position = labels.index(record["params"])
        combo = list(itertools.product(*bench["params"]))[position]
        name = f"{name}({', '.join(combo)})"
    varying = {k for p in index["graph_param_list"] for k in p
               if len({q.get(k) for q in index["graph_param_list"]}) > 1}
    good = revisions.get(record["last_good"]) if record["last_good"] else None
    new = record["new"]
    old = new if record["old"] is None else record["old"]
    jump = [None if good is None or bad - good == 1 else good, bad, old, new]
    return [name, path, {k: v for k, v in params.items() if k in varying}, position, new, old, [jump]]


def flagged(verdicts: Mapping[str, Mapping]) -> list[tuple[str, dict]]:
    """(machine, record) of every finding the verdicts (machine -> its stored verdict) flag, in their order."""
    return [(machine, record) for machine, verdict in verdicts.items() for record in verdict["regressions"]
            if flags(record)]


def tab(verdicts: Mapping[str, Mapping], index: Mapping, html: Path) -> Tab:
    """The tab's list and feed from the stored verdicts (machine -> its verdict)."""
    revisions = {commit: int(rev) for rev, commit in index["revision_to_hash"].items()}
    entries, missing, texts = [], [], []
    for machine, record in flagged(verdicts):
        made = entry(record, machine, index, revisions, html)
        if made is None:
            missing.append(f"{record['benchmark']}{record['params']} on {machine}")
            continue
        entries.append(made)
        texts.append(f"{record['label']} {finding_text(record)}, {where_text(record, {})}")
    return Tab(tuple(entries), _feed(entries, texts, index), tuple(missing))


def _feed(entries: list[list], texts: list[str], index: Mapping) -> bytes:
    """asv's Atom feed of the entries, each titled and described by its finding."""
    from asv import feed

    hashes, dates = index["revision_to_hash"], index.get("revision_to_date") or {}
    items = []
    for (name, _, params, position, *_, jumps), text in zip(entries, texts):
        good, bad = jumps[0][0], jumps[0][1]
        benchmark = name.split("(", 1)[0]
        commits = f"{hashes[str(good)]}-{hashes[str(bad)]}" if good is not None else hashes[str(bad)]
        query = dict(params)  # the graph's address as asv's feed writes it
        if position is not None:
            bench = index["benchmarks"][benchmark]
            combo = list(itertools.product(*bench["params"]))[position]
            query.update({f"p-{k}": v for k, v in zip(bench["param_names"], combo)})
        link = f"index.html#{benchmark}?{urlencode({**query, 'commits': commits})}"
        when = _dt.datetime.fromtimestamp(dates.get(str(bad), 0) / 1000, _dt.timezone.utc)
        summary = f'<a href="{escape(link)}">{escape(text)}</a>'
        items.append(feed.FeedEntry(f"{text.split(' ', 1)[0]} {name}", when, link, summary,
                                    [name, hashes.get(str(good), ""), hashes[str(bad)]], when))
    items.sort(key=lambda item: item.updated, reverse=True)
    out = io.BytesIO()
    project = index.get("project") or "asv"
    feed.write_atom(out, items, title=f"{project} performance regressions", author="Airspeed Velocity",
                    address=f"{project}.asv")
    return out.getvalue()


def tab_json(entries: Iterable[list]) -> str:
    """``regressions.json`` as asv writes it (compact)."""
    return json.dumps({"regressions": list(entries)}, separators=(",", ":"))
