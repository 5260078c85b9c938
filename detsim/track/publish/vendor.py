"""asv's page without the internet: its CDN scripts and styles replaced by copies from npm packages.

The packages are fetched once with ``npm pack`` into a cache folder (npm's own cache and logs in its
``.npm-cache``, never ``~/.npm``), copied into ``<html>/vendor/<package>-<version>/``, and the tags pointed at
them, their ``integrity``/``crossorigin`` attributes dropped (npm's files are not the CDN's bytes). A page is
rewritten only when every CDN tag in it has a copy.
"""

from __future__ import annotations

import re
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from detsim.track.base.fresh import ChildError, last_line, run
from detsim.track.base.output import atomic_write_bytes, atomic_write_text

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


def fetch_missing(cache: Path, specs: list[str], npm: str | None = None, timeout: float = 300) -> str | None:
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
                   timeout=timeout, what="npm pack")
    except (OSError, ChildError) as exc:
        return f"npm pack {' '.join(missing)} failed ({exc})"
    still = [s for s in missing if not tarball(cache, s).is_file()]
    if done.returncode != 0 or still:
        why = last_line(done.stderr) or f"exit {done.returncode}"
        return f"npm pack {' '.join(still or missing)} failed ({why[:200]})"
    return None


@dataclass(frozen=True)
class Vendored:
    pages: tuple[str, ...]  # pages rewritten to load local copies
    problem: str | None  # one line: why the folder still needs the network (None: it does not)


def vendor_pages(html: Path, cache: Path, npm: str | None = None) -> Vendored:
    """Copy the libraries the pages in ``html`` load from CDNs into ``html/vendor`` and point the pages at
    them. Pages already pointing at local copies are left alone; nothing is written when a copy cannot be had."""
    pages = {p: p.read_text(encoding="utf-8") for p in sorted(html.glob("*.html"))}
    wanted = {address for text in pages.values() for _, address in remote_loads(text)}
    if not wanted:
        return Vendored((), None)
    known = sorted(wanted & ASSETS.keys())
    problem = fetch_missing(cache, sorted({ASSETS[a][0] for a in known}), npm) if known else None
    if problem:
        return Vendored((), f"{problem}: asv's page still loads its scripts from CDNs")
    local = {}
    for address in known:
        spec, member = ASSETS[address]
        try:
            with tarfile.open(tarball(cache, spec)) as archive:
                data = archive.extractfile(member).read()
        except (OSError, tarfile.TarError, KeyError, AttributeError) as exc:
            return Vendored((), f"{tarball(cache, spec)}: no {member} ({exc}): asv's page still loads its scripts from CDNs")
        atomic_write_bytes(html / local_path(spec, member), data)
        local[address] = local_path(spec, member)
    rewritten, unknown = [], []
    for page, text in pages.items():
        new, missing = rewrite(text, local)
        if missing:
            unknown.append(f"{page.name} ({', '.join(sorted(set(missing)))})")
        elif new != text:
            atomic_write_text(page, new)
            rewritten.append(page.name)
    problem = f"no local copy known for what {'; '.join(unknown)} loads: left as asv wrote it" if unknown else None
    return Vendored(tuple(rewritten), problem)
