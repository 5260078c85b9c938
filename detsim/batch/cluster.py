"""The frames rendered on a Dask cluster: an embedded LocalCluster (one single-threaded worker process per
core by default, or one per GPU, each pinned to its GPU: :mod:`.devices`) or an existing scheduler's workers;
each frame gets a second try when the first fails or its worker dies, and every finished frame is handed back
at once (for the manifest and the progress line). A CUDA frame asks for one unit of the workers' GPU resource,
so it runs only on a worker that has a GPU, one frame a GPU at a time.

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
from typing import Callable, Iterator, Mapping, Sequence

from detsim.batch.devices import GPU_RESOURCE, GpuWorker
from detsim.batch.frames import BatchInputError
from detsim.batch.manifest import Entry, FrameStatus
from detsim.batch.plan import FrameJob
from detsim.batch.progress import TaskProgress
from detsim.batch.worker import remove_empty_folders, render_frame

TRIES = 2  # a failed frame is tried once more
CONNECT_TIMEOUT = "10s"  # to reach an existing scheduler
LOCAL_SCHEDULER_CONFIG = {"distributed.scheduler.allowed-failures": 0,
                          "distributed.scheduler.worker-saturation": 1.0}


def gpu_worker_specs(template: Mapping, gpus: Sequence[GpuWorker]) -> dict[str, dict]:
    """The worker specs of an embedded cluster on ``gpus``: the cluster's own worker options (``template``, a
    SpecCluster's ``new_spec``) in a nanny process per GPU, started with its pinning and one GPU resource."""
    from distributed import Nanny

    options = dict(template["options"])
    return {g.name: {"cls": Nanny, "options": {**options, "nthreads": 1, "env": dict(g.env),
                                               "resources": {GPU_RESOURCE: 1}}} for g in gpus}


def local_cluster(workers: int | None = None, *, processes: bool = True, gpus: Sequence[GpuWorker] = (),
                  **worker_options):
    """An embedded cluster, quiet, no dashboard: ``workers`` single-threaded workers (default: one per core),
    or, given ``gpus``, one worker process per GPU pinned to it (:func:`gpu_worker_specs`)."""
    import dask
    from distributed import LocalCluster

    with dask.config.set(LOCAL_SCHEDULER_CONFIG):
        cluster = LocalCluster(n_workers=0 if gpus else workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=processes, dashboard_address=None, silence_logs=logging.CRITICAL,
                               **worker_options)
    if gpus:
        cluster.worker_spec.update(gpu_worker_specs(cluster.new_spec, gpus))
        cluster.scale(len(gpus))
    return cluster


def _check_gpu_workers(client, scheduler: str) -> None:
    """Refuses an existing cluster none of whose workers offers the GPU resource (its CUDA frames would wait)."""
    found = client.scheduler_info().get("workers", {}).values()
    if not any((w.get("resources") or {}).get(GPU_RESOURCE) for w in found):
        raise BatchInputError(f"--device cuda: no worker of {scheduler} offers the resource {GPU_RESOURCE} (start "
                              f"one per GPU with `dask worker {scheduler} --nthreads 1 --resources {GPU_RESOURCE}=1`, "
                              "docs/batch.md)")


@contextlib.contextmanager
def client_for(workers: int | None, scheduler: str | None, gpus: Sequence[GpuWorker] = (),
               cuda: bool = False) -> Iterator:
    """A Dask client of an existing scheduler (``scheduler``; with ``cuda``, one of its workers must have a
    GPU) or of an embedded cluster (on ``gpus`` where given), closed after."""
    from distributed import Client

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT)
        except (OSError, ValueError) as exc:  # unreachable (TimeoutError is an OSError), or not an address
            raise BatchInputError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
        with client:
            if cuda:
                _check_gpu_workers(client, scheduler)
            yield client
        return
    with local_cluster(workers, gpus=gpus) as cluster, Client(cluster) as client:
        yield client


def _lost(job: FrameJob, tries: int, exc: BaseException) -> Entry:
    from distributed import KilledWorker

    reason = ("its worker died while rendering it" if isinstance(exc, KilledWorker)
              else " ".join(f"{type(exc).__name__}: {exc}".split()))
    frame = job.frame
    return Entry(frame.name, frame.source, frame.command, FrameStatus.FAILED, 0.0, tries, reason=reason)


def task_resources(job: FrameJob) -> dict | None:
    """What a frame's task asks of its worker: one GPU for a CUDA frame of ``--device cuda``, else nothing."""
    return {GPU_RESOURCE: 1} if job.device == "cuda" else None


def render_all(client, jobs: list[FrameJob], on_entry: Callable[[Entry], None], progress: TaskProgress) -> None:
    """Render ``jobs`` on ``client``'s workers (a CUDA job on one with a GPU); ``on_entry`` gets each frame's last
    entry as it ends."""
    from distributed import as_completed

    batch = uuid.uuid4().hex[:8]

    def submit(job: FrameJob, tries: int):
        future = client.submit(render_frame, job, tries, key=f"detsim-batch-{batch}-{job.frame.name}-try{tries}",
                               pure=False, resources=task_resources(job))
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


__all__ = ["LOCAL_SCHEDULER_CONFIG", "TRIES", "client_for", "gpu_worker_specs", "local_cluster", "render_all",
           "task_resources"]
