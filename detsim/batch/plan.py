"""Everything a batch can check before it renders: each frame's command line and input files, where each
output goes, and which frames a previous run of the same folder already finished.

Each frame writes the files ``detsim`` would write for its line (the same names, defaults included) into its
own folder, ``OUT/line0003/``; a name in the line is taken relative to that folder, so it must be relative
and may not climb out with ``..``. Nothing is ever overwritten: a frame's output that exists already is
accepted only as the finished work of the same command line (the manifest says ok with the same sha256),
and that frame is skipped; any other existing output refuses the whole batch before anything renders.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import PurePath

from detsim.batch import manifest
from detsim.batch.frames import BatchInputError, BatchFrame
from detsim.commandline.arguments import Arguments
from detsim.commandline.command import output_paths
from detsim.commandline.to_config import parse_with_headers
from detsim.fileio import bounded_read
from detsim.fileio.digest import sha256_file

# the Arguments field each output flag of :func:`~detsim.commandline.command.output_paths` sets
OUTPUT_FIELDS = {"-floatfile": "floatfile", "-intfile": "intfile", "-pgmfile": "pgmfile",
                 "-noisefile": "noisefile", "--trace-json": "trace_json"}


@dataclass(frozen=True)
class FrameJob:
    """A frame to render, with where it reads (``cwd``: relative input paths) and writes (``frame_dir``)."""

    frame: BatchFrame
    out_dir: str  # absolute
    cwd: str  # absolute: the batch's working directory
    device: str | None = None  # the batch's --device, in place of the line's -device (None: the line's)

    @property
    def frame_dir(self) -> str:
        return os.path.join(self.out_dir, self.frame.name)


def place_outputs(args: Arguments, frame_dir: str) -> list[tuple[str, str]]:
    """Point ``args``' outputs into ``frame_dir``; returns (flag, path relative to the output folder) of each.

    Raises :class:`ValueError` for a name that is absolute or climbs out with ``..``.
    """
    placed = []
    for flag, path in output_paths(args):
        parts = PurePath(path).parts
        if os.path.isabs(path) or ".." in parts:
            raise ValueError(f"{flag} {path}: a batch writes each frame's files into the frame's own folder; "
                             "give a relative name without '..'")
        setattr(args, OUTPUT_FIELDS[flag], os.path.join(frame_dir, path))
        placed.append((flag, os.path.normpath(os.path.join(os.path.basename(frame_dir), path))))
    return placed


def _check_frame(frame: BatchFrame, frame_dir: str) -> list[tuple[str, str]]:
    try:
        args, _ = parse_with_headers(list(frame.argv))
        for flag, path in args.input_files():
            problem = bounded_read.describe(path)
            if problem is not None and problem.startswith(("no such", "cannot")):
                raise ValueError(f"{flag} {path}: {problem}")
        placed = place_outputs(args, frame_dir)
    except (ValueError, OSError) as exc:  # ArgumentError, InputError, ConfigError: one line naming the flag
        raise BatchInputError(f"{frame.source}: {exc}") from None
    paths = [path for _, path in placed]
    if len(set(paths)) != len(paths):
        raise BatchInputError(f"{frame.source}: two outputs of the line name one file")
    return placed


def _finished(entry: manifest.Entry | None, frame: BatchFrame, placed: list[tuple[str, str]], out_dir: str) -> bool:
    """Whether the manifest's ``entry`` is this frame's line, ok, with every file there and unchanged."""
    if entry is None or entry.status is not manifest.FrameStatus.OK or entry.command != frame.command:
        return False
    if sorted((o.flag, o.path) for o in entry.outputs) != sorted(placed):
        return False
    return all(os.path.isfile(os.path.join(out_dir, o.path)) and sha256_file(os.path.join(out_dir, o.path))
               == o.sha256 for o in entry.outputs)


def plan(frames: list[BatchFrame], out_dir: str, cwd: str,
         device: str | None = None) -> tuple[list[FrameJob], list[manifest.Entry]]:
    """(frames to render on ``device``, manifest entries of frames already finished); raises
    :class:`BatchInputError`."""
    out_dir, cwd = os.path.abspath(out_dir), os.path.abspath(cwd)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise BatchInputError(f"--out {out_dir}: is not a directory")
    done = manifest.read(out_dir)
    jobs, skipped = [], []
    for frame in frames:
        job = FrameJob(frame, out_dir, cwd, device)
        placed = _check_frame(frame, job.frame_dir)
        entry = done.get(frame.name)
        if _finished(entry, frame, placed, out_dir):
            skipped.append(entry)
            continue
        for flag, path in placed:
            if os.path.lexists(os.path.join(out_dir, path)):
                raise BatchInputError(f"{frame.source}: {flag} {os.path.join(out_dir, path)} exists and is not this "
                                      f"line's finished output in {manifest.MANIFEST_NAME}; it is never "
                                      "overwritten (remove it to render the frame again)")
        jobs.append(job)
    return jobs, skipped


__all__ = ["FrameJob", "OUTPUT_FIELDS", "place_outputs", "plan"]
