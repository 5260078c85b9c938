"""asv's published folder made the verdict's: links into asv's graphs and the status link in its navigation,
its Regressions tab rewritten to the verdict's findings, its CDN scripts copied in (offline), and the folder
built aside and swapped in whole.

**Links.** asv 0.6.6's page reads an address from its location hash: ``index.html#<benchmark>?p-<param
name>=<value>&...`` opens one benchmark's graph with the series of those parameter values selected; a value is
the parameter's text exactly as ``benchmarks.json`` lists it (``'float64'`` with its quotes, ``128``),
URL-encoded. ``commits=<a>-<b>`` highlights the commits from a to b (asv matches short hashes by prefix);
``machine=<name>`` shows that machine's series only. See ``asv/www/asv.js`` (``parse_hash_string``) and
``graphdisplay.js`` (``state_selection['p-' + name]``, ``state[param]`` for asv's own parameters such as the
machine). The status link is a list item of its own placed after asv's last navigation item (the
``Regressions`` tab) or, on a page without it, at the end of the first navigation list; inserting it again
changes nothing.

**The Regressions tab** (``regressions.json``, its Atom feed ``regressions.xml``) lists exactly the findings the
verdict flags, so that every page gives one answer (docs/tracking.md), each in asv 0.6.6's own format, which
its page (``asv/www/regressions.js``) renders and links from: ``{"regressions": [[name, graph path, graph
params, parameter index, last value, best value, [[last good, first bad, old, new]]], ...]}``, the graph that
of the finding's machine, first branch and environment, the revisions as ``index.json`` numbers them (the last
good null for adjacent commits, asv's rule). The feed's entry ids are asv's (``asv.feed``), so that a feed
reader sees asv's entry for the same benchmark and commits as the same one.

**Offline.** The CDN scripts and styles are replaced by copies from npm packages, fetched once with ``npm
pack`` into a cache folder (npm's own cache and logs in its ``.npm-cache``, never ``~/.npm``), copied into
``<html>/vendor/<package>-<version>/``, and the tags pointed at them, their ``integrity``/``crossorigin``
attributes dropped (npm's files are not the CDN's bytes). A page is rewritten only when every CDN tag in it
has a copy.

**Swapped in whole**: built aside, then swapped in (:func:`replacing`), so that a reader sees
the old page or the new one, never half of either. Linux exchanges the two folders in one
``renameat2(RENAME_EXCHANGE)``; elsewhere the old folder is renamed away and the new one into its place (two
renames, each atomic, with no half page at any time, only an instant with none).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import datetime as _dt
import errno
import importlib.util
import io
import itertools
import json
import os
import re
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Iterable, Iterator, Mapping
from urllib.parse import quote, urlencode

from detsim.track.base.fresh import ChildError, last_line, run
from detsim.track.judge.benchmarks import param_labels
from detsim.track.base.output import atomic_write_bytes, atomic_write_text
from detsim.track.judge.text import View, finding_line
from detsim.track.judge.verdict import Report

# ---- links ----
STATUS_PAGE = "status.html"
HTML_DIR = "reports/html"  # where the page is published when asv.conf.json names no html_dir


def html_folder(root: Path, config: Mapping) -> Path:
    """The folder a project's page is published in: ``html_dir`` of its asv.conf.json (``config``), under ``root``."""
    return root / config.get("html_dir", HTML_DIR)
ITEM_ID = "nav-li-status"
ITEM = f'<li id="{ITEM_ID}"><a href="{STATUS_PAGE}" title="the latest verdict per family, offline">Status</a></li>'
AFTER = re.compile(r'<li id="nav-li-regressions">.*?</li>', re.S)
LIST_END = re.compile(r'(<ul class="nav navbar-nav[^"]*">.*?)(\s*</ul>)', re.S)


def _combination(bench: Mapping, label: str) -> tuple[int | None, tuple] | None:
    """(position, values) of the parameter combination ``label`` (``"(pixels=128, dtype='float64')"``) among
    asv's combinations of ``bench``, in asv's order (position None: an unparametrized benchmark, label "");
    None: no such combination."""
    if not bench.get("params"):
        return (None, ()) if label == "" else None
    labels = param_labels(bench)
    if label not in labels:
        return None
    position = labels.index(label)
    return position, list(itertools.product(*bench["params"]))[position]


def graph_url(benchmark: str, params: str, benchmarks: Mapping[str, Mapping], *,
              commits: tuple[str | None, str] | None = None, machine: str | None = None) -> str:
    """The address of ``benchmark``'s graph with the parameter combination ``params`` selected and, when
    given, the commits ``(last good, first bad)`` highlighted (the first bad alone without a last good) and
    only ``machine``'s series shown; a parameter value is its text in asv's own parameter lists, and a
    combination asv does not list selects none."""
    url = f"index.html#{quote(benchmark, safe='._-')}"
    query = [f"machine={quote(machine, safe='')}"] if machine else []
    bench = benchmarks.get(benchmark) or {}
    found = _combination(bench, params) if params else None
    for name, value in zip(bench.get("param_names") or [], found[1] if found else ()):
        query.append(f"{quote('p-' + name, safe='')}={quote(str(value), safe='')}")
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


# ---- the Regressions tab ----
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


def read_index(html: Path) -> tuple[dict | None, dict]:
    """asv's ``index.json`` of ``html`` where ``asv publish`` wrote the tab (its list or its feed) there, checked,
    with its ``regressions.json``, to be asv's (never replaced otherwise; :class:`TabError` naming the file),
    else None; and asv's benchmark list ({} where the page has none)."""
    if not ((html / LIST).exists() or (html / FEED).exists()):
        try:
            data = json.loads((html / INDEX).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None, {}
        return None, data.get("benchmarks") or {} if isinstance(data, dict) else {}
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
    return index, index["benchmarks"]


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
    found = _combination(bench, record["params"])
    if found is None:
        return None
    position, combo = found
    name = record["benchmark"] + (f"({', '.join(combo)})" if position is not None else "")
    varying = {k for p in index["graph_param_list"] for k in p
               if len({q.get(k) for q in index["graph_param_list"]}) > 1}
    good = revisions.get(record["last_good"]) if record["last_good"] else None
    new = record["new"]
    old = new if record["old"] is None else record["old"]
    jump = [None if good is None or bad - good == 1 else good, bad, old, new]
    return [name, path, {k: v for k, v in params.items() if k in varying}, position, new, old, [jump]]


def tab(verdicts: Mapping[str, Report], index: Mapping, html: Path) -> Tab:
    """The tab's list and feed from the stored verdicts (machine -> its verdict): every finding they flag, in
    their order."""
    revisions = {commit: int(rev) for rev, commit in index["revision_to_hash"].items()}
    entries, missing, texts = [], [], []
    flagged = ((m, f.to_dict()) for m, report in verdicts.items() for f in report.regressions if f.is_verdict)
    for machine, record in flagged:
        made = entry(record, machine, index, revisions, html)
        if made is None:
            missing.append(f"{record['benchmark']}{record['params']} on {machine}")
            continue
        entries.append(made)
        texts.append(finding_line(record, view=View.FULL))
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
        bench = index["benchmarks"][benchmark]  # the graph's address as asv's feed writes it
        combo = list(itertools.product(*bench["params"]))[position] if position is not None else ()
        query = {**params, **{f"p-{k}": v for k, v in zip(bench.get("param_names") or [], combo)}}
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


# ---- offline copies ----
# the CDN address asv 0.6.6's page names -> (npm package release, file in its tarball)
ASSETS = {
    "https://code.jquery.com/jquery-3.3.1.min.js": ("jquery@3.3.1", "package/dist/jquery.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.min.js": ("flot@0.8.3", "package/jquery.flot.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.time.min.js":
        ("flot@0.8.3", "package/jquery.flot.time.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.selection.min.js":
        ("flot@0.8.3", "package/jquery.flot.selection.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.categories.min.js":
        ("flot@0.8.3", "package/jquery.flot.categories.js"),
    "https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js":
        ("flot-orderbars@1.0.0", "package/js/jquery.flot.orderBars.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/stupidtable/1.0.1/stupidtable.min.js":
        ("stupid-table-plugin@1.1.3", "package/stupidtable.min.js"),
    "https://cdnjs.cloudflare.com/ajax/libs/blueimp-md5/2.19.0/js/md5.min.js":
        ("blueimp-md5@2.19.0", "package/js/md5.min.js"),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js":
        ("bootstrap@3.1.1", "package/dist/js/bootstrap.min.js"),
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css":
        ("bootstrap@3.1.1", "package/dist/css/bootstrap.min.css"),
}
VENDOR = "vendor"  # folder inside the published html folder
NPM_CACHE = ".npm-cache"  # npm's cache and logs (npm's --cache), inside the tarball folder: nothing in ~/.npm
# a tag that loads something: <script ... src="..."> or <link ... href="...">
LOADING_TAG = re.compile(r"<(script|link)\b[^>]*>", re.I)
REMOTE = re.compile(r'\b(?:src|href)\s*=\s*["\']((?:https?:)?//[^"\']+)["\']', re.I)
CDN_ONLY_ATTRIBUTES = re.compile(r'\s(?:integrity|crossorigin|referrerpolicy)\s*=\s*("[^"]*"|\'[^\']*\'|\S+)', re.I)


def tarball(cache: Path, spec: str) -> Path:
    """Where ``npm pack <spec>`` leaves its tarball in ``cache`` (``name@1.2.3`` -> ``name-1.2.3.tgz``)."""
    return cache / (spec.replace("@", "-") + ".tgz")


def local_path(spec: str, member: str) -> str:
    """The copy's path inside the html folder: ``vendor/<name>-<version>/<path in the package>``."""
    return f"{VENDOR}/{spec.replace('@', '-')}/{member.split('/', 1)[1]}"


def remote_loads(text: str) -> list[tuple[str, str]]:
    """(tag, address) of every ``<script src>``/``<link href>`` in ``text`` that loads from another host."""
    found = []
    for tag in LOADING_TAG.finditer(text):
        if tag.group(1).lower() == "link" and not re.search(r'\brel\s*=\s*["\']?[^"\'>]*stylesheet', tag.group(0), re.I):
            continue  # <link rel="alternate"> and the like load nothing
        address = REMOTE.search(tag.group(0))
        if address:
            found.append((tag.group(0), address.group(1)))
    return found


def rewrite(text: str, local: dict[str, str]) -> tuple[str, list[str]]:
    """``text`` with every remote load whose address ``local`` maps pointed at its copy, and the
    addresses it has no copy for (when any, the caller keeps the page as it was)."""
    missing = []
    for tag, address in remote_loads(text):
        if address not in local:
            missing.append(address)
            continue
        text = text.replace(tag, CDN_ONLY_ATTRIBUTES.sub("", tag).replace(address, local[address]))
    return text, missing


def fetch_missing(cache: Path, specs: list[str], npm: str | None = None) -> str | None:
    """Fetch the packages of ``specs`` not in ``cache`` yet with ``npm pack``; why not, or None when all are there."""
    missing = [s for s in specs if not tarball(cache, s).is_file()]
    if not missing:
        return None
    npm = npm or shutil.which("npm")
    if npm is None:
        return f"npm is not installed and {cache} lacks {', '.join(missing)}"
    try:
        cache.mkdir(parents=True, exist_ok=True)
        done = run([npm, "pack", "--silent", "--cache", str((cache / NPM_CACHE).resolve()), *missing], cwd=cache,
                   timeout=300, what="npm pack")
    except (OSError, ChildError) as exc:
        return f"npm pack {' '.join(missing)} failed ({exc})"
    still = [s for s in missing if not tarball(cache, s).is_file()]
    if done.returncode != 0 or still:
        why = last_line(done.stderr) or f"exit {done.returncode}"
        return f"npm pack {' '.join(still or missing)} failed ({why[:200]})"
    return None


def vendor_pages(html: Path, cache: Path, npm: str | None = None) -> str | None:
    """Copy the libraries the pages in ``html`` load from CDNs into ``html/vendor`` and point the pages at
    them; one line saying why the folder still needs the network (None: it does not). Pages already pointing
    at local copies are left alone; nothing is written when a copy cannot be had."""
    pages = {p: p.read_text(encoding="utf-8") for p in sorted(html.glob("*.html"))}
    wanted = {address for text in pages.values() for _, address in remote_loads(text)}
    if not wanted:
        return None
    known = sorted(wanted & ASSETS.keys())
    problem = fetch_missing(cache, sorted({ASSETS[a][0] for a in known}), npm) if known else None
    if problem:
        return f"{problem}: asv's page still loads its scripts from CDNs"
    local = {}
    for address in known:
        spec, member = ASSETS[address]
        try:
            with tarfile.open(tarball(cache, spec)) as archive:
                data = archive.extractfile(member).read()
        except (OSError, tarfile.TarError, KeyError, AttributeError) as exc:
            return f"{tarball(cache, spec)}: no {member} ({exc}): asv's page still loads its scripts from CDNs"
        atomic_write_bytes(html / local_path(spec, member), data)
        local[address] = local_path(spec, member)
    unknown = []
    for page, text in pages.items():
        new, missing = rewrite(text, local)
        if missing:
            unknown.append(f"{page.name} ({', '.join(sorted(set(missing)))})")
        elif new != text:
            atomic_write_text(page, new)
    return f"no local copy known for what {'; '.join(unknown)} loads: left as asv wrote it" if unknown else None


# ---- swapped in whole ----
RENAME_EXCHANGE = 2  # linux/fs.h
AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap the paths ``a`` and ``b`` in one step; False where this system cannot."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):  # no such call, or not on this file system
        return False
    raise OSError(code, os.strerror(code), str(b))


@contextlib.contextmanager
def replacing(final: Path) -> Iterator[Path]:
    """A new empty folder beside ``final`` to build its replacement in: swapped in whole when the block ends
    (the folder that was there removed after the swap), removed on an exception."""
    final.parent.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix=f".{final.name}.new-", dir=final.parent))
    try:
        yield new
        mask = os.umask(0)
        os.umask(mask)
        new.chmod(0o777 & ~mask)  # as a folder made by mkdir, not mkdtemp's private one
        if not final.exists():
            os.rename(new, final)
        elif not _exchange(new, final):  # after an exchange, the old page sits where the new one was built
            old = new.with_name(new.name.replace(".new-", ".old-"))
            os.rename(final, old)
            os.rename(new, final)
            new = old
    finally:
        shutil.rmtree(new, ignore_errors=True)
