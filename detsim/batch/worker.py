"""One frame rendered on a worker: read its line, render and write it as ``detsim`` does (the same
:func:`~detsim.commandline.command.run_parsed`), and hash what it wrote.

A worker renders many frames in one process, so torch and the engine are imported once; consecutive frames
whose setup is unchanged (the same flags but for the outputs', the same mask, the same input files) reuse the
configuration and the prepared setup (:class:`FrameSetups`, one per worker thread). Any error of a frame is
its failure, returned with the reason; it never reaches the worker.

The batch checked that no output of a frame to render existed (:mod:`detsim.batch.plan`), so a frame that finds
all its files is one whose earlier try wrote them and whose worker died before the result came back (Dask then
runs the task again): the files are taken as they are, hashed and not written twice. Finding only some of them
(a worker that died between two renames) fails the frame rather than overwrite them.
"""

from __future__ import annotations

import dataclasses
import io
import os
import threading
import time

import numpy as np

from detsim.batch.manifest import Entry, FrameStatus, OutputFile
from detsim.fileio.digest import sha256_file
from detsim.host.working_directory import working_directory
from detsim.batch.plan import FrameJob, place_outputs
from detsim.commandline import command
from detsim.commandline.arguments import Arguments
from detsim.commandline.to_config import build_config, parse_with_headers

# Arguments that only say what is written, and how it is rendered (never what the setup is)
_NOT_SETUP = dict(floatfile="", intfile="", pgmfile="", noisefile="", write_pgm=False, write_noise=False,
                  int_scale=0.0, pgm_scale=0.0, adc=0.0, noise_seed=None, progress=False, trace_json=None,
                  chunk_pixels=None, mode="eager", threads=None)


def _file_state(path: str) -> tuple:
    try:
        info = os.stat(path)
    except OSError:
        return (path, None)
    return (os.path.realpath(path), info.st_size, info.st_mtime_ns, info.st_ino)


def setup_key(args: Arguments, mask: np.ndarray | None) -> tuple:
    """What the configuration and the setup are made from: the setup's flags, the mask, the input files."""
    mask_key = None if mask is None else (mask.shape, mask.dtype.str, mask.tobytes())
    files = tuple((flag, _file_state(path)) for flag, path in args.input_files())
    return dataclasses.replace(args, **_NOT_SETUP), mask_key, files


class FrameSetups:
    """The last configuration and setup made, handed out again while the next frame's are the same."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.config = None
        self.prepared: tuple | None = None  # (config, device, dtype, setup)

    def build(self, args: Arguments, mask: np.ndarray | None):
        key = setup_key(args, mask)
        if self.key != key:
            self.config, self.prepared = build_config(args, mask), None
            self.key = key
        return self.config

    def prepare(self, config, *, device, dtype):
        from detsim.rendering import engine

        if self.prepared is not None and self.prepared[0] is config and self.prepared[1:3] == (device, dtype):
            return self.prepared[3]
        setup = engine.prepare(config, device=device, dtype=dtype)
        self.prepared = (config, device, dtype, setup)
        return setup


_local = threading.local()


def _cache() -> FrameSetups:
    if not hasattr(_local, "cache"):
        _local.cache = FrameSetups()
    return _local.cache


def _reason(exc: BaseException) -> str:
    text = str(exc) if isinstance(exc, (ValueError, OSError)) else f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())


def remove_empty_folders(top: str) -> None:
    """A failed frame leaves no folder behind (its files are all or none: none)."""
    for folder, _, _ in os.walk(top, topdown=False):
        try:
            os.rmdir(folder)
        except OSError:  # not empty
            pass


def render_frame(job: FrameJob, tries: int) -> Entry:
    """Render ``job``'s frame (its ``tries``-th try); the entry says ok with the files' sha256, or why not."""
    start = time.perf_counter()
    frame = job.frame
    try:
        with working_directory(job.cwd):  # input files are read as the batch's line reads them
            args, mask = parse_with_headers(list(frame.argv))
            if job.device is not None:
                args = dataclasses.replace(args, device=job.device)
            placed = place_outputs(args, job.frame_dir)
            there = [path for _, path in placed if os.path.lexists(os.path.join(job.out_dir, path))]
            if there and len(there) < len(placed):
                raise FileExistsError(f"an earlier try left {len(there)} of the frame's {len(placed)} files "
                                      f"({', '.join(there)}); they are not overwritten")
            if not there:  # else all are there: written by an earlier try whose worker died before handing them back
                for _, path in placed:
                    os.makedirs(os.path.dirname(os.path.join(job.out_dir, path)), exist_ok=True)
                cache = _cache()
                command.run_parsed(args, mask, io.StringIO(), build=cache.build, prepare=cache.prepare)
            outputs = tuple(OutputFile(flag, path, sha256_file(os.path.join(job.out_dir, path)))
                            for flag, path in placed)
    except Exception as exc:  # noqa: BLE001 - a frame's failure is reported, never raised into the worker
        _local.__dict__.pop("cache", None)  # a half-made setup is not reused
        remove_empty_folders(job.frame_dir)
        return Entry(frame.name, frame.source, frame.command, FrameStatus.FAILED, time.perf_counter() - start,
                     tries, reason=_reason(exc))
    return Entry(frame.name, frame.source, frame.command, FrameStatus.OK, time.perf_counter() - start, tries,
                 outputs)


__all__ = ["FrameSetups", "remove_empty_folders", "render_frame", "setup_key"]
