"""Where a recording's measures that no load changes run: on a Dask cluster (docs/cluster.md).

Input: a :class:`Cluster` (``--workers N``: a ``LocalCluster`` on this machine, N worker processes of one thread
each; ``--scheduler ADDRESS``: an existing cluster's scheduler, ``dask scheduler`` + ``dask worker`` or
dask-jobqueue's), then tasks (a key, a function, its arguments). Output: each task's result, or the one line
saying why it failed, and on stderr the core's progress line (done, failed, the time left:
:mod:`detsim.batch.progress`). dask and distributed are imported here only, and only when a cluster is asked for
(the ``cluster`` extra).

A task lost with its worker is run again on another (distributed's scheduler reschedules it, up to its
``distributed.scheduler.allowed-failures``), one that raises is retried :data:`RETRIES` times; results come
back to the caller, which alone writes anything, so a task lost half-way leaves nothing recorded twice or half.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from dataclasses import dataclass
from typing import Callable, Hashable, Iterator, TextIO

from detsim.batch.progress import TaskProgress

RETRIES = 2  # a task that raises is run again this many times before it is failed
CONNECT_TIMEOUT_S = 30  # an existing scheduler must answer within this
INSTALL_HINT = "dask and distributed are not installed here (the cluster extra: pip install -e '.[cluster]')"
_ADDRESS = re.compile(r"(?:(?:tcp|tls|ws|wss|ucx|inproc)://)?[A-Za-z0-9._\-\[\]:]+")  # scheme://host:port


def default_workers() -> int:
    """``--workers`` without a number: one worker per core this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class ClusterError(RuntimeError):
    """A cluster that cannot be had (one line)."""


@dataclass(frozen=True)
class Cluster:
    """Where tasks run: ``workers`` local processes, or the existing cluster whose scheduler is ``scheduler``."""

    workers: int | None = None
    scheduler: str | None = None

    def __post_init__(self):
        if (self.workers is None) == (self.scheduler is None):
            raise ValueError("a cluster is --workers N or --scheduler ADDRESS, one of them")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"--workers {self.workers}: give 1 or more")
        if self.scheduler is not None and not _ADDRESS.fullmatch(self.scheduler):
            raise ValueError(f"--scheduler {self.scheduler!r}: not a scheduler address (e.g. tcp://127.0.0.1:8786)")

    def describe(self) -> str:
        if self.workers is not None:
            return f"{self.workers} Dask worker process(es) on this machine"
        return f"the Dask cluster at {self.scheduler}"


@contextlib.contextmanager
def client(cluster: Cluster) -> Iterator:
    """A ``distributed.Client`` of ``cluster`` (a LocalCluster made for the block and closed after it)."""
    try:
        import distributed
    except ImportError:
        raise ClusterError(INSTALL_HINT) from None
    if cluster.scheduler is not None:
        try:
            made = distributed.Client(cluster.scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"--scheduler {cluster.scheduler}: no scheduler answers ({exc})") from None
        with made:
            yield made
        return
    with distributed.LocalCluster(n_workers=cluster.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None, scheduler_kwargs={"dashboard": False},
                                  silence_logs=logging.ERROR) as local, \
            distributed.Client(local) as made:
        yield made


@dataclass(frozen=True)
class Outcome:
    """A task's end: its ``value``, or ``failed`` (one line: why)."""

    value: object = None
    failed: str | None = None


class Tasks:
    """Tasks submitted to ``client`` one by one (while the caller goes on), then gathered by :meth:`results`."""

    def __init__(self, client, what: str = "tasks", stream: TextIO | None = None):
        self.client, self.what, self.stream = client, what, stream
        self.futures: dict[Hashable, object] = {}
        self.began: float | None = None  # the first submission (tasks run from then on)

    def submit(self, key: Hashable, function: Callable, *args) -> None:
        """Run ``function(*args)`` on a worker, once per ``key`` (a key submitted again is the same task)."""
        if key not in self.futures:
            self.began = self.began or time.monotonic()
            self.futures[key] = self.client.submit(function, *args, key=f"{self.what}-{key}", pure=False,
                                                   retries=RETRIES)

    def results(self) -> dict[Hashable, Outcome]:
        """Each task's outcome, waited for with a progress line."""
        from distributed import as_completed

        keys = {future.key: key for key, future in self.futures.items()}
        progress = TaskProgress(len(self.futures), self.stream, what=self.what, began=self.began)
        found: dict[Hashable, Outcome] = {}
        for future in as_completed(list(self.futures.values())):
            key = keys[future.key]
            if future.status == "finished":
                found[key] = Outcome(future.result())
            else:
                exc = future.exception()
                found[key] = Outcome(failed=f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            future.release()
            progress.finished(found[key].failed is None)
        progress.close()
        return found
