"""The offline rewrite: CDN tags pointed at local copies from npm tarballs, or the page left as it was."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from detsim.track.publish.vendor import ASSETS, NPM_CACHE, fetch_missing, local_path, remote_loads, rewrite, \
    vendor_pages
from publish_assets import fake_asset_cache

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
    done = vendor_pages(html, cache, npm="/nonexistent/npm")  # everything cached: npm is not needed
    assert done.problem is None and done.pages == ("index.html",)
    text = (html / "index.html").read_text()
    assert remote_loads(text) == []
    for address in (JQUERY, CSS):
        spec, member = ASSETS[address]
        copy = html / local_path(spec, member)
        assert f'"{local_path(spec, member)}"' in text and copy.read_text() == f"/* {spec} {member} */"
    assert (html / "error.html").read_text() == "<html>no scripts</html>"
    again = vendor_pages(html, cache, npm="/nonexistent/npm")
    assert again.pages == () and again.problem is None and (html / "index.html").read_text() == text


def test_without_npm_or_cache_the_page_is_left_and_one_line_says_why(tmp_path):
    html, cache = tmp_path / "html", tmp_path / "cache"
    html.mkdir()
    (html / "index.html").write_text(PAGE)
    fake_asset_cache(cache, specs={"jquery@3.3.1"})
    done = vendor_pages(html, cache, npm="/nonexistent/npm")
    assert done.pages == () and "bootstrap@3.1.1" in done.problem and "\n" not in done.problem
    assert (html / "index.html").read_text() == PAGE and not (html / "vendor").exists()
    assert fetch_missing(cache, ["jquery@3.3.1"], npm="/nonexistent/npm") is None


def test_an_unknown_cdn_address_leaves_that_page_alone(tmp_path):
    html, cache = tmp_path / "html", tmp_path / "cache"
    html.mkdir()
    odd = PAGE.replace("</head>", '<script src="https://cdn.example.org/new-lib.js"></script></head>')
    (html / "index.html").write_text(odd)
    fake_asset_cache(cache)
    done = vendor_pages(html, cache, npm="/nonexistent/npm")
    assert done.pages == () and "https://cdn.example.org/new-lib.js" in done.problem
    assert (html / "index.html").read_text() == odd


def test_the_table_covers_every_cdn_tag_of_asv_page():
    page = (Path(__import__("asv").__file__).parent / "www" / "index.html").read_text()
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
