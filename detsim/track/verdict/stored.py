"""Where the judgement is kept and how a view finds it: ``<reports>/<STAMP>/verdict.json`` (with
``verdict.txt`` beside it), and ``<reports>/latest``, a link to the folder of the latest verdict, swapped
in atomically once both files are written. Views (``detsim-track publish``, ``explain``) read the JSON
(:func:`read_verdict`) and nothing else of the history's judgement.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping

COMMAND = "detsim-track regressions"  # the "report" field of verdict.json
TEXT_FILE, JSON_FILE = "verdict.txt", "verdict.json"  # the full report, in each report folder
LATEST = "latest"  # the link, in the reports folder, to the latest verdict's folder
MACHINE_FIELDS = ("machine", "latest", "commits", "notes", "exit")  # what every view reads of a machine's verdict


class VerdictError(Exception):
    """A verdict that cannot be read or used (one line naming the file)."""


def check_latest(reports: Path) -> None:
    """Refuse (:class:`VerdictError`) before the work when ``reports/latest`` is something other than this
    command's link, which is never replaced."""
    link = reports / LATEST
    if os.path.lexists(link) and not link.is_symlink():
        raise VerdictError(f"{link}: exists and is not the link to the latest verdict; refusing to replace it")


def point_latest(folder: Path) -> None:
    """Make ``folder.parent/latest`` point at ``folder`` (a new link renamed over the old one: atomic)."""
    link = folder.parent / LATEST
    new = folder.parent / f".{LATEST}.{os.getpid()}"
    new.unlink(missing_ok=True)
    os.symlink(folder.name, new)
    try:
        os.replace(new, link)
    except OSError:
        new.unlink(missing_ok=True)
        raise


def latest_file(reports: Path) -> Path:
    """The latest verdict's JSON file under ``reports``."""
    return reports / LATEST / JSON_FILE


def read_verdict(path: Path) -> dict:
    """The verdict stored at ``path``, checked to be one (:class:`VerdictError`, one line, otherwise)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise VerdictError(f"{path}: no verdict there (run `{COMMAND}` first)") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise VerdictError(f"{path}: unreadable ({getattr(exc, 'strerror', None) or exc})") from None
    if not isinstance(data, dict) or data.get("report") != COMMAND:
        raise VerdictError(f"{path}: not a verdict of `{COMMAND}`")
    machines = data.get("machines") if "machines" in data else {data.get("machine"): data}
    if not isinstance(machines, dict) or not machines or not all(
            isinstance(m, str) and isinstance(r, dict) and isinstance(r.get("regressions"), list)
            for m, r in machines.items()):
        raise VerdictError(f"{path}: not a verdict of `{COMMAND}` (no machine's findings)")
    for machine, report in machines.items():
        missing = [key for key in MACHINE_FIELDS if key not in report]
        if missing or not all(isinstance(r, dict) and "label" in r for r in report["regressions"]):
            raise VerdictError(f"{path}: the verdict on {machine} has no {', '.join(missing) or 'finding labels'}")
    return data


def machines_of(verdict: Mapping) -> dict[str, dict]:
    """Machine -> its verdict, from a stored verdict (one machine's, or several under ``machines``)."""
    return dict(verdict["machines"]) if "machines" in verdict else {verdict["machine"]: dict(verdict)}
