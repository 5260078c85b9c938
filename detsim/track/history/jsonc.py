"""Reading the stored JSON files of the asv history and ``asv.conf.json`` (JSON with ``//`` line comments, as
asv allows; no trailing commas): a missing, unreadable or corrupt file is a :class:`ResultsError` naming it."""

from __future__ import annotations

import math
import re
from pathlib import Path

from detsim.track.base import recording
from detsim.track.base.recording import strip_comments  # noqa: F401 (read here by its users)

CONFIG = "asv.conf.json"


class ResultsError(ValueError):
    """A stored file that cannot be used; the message names it."""


def read_json(path: Path, *, comments: bool = False):
    """The parsed file (NaN allowed: asv writes it for skips); raises :class:`ResultsError` naming it."""
    return recording.read_json(path, comments=comments, error=ResultsError)


def load_config(root: Path) -> dict:
    """``asv.conf.json`` of the project at ``root``, as a dict."""
    conf = read_json(root / CONFIG, comments=True)
    if not isinstance(conf, dict):
        raise ResultsError(f"{root / CONFIG}: not a JSON object")
    check_config(conf, root / CONFIG)
    return conf


def _regex_map(conf: dict, key: str, path: Path) -> dict:
    """``conf[key]``: a map whose keys are regular expressions (every one must compile)."""
    entries = conf.get(key) or {}
    if not isinstance(entries, dict):
        raise ResultsError(f"{path}: {key} is not a map of regular expressions")
    for regex in entries:
        try:
            re.compile(regex)
        except re.error as exc:
            raise ResultsError(f"{path}: {key}: {regex!r} is not a regular expression ({exc})") from None
    return entries


def check_config(conf: dict, path: Path) -> None:
    """The parts of asv.conf.json the verdict reads hold possible values (docs/tracking.md); else a ResultsError
    naming them."""
    for regex, value in _regex_map(conf, "regressions_thresholds", path).items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ResultsError(f"{path}: regressions_thresholds[{regex!r}] = {value!r} is not a threshold "
                               "(a fraction >= 0, e.g. 0.5 for +50%)")
    for regex, commit in _regex_map(conf, "regressions_first_commits", path).items():
        if commit is not None and not (isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{4,40}", commit)):
            raise ResultsError(f"{path}: regressions_first_commits[{regex!r}] = {commit!r} is not a commit hash")
