"""Links between asv's page and the status page: addresses into asv's graphs, and the status link in its navigation.

asv 0.6.6's page reads an address from its location hash: ``index.html#<benchmark>?p-<param name>=<value>&...``
opens one benchmark's graph with the series of those parameter values selected; a value is the parameter's text
exactly as ``benchmarks.json`` lists it (``'float64'`` with its quotes, ``128``), URL-encoded. ``commits=<a>-<b>``
highlights the commits from a to b (asv matches short hashes by prefix); ``machine=<name>`` shows that machine's
series only. See ``asv/www/asv.js`` (``parse_hash_string``) and ``graphdisplay.js`` (``state_selection['p-' +
name]``, ``state[param]`` for asv's own parameters such as the machine).

The status link is a list item of its own placed after asv's last navigation item (the ``Regressions`` tab) or,
on a page without it, at the end of the first navigation list; inserting it again changes nothing.
"""

from __future__ import annotations

import re
from typing import Mapping
from urllib.parse import quote

from detsim.track.judge.history import param_labels

STATUS_PAGE = "status.html"
ITEM_ID = "nav-li-status"
ITEM = f'<li id="{ITEM_ID}"><a href="{STATUS_PAGE}" title="the latest verdict per family, offline">Status</a></li>'
AFTER = re.compile(r'<li id="nav-li-regressions">.*?</li>', re.S)
LIST_END = re.compile(r'(<ul class="nav navbar-nav[^"]*">.*?)(\s*</ul>)', re.S)


def param_values(bench: Mapping, label: str) -> dict[str, str] | None:
    """Parameter name -> value text of the combination ``label`` (``"(pixels=128, dtype='float64')"``),
    read from asv's own parameter lists (None: no such combination)."""
    names, params = bench.get("param_names") or [], bench.get("params") or []
    if not params:
        return {} if label == "" else None
    combos = [[]]
    for values in params:
        combos = [c + [v] for c in combos for v in values]
    for combo, candidate in zip(combos, param_labels(bench)):
        if candidate == label:
            return dict(zip(names, map(str, combo)))
    return None


def graph_url(benchmark: str, params: str, benchmarks: Mapping[str, Mapping], *,
              commits: tuple[str | None, str] | None = None, machine: str | None = None,
              page: str = "index.html") -> str:
    """The address of ``benchmark``'s graph with the parameter combination ``params`` selected and, when
    given, the commits ``(last good, first bad)`` highlighted (the first bad alone without a last good) and
    only ``machine``'s series shown."""
    url = f"{page}#{quote(benchmark, safe='._-')}"
    query = [f"machine={quote(machine, safe='')}"] if machine else []
    values = param_values(benchmarks.get(benchmark) or {}, params) if params else {}
    for name, value in (values or {}).items():
        query.append(f"{quote('p-' + name, safe='')}={quote(value, safe='')}")
    if commits:
        good, bad = commits
        query.append("commits=" + (f"{good[:8]}-{bad[:8]}" if good else bad[:8]))
    return url + ("?" + "&".join(query) if query else "")


def add_status_link(text: str) -> str | None:
    """``text`` with the status link in its navigation bar (unchanged if it has it); None: no navigation bar."""
    if f'id="{ITEM_ID}"' in text:
        return text
    if anchor := AFTER.search(text):
        end = anchor.end()
    elif nav := LIST_END.search(text):
        end = nav.end(1)
    else:
        return None
    return text[:end] + "\n\t" + ITEM + text[end:]
