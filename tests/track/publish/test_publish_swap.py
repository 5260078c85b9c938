"""A published folder replaced whole: the new one built aside, swapped in, the old one gone, nothing left
beside it; a build that fails leaves the old folder as it was."""

from __future__ import annotations

import pytest

from detsim.track.publish import swap
from detsim.track.publish.swap import building, swap_in


def _page(folder, text):
    folder.mkdir(exist_ok=True)
    (folder / "index.html").write_text(text)


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_the_new_folder_replaces_the_old_whole(tmp_path, monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(swap, "_exchange", lambda a, b: False)
    html = tmp_path / "html"
    _page(html, "old")
    (html / "stale.json").write_text("from the old page")
    with building(html) as new:
        _page(new, "new")
        swap_in(new, html)
    assert sorted(p.name for p in html.iterdir()) == ["index.html"] and (html / "index.html").read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["html"]
    assert html.stat().st_mode & 0o777 == 0o777 & ~_umask()


def test_a_first_page_is_renamed_into_place(tmp_path):
    html = tmp_path / "reports" / "html"
    with building(html) as new:
        _page(new, "first")
        swap_in(new, html)
    assert (html / "index.html").read_text() == "first" and [p.name for p in html.parent.iterdir()] == ["html"]


def test_a_failed_build_leaves_the_old_folder_and_nothing_beside_it(tmp_path):
    html = tmp_path / "html"
    _page(html, "old")
    with pytest.raises(OSError):
        with building(html) as new:
            _page(new, "half")
            raise OSError(28, "No space left on device")
    assert (html / "index.html").read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["html"]


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask
