"""The manifest of a batch's output folder: per frame, its command line, its files with their sha256, its
seconds and how it ended (``manifest.jsonl``, one JSON object a line, in frame order).

It is rewritten whole through a temporary file and a rename, so a reader never sees half of it. The ending
is this module's own :class:`FrameStatus` (the suite's Status lives in detsim/track, which the core does not
import); its values are the suite's words for the same endings.
"""

from __future__ import annotations

import enum
import json
import os
from dataclasses import asdict, dataclass, field

from detsim.batch.frames import BatchInputError
from detsim.fileio import safe_write

MANIFEST_NAME = "manifest.jsonl"


class FrameStatus(str, enum.Enum):
    def __str__(self) -> str:
        return self.value

    OK = "ok"  # rendered, every output written
    FAILED = "failed"  # raised, or its worker died, on both tries; `reason` says why


@dataclass(frozen=True)
class OutputFile:
    flag: str  # -floatfile, -intfile, -pgmfile, -noisefile, --trace-json
    path: str  # relative to the output folder
    sha256: str


@dataclass(frozen=True)
class Entry:
    """What became of one frame."""

    name: str
    source: str  # FILE:LINE of its command line
    command: str  # the nanoBragg arguments, shell-quoted
    status: FrameStatus
    seconds: float  # the worker's wall time for the frame's last try (reading, setup, render, writing)
    tries: int
    outputs: tuple[OutputFile, ...] = field(default=())
    reason: str = ""  # why it failed (empty when ok)

    def to_json(self) -> str:
        record = asdict(self)
        record["status"] = self.status.value
        return json.dumps(record)

    @classmethod
    def from_json(cls, text: str) -> Entry:
        record = json.loads(text)
        record["status"] = FrameStatus(record["status"])
        record["outputs"] = tuple(OutputFile(**item) for item in record["outputs"])
        return cls(**record)


def read(out_dir: str) -> dict[str, Entry]:
    """The entries of ``out_dir``'s manifest by frame name (none when it has no manifest)."""
    path = os.path.join(out_dir, MANIFEST_NAME)
    if not os.path.exists(path):
        return {}
    entries = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                entry = Entry.from_json(line)
            except (ValueError, TypeError, KeyError) as exc:
                raise BatchInputError(f"{path}:{number}: not a manifest entry ({exc}); move the manifest away to "
                                      "start the folder afresh") from None
            entries[entry.name] = entry
    return entries


def _frame_order(name: str) -> tuple[str, int]:
    """line0002 before line0010 before line10000; lines before rows."""
    stem = name.rstrip("0123456789")
    return stem, int(name[len(stem):] or 0)


def write(out_dir: str, entries: dict[str, Entry]) -> None:
    """Replace ``out_dir``'s manifest with ``entries`` (in frame order), atomically."""
    text = "".join(entries[name].to_json() + "\n" for name in sorted(entries, key=_frame_order))
    safe_write.atomic_write(os.path.join(out_dir, MANIFEST_NAME), lambda handle: handle.write(text.encode()))


__all__ = ["MANIFEST_NAME", "Entry", "FrameStatus", "OutputFile", "read", "write"]
