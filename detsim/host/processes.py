"""Chunks of pixels across forked worker processes, as nanoBragg's OpenMP loop shares its rows (spec §5.1).

Worker threads (:mod:`detsim.host.threads`) share one interpreter: every torch op of a chunk is a GIL
hand-over, and an eager render makes tens of thousands of them a second. Worker *processes* share
nothing but the image. :func:`run` forks ``workers - 1`` children once the render is prepared; the
calling process is the first worker. Each worker takes the next chunk from a shared counter, renders it
with one intra-op thread and writes its pixels into the image, which lives in memory shared by all of
them (:func:`shared_zeros`). The chunks are the memory plan's, which does not depend on the number of
workers, and a chunk's pixels are the same bits in any process: an image is the same bits whatever the
count.

Safety of the fork:

* torch's CPU ops use GNU OpenMP, whose thread pool does not survive a fork: a child that enters a
  parallel region with more than one thread waits for threads that do not exist. A child sets one
  intra-op thread before it runs any op; torch then runs every op inline (no parallel region), whatever
  the parent did before the fork. MKL's matrix products follow the same setting.
* Only CPU renders without autograd fork (:func:`available`): never a process that has initialised
  CUDA. ``multiprocessing``'s fork flushes the standard streams first, so a child repeats no output
  the parent had buffered, and a child ends with ``os._exit``: it runs none of the parent's clean-up.
* A child ignores Ctrl-C (the terminal sends it to every process of the group): the parent decides. On
  any exception in the parent (an error, Ctrl-C, SIGTERM raised as an interrupt by the caller) the
  children are stopped and reaped before the exception goes on; Ctrl-C and SIGTERM are held back while
  a child is forked, so that none arrives before the child is known or inside the fork itself, where
  Python would swallow the exception. A child that fails stops the others and its error is raised in
  the parent. A child whose parent has died stops at its next chunk.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from typing import Callable, Sequence, TypeVar

import torch
from torch import Tensor

from detsim.host.threads import intra_op_threads

T = TypeVar("T")

JOIN_TIMEOUT_S = 10.0  # for a stopped child to exit before it is killed
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class WorkerError(RuntimeError):
    """A worker process failed; the message holds the child's own error."""


def available(device: torch.device) -> bool:
    """Whether a render on ``device`` may fork workers: a CPU render on Linux, in a process that has not
    initialised CUDA and is not itself a daemonic ``multiprocessing`` worker (which may have no children)."""
    import multiprocessing

    return (device.type == "cpu" and sys.platform.startswith("linux") and not torch.cuda.is_initialized()
            and not multiprocessing.current_process().daemon)


def shared_zeros(numel: int, dtype: torch.dtype) -> Tensor:
    """(numel,) zeros in anonymous memory shared with the processes this one forks from now on."""
    import mmap

    nbytes = max(1, numel * dtype.itemsize)
    return torch.frombuffer(mmap.mmap(-1, nbytes), dtype=dtype, count=numel)  # MAP_SHARED, zero-filled


def run(jobs: Sequence[Callable[[], T]], workers: int, store: Callable[[T], None],
        finished: Callable[[int], None] | None = None) -> None:
    """Run every job, ``workers`` processes at once, each with one intra-op thread.

    ``store(result)`` runs in the process that ran the job: it must write into memory the processes
    share (:func:`shared_zeros`). ``finished(n)`` runs in the calling process only, with the number of
    jobs done so far, after each job it runs itself and once at the end with ``len(jobs)``.

    Raises:
        WorkerError: a child failed (its error is in the message); the other workers stopped.
    """
    import multiprocessing

    context = multiprocessing.get_context("fork")
    next_job = context.Value("q", 0)  # index of the next job to take
    done = context.Value("q", 0, lock=False)  # jobs done, updated under next_job's lock
    stop = context.Value("b", 0, lock=False)  # set by a failing worker: take no further job
    parent = os.getpid()

    def take() -> int | None:
        with next_job.get_lock():
            index = next_job.value
            if stop.value or index >= len(jobs):
                return None
            next_job.value = index + 1
            return index

    def count_done() -> int:
        with next_job.get_lock():
            done.value += 1
            return done.value

    def child(errors) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # blocked by the parent around the fork
        try:
            torch.set_num_threads(1)  # before any op: no OpenMP parallel region in a forked process
            while os.getppid() == parent and (index := take()) is not None:
                store(jobs[index]())
                count_done()
        except BaseException:
            stop.value = 1
            try:
                errors.send(traceback.format_exc().strip().splitlines()[-1])
            finally:
                os._exit(1)
        os._exit(0)

    with intra_op_threads(1):
        children = []
        try:
            for _ in range(min(workers, len(jobs)) - 1):
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=child, args=(send,), name="detsim-chunk", daemon=True)
                # Ctrl-C or SIGTERM waits until the child is listed: raised inside the fork (in an at-fork
                # handler), Python would drop the exception, and a child not yet listed would not be stopped
                previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
                try:
                    process.start()
                    children.append((process, receive))
                finally:
                    signal.pthread_sigmask(signal.SIG_SETMASK, previous)
                send.close()
            while (index := take()) is not None:
                store(jobs[index]())
                n_done = count_done()
                if finished is not None:
                    finished(n_done)
            for process, _ in children:
                process.join()
        except BaseException:
            stop.value = 1
            _stop(process for process, _ in children)
            raise
        failures = [receive.recv() if receive.poll() else f"exit status {process.exitcode}"
                    for process, receive in children if process.exitcode != 0]
        for _, receive in children:
            receive.close()
        if failures:
            raise WorkerError(f"a render worker process failed: {failures[0]}")
    if finished is not None:
        finished(len(jobs))


def _stop(processes) -> None:
    """Terminate and reap every child; one that ignores SIGTERM is killed."""
    processes = list(processes)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(JOIN_TIMEOUT_S)
        if process.is_alive():
            process.kill()
            process.join()


__all__ = ["WorkerError", "available", "run", "shared_zeros"]
