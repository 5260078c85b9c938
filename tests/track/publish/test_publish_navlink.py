"""The status link in asv's navigation bar: inserted once, the rest of the page untouched."""

from __future__ import annotations

from pathlib import Path

from detsim.track.publish.navlink import ITEM, add_status_link

ASV_INDEX = Path(__import__("asv").__file__).parent / "www" / "index.html"


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
