"""Chunks of pixels across threads, as nanoBragg's OpenMP loop shares its rows (spec §5.1).

Pixels are independent and a pixel's sum has a fixed order, so a render hands whole chunks to worker
threads: each worker runs its chunk with one intra-op thread (no op splits its work, so no reduction
changes order), and the chunks are the memory plan's (:mod:`detsim.host.memory`), which does not depend on
the thread count. An image is therefore the same bits whatever the number of threads. torch's ops
release the GIL, so the workers' arithmetic runs side by side; only the Python between ops is serial.

The thread count of a render is the caller's, else torch's intra-op count (``OMP_NUM_THREADS`` when
set, as for nanoBragg's OpenMP loop; otherwise torch's default, the machine's physical cores).
"""

from __future__ import annotations

from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence, TypeVar

# torch is imported by the functions that use it: the command line's flag table reads MAX_THREADS, and
# `detsim -h` or a bad flag answers without waiting ~1.5 s for torch's import
MAX_THREADS = 1024  # more threads than any machine's cores is a typing error, not a request

T = TypeVar("T")


def requested(threads: int | None) -> int:
    """The thread count of a render: ``threads`` as given, else torch's intra-op thread count.

    Raises:
        ValueError: ``threads`` outside 1..:data:`MAX_THREADS`.
    """
    import torch

    count = torch.get_num_threads() if threads is None else threads
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_THREADS:
        raise ValueError(f"threads must be an integer from 1 to {MAX_THREADS}, got {count!r}")
    return count


@contextmanager
def intra_op_threads(count: int) -> Iterator[None]:
    """torch's intra-op thread count set to ``count`` for the block, restored after it (process-wide)."""
    import torch

    before = torch.get_num_threads()
    if before == count:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run(jobs: Sequence[Callable[[], T]], workers: int, done: Callable[[int, T], None]) -> None:
    """Run every job with one intra-op thread, at most ``workers`` at a time; ``done(index, result)`` each.

    ``done`` runs in the calling thread, in the order the jobs finish. With one worker, or one job, the
    jobs run in the calling thread, in order. Jobs are submitted as others finish, so at most ``workers``
    are alive at once (each holds one chunk's memory). A job's exception, or an interrupt of the calling
    thread, stops the submissions and is raised once the running jobs have ended.
    """
    import torch

    with intra_op_threads(1):
        if workers <= 1 or len(jobs) <= 1:
            for index, job in enumerate(jobs):
                done(index, job())
            return
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="detsim-chunk",
                                initializer=torch.set_num_threads, initargs=(1,)) as pool:
            running: dict[Future, int] = {}
            try:
                for index, job in enumerate(jobs):
                    running[pool.submit(job)] = index
                    if len(running) >= workers:
                        _collect(running, done)
                while running:
                    _collect(running, done)
            except BaseException:
                for future in running:
                    future.cancel()
                raise


def _collect(running: dict[Future, int], done: Callable[[int, T], None]) -> None:
    """Wait for at least one running job to finish and hand each finished one to ``done``."""
    finished, _ = wait(running, return_when=FIRST_COMPLETED)
    for future in finished:
        done(running.pop(future), future.result())


__all__ = ["MAX_THREADS", "intra_op_threads", "requested", "run"]
