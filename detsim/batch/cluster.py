"""The frames rendered on a Dask cluster: an embedded LocalCluster (one single-threaded worker process per
core by default) or an existing scheduler's workers; each frame gets a second try when the first fails or its
worker dies, and every finished frame is handed back at once (for the manifest and the progress line).

The embedded cluster hands a worker one frame at a time (``worker-saturation`` 1.0) and gives up on a task at
the first worker that dies under it (``allowed-failures`` 0): the retry is this module's, once, so a frame
that kills its worker is tried twice and no frame beside it is lost. An existing scheduler keeps its own
settings (its retries come on top of this one).
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from typing import Callable, Iterator

from detsim.batch.frames import BatchInputError
from detsim.batch.manifest import Entry, FrameStatus
from detsim.batch.plan import FrameJob
from detsim.batch.progress import TaskProgress
from detsim.batch.worker import remove_empty_folders, render_frame

TRIES = 2  # a failed frame is tried once more
CONNECT_TIMEOUT = "10s"  # to reach an existing scheduler
LOCAL_SCHEDULER_CONFIG = {"distributed.scheduler.allowed-failures": 0,
                          "distributed.scheduler.worker-saturation": 1.0}


def local_cluster(workers: int | None = None, *, processes: bool = True, **worker_options):
    """An embedded cluster of ``workers`` single-threaded workers (default: one per core), quiet, no dashboard."""
    import dask
    from distributed import LocalCluster

    with dask.config.set(LOCAL_SCHEDULER_CONFIG):
        return LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=processes,
                            dashboard_address=None, silence_logs=logging.CRITICAL, **worker_options)


@contextlib.contextmanager
def client_for(workers: int | None, scheduler: str | None) -> Iterator:
    """A Dask client of an existing scheduler (``scheduler``) or of an embedded cluster, closed after."""
    from distributed import Client

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, ValueError) as exc:  # unreachable (TimeoutError is an OSError), or not an address
            raise BatchInputError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
        with client:
            yield client
        return
    with local_cluster(workers) as cluster, Client(cluster) as client:
        yield client


def _lost(job: FrameJob, tries: int, exc: BaseException) -> Entry:
    from distributed import KilledWorker

    reason = ("its worker died while rendering it" if isinstance(exc, KilledWorker)
              else " ".join(f"{type(exc).__name__}: {exc}".split()))
    frame = job.frame
    return Entry(frame.name, frame.source, frame.command, FrameStatus.FAILED, 0.0, tries, reason=reason)


def render_all(client, jobs: list[FrameJob], on_entry: Callable[[Entry], None], progress: TaskProgress) -> None:
    """Render ``jobs`` on ``client``'s workers; ``on_entry`` gets each frame's last entry as it ends."""
    from distributed import as_completed

    batch = uuid.uuid4().hex[:8]

    def submit(job: FrameJob, tries: int):
        future = client.submit(render_frame, job, tries, key=f"detsim-batch-{batch}-{job.frame.name}-try{tries}",
                               pure=False)
        pending[future.key] = (job, tries)
        return future

    pending: dict[str, tuple[FrameJob, int]] = {}
    futures = as_completed([submit(job, 1) for job in jobs])
    try:
        for future in futures:
            job, tries = pending.pop(future.key)
            try:
                entry = future.result()
            except Exception as exc:  # noqa: BLE001 - the worker died, or the task was lost: a failed try
                entry = _lost(job, tries, exc)
            future.release()
            if entry.status is FrameStatus.FAILED and tries < TRIES:
                progress.retrying()
                futures.add(submit(job, tries + 1))
                continue
            if entry.status is FrameStatus.FAILED:
                remove_empty_folders(job.frame_dir)  # a worker that died under it left its folder behind
            on_entry(entry)
            progress.finished(entry.status is FrameStatus.OK)
    finally:
        for future in list(futures.futures):
            future.cancel()


__all__ = ["LOCAL_SCHEDULER_CONFIG", "TRIES", "client_for", "local_cluster", "render_all"]
