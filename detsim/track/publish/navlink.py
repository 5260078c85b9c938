"""One link to the status page in asv's navigation bar; the rest of asv's ``index.html`` untouched.

The link is a list item of its own (``id="nav-li-status"``) placed after asv's last navigation item
(the ``Regressions`` tab) or, on a page without it, at the end of the first navigation list. Inserting
it again changes nothing.
"""

from __future__ import annotations

import re

STATUS_PAGE = "status.html"
ITEM_ID = "nav-li-status"
ITEM = f'<li id="{ITEM_ID}"><a href="{STATUS_PAGE}" title="the latest verdict per family, offline">Status</a></li>'
AFTER = re.compile(r'<li id="nav-li-regressions">.*?</li>', re.S)
LIST_END = re.compile(r'(<ul class="nav navbar-nav[^"]*">.*?)(\s*</ul>)', re.S)


def add_status_link(text: str) -> str | None:
    """``text`` with the status link in its navigation bar (unchanged if it has it); None: no navigation bar."""
    if f'id="{ITEM_ID}"' in text:
        return text
    anchor = AFTER.search(text)
    if anchor:
        return text[:anchor.end()] + "\n\t" + ITEM + text[anchor.end():]
    nav = LIST_END.search(text)
    if nav:
        return text[:nav.end(1)] + "\n\t" + ITEM + text[nav.end(1):]
    return None
