"""Where a recording's measures were taken, for the verdict's note (docs/cluster.md): the timings on the machine
the history belongs to, the measures no load changes (parity, hashes, reproducibility, counts, peak memory) by a
Dask cluster's workers where ``detsim-track record --workers/--scheduler`` sent them there.

One :class:`Taken` per commit and worker: the recording it was (``run``, one ``detsim-track record`` with a
cluster) and the worker's address. A target's rows hold them in each case's record; detsim's own history, whose
asv results files have no free field per commit, in a sidecar beside them: ``results/asv/<machine>/``
:data:`WHERE_FILE`, one JSON object a line (``{"commit": ..., "run": ..., "worker": ...}``), rewritten whole by the
recorder (:func:`write_where`) and read by :func:`read_where`. Its name ends in ``.jsonl``, not ``.json``: asv
and the judge take every ``*.json`` of that folder for a results file. Standard library only (the recorder's
steps import it).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence
from urllib.parse import urlsplit

from .files import RecordingError, write_aside

WHERE_FILE = "measured-where.jsonl"  # in results/asv/<machine>/: where detsim's own commits were measured
KEYS = ("commit", "run", "worker")
# what a cluster's task measures (the rest, the timings, is measured on the history's machine alone)
TARGET_FAMILIES = "parity, image hashes, reproducibility, instruction counts and peak memory"
OWN_FAMILIES = "instruction counts, device costs, parity, image hashes, reproducibility and peak memory"


@dataclass(frozen=True)
class Taken:
    """``commit``'s measures that no load changes, taken by the Dask worker at ``worker`` in recording ``run``
    (None: a target's row stored before recordings were named)."""

    commit: str
    run: str | None
    worker: str


def new_run() -> str:
    """A recording's name: when it began (UTC) and a few random letters (two may begin in one second)."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:6]


def read_where(folder: Path) -> tuple[Taken, ...]:
    """The sidecar of ``folder`` (a machine's results folder); none there: nothing. ValueError: a line that is
    not one of its records, named."""
    path = Path(folder) / WHERE_FILE
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return ()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: unreadable ({exc})") from None
    found = []
    for number, line in enumerate(lines, 1):
        try:
            data = json.loads(line)
            if not isinstance(data, dict) or sorted(data) != sorted(KEYS) or not isinstance(data["commit"], str) \
                    or not isinstance(data["run"], str) or not isinstance(data["worker"], str):
                raise ValueError
        except ValueError:
            raise ValueError(f"{path}:{number}: not a record of where a commit was measured "
                             f"(a JSON object of {', '.join(KEYS)})") from None
        found.append(Taken(data["commit"], data["run"], data["worker"]))
    return tuple(found)


def write_where(folder: Path, recorded: Iterable[str], measured: Iterable[Taken]) -> None:
    """The sidecar of ``folder`` with the commits ``recorded`` again taking ``measured`` (none: theirs are
    dropped, measured here), replaced whole; not written where it would be new and empty."""
    again = set(recorded)
    try:
        kept = [m for m in read_where(folder) if m.commit not in again]
    except ValueError as exc:
        raise RecordingError(f"{exc}; remove it to record again") from None
    entries = kept + list(measured)
    path = Path(folder) / WHERE_FILE
    if not entries and not path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_aside(path, "".join(json.dumps({"commit": m.commit, "run": m.run, "worker": m.worker}) + "\n"
                              for m in entries).encode())


def where_note(machine: str, commits: Sequence[str], measured: Iterable[Taken], families: str) -> str | None:
    """The verdict's line saying where the measures of ``commits`` recorded on ``machine`` were taken; None
    where no Dask worker took any (every measure was ``machine``'s). Workers are counted per recording: their
    addresses change from one recording to the next."""
    judged = set(commits)
    taken = [m for m in measured if m.commit in judged]
    if not taken:
        return None
    on_cluster = {m.commit for m in taken}
    runs: dict[str | None, set[str]] = {}
    for m in taken:
        runs.setdefault(m.run, set()).add(m.worker)
    hosts = sorted({urlsplit(m.worker).hostname or m.worker for m in taken})
    others = len(commits) - len(on_cluster)
    return (f"where it was measured: the timings on machine {machine} alone (the machine this history belongs to); "
            f"{families} of {len(on_cluster)} of the {len(commits)} commits judged by {_workers(runs)} on "
            f"{', '.join(hosts)} (`detsim-track record --workers/--scheduler`)"
            + (f", of the other {others} on machine {machine}" if others else ""))


def _workers(runs: dict[str | None, set[str]]) -> str:
    """How many worker processes, recording by recording (a target's rows stored before recordings were named
    tell only distinct addresses)."""
    sizes = [len(workers) for run, workers in sorted(runs.items(), key=lambda item: item[0] or "") if run is not None]
    said = []
    if len(sizes) == 1:
        said.append(f"{sizes[0]} Dask worker process(es) in one recording")
    elif sizes:
        said.append(f"Dask workers in {len(sizes)} recordings ({' + '.join(map(str, sizes))} worker processes)")
    if None in runs:
        said.append(f"{len(runs[None])} Dask worker address(es) of recordings that stored no name")
    return " and ".join(said)
