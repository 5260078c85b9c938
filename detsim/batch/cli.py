"""``detsim batch``: render a file of nanoBragg command lines, or a sweep, on a Dask cluster.

    detsim batch lines.txt [--out DIR] [--workers N | --scheduler ADDRESS] [--device cpu|cuda]
    detsim batch --base "-cell 100 100 100 90 90 90 -N 5 ..." --sweep values.csv [--out DIR] ...

Every line (row) is checked before anything renders; a bad one ends the batch with one line naming its file
and line, and exit status 2. A frame that fails while rendering (a value the configuration refuses, an
unreadable file, a worker that dies) is tried once more, then named with its reason on stderr and in the
manifest, and the batch goes on; the exit status is then 1. A rerun into the same folder renders only the
frames not finished yet. docs/batch.md tells the whole story.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

from detsim.batch import manifest
from detsim.batch.devices import DEVICES, plan_gpu_workers
from detsim.batch.frames import BatchInputError, read_lines, read_sweep
from detsim.batch.plan import plan
from detsim.batch.progress import TaskProgress
from detsim.commandline.command import EXIT_BAD_INPUT

EXIT_FRAME_FAILED = 1  # every frame was tried; at least one failed (the manifest names it)
EXIT_INTERRUPTED = 130
MANIFEST_EVERY_S = 1.0  # the manifest is rewritten at most this often while frames finish, and at the end


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="detsim batch", description="Render many nanoBragg command lines on long-lived Dask workers.",
        epilog="Bad input ends the batch before any render (exit 2); a frame that fails twice is named in the "
               "manifest and on stderr (exit 1). See docs/batch.md.")
    parser.add_argument("lines", nargs="?", metavar="LINES", help="a file of nanoBragg command lines, one a line ('#' comments)")
    parser.add_argument("--base", metavar="LINE", help="a sweep's base command line (give it as --base=... if it is one flag)")
    parser.add_argument("--sweep", metavar="CSV", help="a sweep's values: a header of flags, a row per frame")
    parser.add_argument("--out", metavar="DIR", default="batch-out", help="the output folder (default: batch-out)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, metavar="N",
                       help="workers of an embedded cluster, one process each (default: one per core)")
    where.add_argument("--scheduler", metavar="ADDRESS", help="an existing Dask scheduler (tcp://host:port)")
    parser.add_argument("--device", choices=DEVICES,
                        help="every frame on it, in place of its line's -device; cuda: the embedded cluster has one "
                             "worker per visible GPU, pinned to it (--workers N: the first N GPUs)")
    return parser


def _frames(options: argparse.Namespace):
    if options.lines is not None:
        if options.base is not None or options.sweep is not None:
            raise BatchInputError("give a lines file or --base with --sweep, not both")
        return read_lines(options.lines)
    if options.base is None or options.sweep is None:
        raise BatchInputError("give a file of command lines, or --base LINE with --sweep CSV")
    return read_sweep(options.base, options.sweep)


def main(argv: list[str]) -> int:
    parser = _parser()
    try:
        options = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2), already printed
        return int(exc.code or 0)
    if options.workers is not None and options.workers < 1:
        return _bad_input(BatchInputError(f"--workers {options.workers}: give at least 1"))
    try:
        frames = _frames(options)
        jobs, skipped = plan(frames, options.out, os.getcwd(), options.device)
    except BatchInputError as exc:
        return _bad_input(exc)
    if not jobs:
        print(f"detsim batch: all {len(skipped)} frames are already in {options.out} (see its "
              f"{manifest.MANIFEST_NAME})", file=sys.stderr)
        return 0
    try:
        import distributed  # noqa: F401 - the cluster extra
    except ImportError:
        return _bad_input(BatchInputError("needs dask and distributed: pip install 'detsim[cluster]'"))
    try:
        gpus = plan_gpu_workers(options.workers) if options.device == "cuda" and options.scheduler is None else ()
    except BatchInputError as exc:
        return _bad_input(exc)
    return _render(jobs, skipped, options, gpus)


def _render(jobs, skipped, options: argparse.Namespace, gpus=()) -> int:
    from detsim.batch.cluster import client_for, render_all

    entries = manifest.read(options.out)
    entries.update((entry.name, entry) for entry in skipped)
    written_at = [time.monotonic()]

    def on_entry(entry: manifest.Entry) -> None:
        entries[entry.name] = entry
        if time.monotonic() - written_at[0] >= MANIFEST_EVERY_S:
            manifest.write(options.out, entries)
            written_at[0] = time.monotonic()

    logging.getLogger("distributed").setLevel(logging.CRITICAL)  # a dead worker is the manifest's to report
    if skipped:
        print(f"detsim batch: {len(skipped)} frames already done, {len(jobs)} to render", file=sys.stderr)
    progress = TaskProgress(len(jobs))
    try:
        with client_for(options.workers, options.scheduler, gpus, cuda=options.device == "cuda") as client:
            os.makedirs(options.out, exist_ok=True)
            try:
                render_all(client, jobs, on_entry, progress)
            finally:
                manifest.write(options.out, entries)
    except KeyboardInterrupt:
        print("\ndetsim batch: interrupted; the manifest lists the frames that finished", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BatchInputError as exc:  # the scheduler cannot be reached
        return _bad_input(exc)
    except OSError as exc:  # the manifest could not be written (disk full, the folder removed meanwhile)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"detsim batch: error: cannot write {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_FRAME_FAILED
    progress.close()
    failed = [entries[job.frame.name] for job in jobs if entries.get(job.frame.name) is not None
              and entries[job.frame.name].status is manifest.FrameStatus.FAILED]
    for entry in failed:
        print(f"detsim batch: {entry.source} failed twice: {entry.reason}", file=sys.stderr)
    print(f"detsim batch: {len(jobs) - len(failed)} frames rendered, {len(failed)} failed, {len(skipped)} already "
          f"done; manifest {os.path.join(options.out, manifest.MANIFEST_NAME)}", file=sys.stderr)
    return EXIT_FRAME_FAILED if failed else 0


def _bad_input(exc: Exception) -> int:
    print(f"detsim batch: error: {exc}", file=sys.stderr)
    return EXIT_BAD_INPUT


__all__ = ["EXIT_FRAME_FAILED", "main"]
