"""A Dask worker preload for the batch tests only: a frame with ``-distance 66.6`` kills its worker process
mid-task (``os._exit``), as a segfault or the out-of-memory killer would, as many times as the file
``CRASH_FLAG_FILE`` in the batch's folder says. Loaded by the tests' own cluster (``preload=[this file]``);
the product has no such hook."""

from __future__ import annotations

import os

CRASH_DISTANCE_MM = 66.6
CRASH_FLAG_FILE = "crashes-left"


def dask_setup(worker) -> None:
    from detsim.commandline import command

    run_parsed = command.run_parsed

    def crashing(args, mask, out=None, **options):
        if args.distance_mm == CRASH_DISTANCE_MM and os.path.exists(CRASH_FLAG_FILE):
            with open(CRASH_FLAG_FILE) as handle:
                left = int(handle.read())
            if left > 0:
                with open(CRASH_FLAG_FILE, "w") as handle:
                    handle.write(str(left - 1))
                os._exit(3)
        return run_parsed(args, mask, out, **options)

    command.run_parsed = crashing
