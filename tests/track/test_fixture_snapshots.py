"""Every view of the committed fixtures' histories, byte for byte: the terminal, verdict.txt, verdict.md,
verdict.json, the events and the history's table of each fixture under tests/data/asv/ equal the texts kept in
tests/data/snapshots/<fixture>/. A redesign of the recorder, the history or the verdict must leave them equal;
a change meant to alter what the suite says updates them in the same commit, so the diff shows what changed:

    DETSIM_UPDATE_SNAPSHOTS=1 python -m pytest tests/track/test_fixture_snapshots.py

(that run writes the texts and fails, so that an update is never mistaken for a pass).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from detsim.track import cli
from detsim.track.judge import confirm

DATA = Path(__file__).resolve().parents[1] / "data"
FIXTURES = sorted(p.name for p in (DATA / "asv").iterdir() if (p / "asv.conf.json").exists())
SNAPSHOTS = DATA / "snapshots"
UPDATE = os.environ.get("DETSIM_UPDATE_SNAPSHOTS") == "1"
_STAMP = re.compile(r"\d{8}T\d{6}Z?(-\d+)?")  # a report folder's time stamp
_RELATIVE_LINK = re.compile(r"\]\((\.\./)+[^)]*\)")  # a link from the report's folder up to the page: depth varies
_VOLATILE_KEYS = ("generated", "written", "created", "now")  # verdict.json's clock fields, if any


@pytest.fixture(autouse=True)
def _no_measuring(monkeypatch, tmp_path):
    def refuse(*args):
        pytest.fail("a suspect was re-measured for real")
    monkeypatch.setattr(confirm, "default_measure", lambda root: refuse)
    monkeypatch.setattr(confirm, "machines_here", lambda: None)
    monkeypatch.setattr(confirm, "CACHE", tmp_path / "confirmations.json")


@pytest.fixture
def fixtures_copy():
    """A folder of one length on every machine for the fixture's copy: the verdict fits its lines to the screen,
    so a checkout's own path must not decide where a line is cut."""
    folder = Path(tempfile.mkdtemp(prefix="ds", dir="/tmp"))  # /tmp/dsXXXXXXXX
    yield folder
    shutil.rmtree(folder)


def _masked(text: str, tmp_path: Path, copy: Path) -> str:
    text = text.replace(str(tmp_path), "<tmp>").replace(str(copy), "<data>/asv").replace(str(DATA), "<data>")
    return _RELATIVE_LINK.sub("](<relative link>)", _STAMP.sub("<stamp>", text))


def _json_masked(text: str, tmp_path: Path, copy: Path) -> str:
    def scrub(node):
        if isinstance(node, dict):
            return {k: ("<clock>" if k in _VOLATILE_KEYS else scrub(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [scrub(v) for v in node]
        return node
    return _masked(json.dumps(scrub(json.loads(text)), indent=1, sort_keys=True) + "\n", tmp_path, copy)


def _views(fixture: str, tmp_path: Path, copy: Path, capsys) -> dict[str, str]:
    """Every text the suite shows for ``fixture``, masked of temporary paths and clocks."""
    root = copy / fixture
    shutil.copytree(DATA / "asv" / fixture, root)
    views: dict[str, str] = {}
    code = cli.main(["regressions", "--repo", str(root), "--remeasure", "0", "--out-root", str(tmp_path / "reports")])
    out, err = capsys.readouterr()
    views["regressions.out"] = _masked(f"exit {code}\n--- stdout\n{out}--- stderr\n{err}", tmp_path, copy)
    for report in sorted((tmp_path / "reports").glob("*/verdict.*")):
        text = report.read_text()
        views[report.name] = _json_masked(text, tmp_path, copy) if report.suffix == ".json" else _masked(text, tmp_path, copy)
    for name, argv in (("events.out", ["history", "--repo", str(root), "--events"]),
                       ("history.csv", ["history", "--repo", str(root)])):
        code = cli.main(argv)
        out, err = capsys.readouterr()
        views[name] = _masked(f"exit {code}\n--- stdout\n{out}--- stderr\n{err}", tmp_path, copy)
    return views


@pytest.mark.parametrize("fixture", FIXTURES)
def test_every_view_of_the_fixture_is_unchanged(fixture, tmp_path, fixtures_copy, capsys):
    views = _views(fixture, tmp_path, fixtures_copy, capsys)
    folder = SNAPSHOTS / fixture
    if UPDATE:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        for name, text in views.items():
            (folder / name).write_text(text)
        pytest.fail(f"snapshots of {fixture} written; run again without DETSIM_UPDATE_SNAPSHOTS")
    kept = {p.name: p.read_text() for p in folder.iterdir()} if folder.is_dir() else {}
    assert sorted(views) == sorted(kept), f"views of {fixture} differ in which files there are"
    for name in views:
        assert views[name] == kept[name], f"{fixture}/{name} changed"
