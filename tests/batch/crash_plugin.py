"""A Dask worker preload for the batch tests only: while the file ``CRASH_FLAG_FILE`` is in the batch's
folder, a frame with ``-distance 66.6`` kills its worker process mid-task (``os._exit``), as a segfault or the
out-of-memory killer would. Loaded by the tests' own cluster (``preload=[this file]``); the product has no
such hook."""

from __future__ import annotations

import os

CRASH_DISTANCE_MM = 66.6
CRASH_FLAG_FILE = "crash-here"


def dask_setup(worker) -> None:
    from detsim.commandline import command

    run_parsed = command.run_parsed

    def crashing(args, mask, out=None, **options):
        if args.distance_mm == CRASH_DISTANCE_MM and os.path.exists(CRASH_FLAG_FILE):
            os._exit(3)
        return run_parsed(args, mask, out, **options)

    command.run_parsed = crashing
