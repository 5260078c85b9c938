"""Chunks across threads: the thread count of a render, and the runner that shares jobs between threads."""

from __future__ import annotations

import threading

import pytest
import torch

from detsim.host import threads


def test_the_default_count_is_torch_intra_op_count_and_a_given_one_is_kept():
    assert threads.requested(None) == torch.get_num_threads()
    assert threads.requested(3) == 3


@pytest.mark.parametrize("bad", [0, -1, threads.MAX_THREADS + 1, 2.0, True, "2"])
def test_a_count_outside_one_to_the_maximum_is_refused(bad):
    with pytest.raises(ValueError, match="threads must be an integer from 1"):
        threads.requested(bad)


def test_every_result_reaches_done_with_its_index_in_the_calling_thread():
    got = {}
    caller = threading.get_ident()

    def done(index, result):
        assert threading.get_ident() == caller
        got[index] = result

    threads.run([lambda i=i: i * i for i in range(9)], 2, done)
    assert got == {i: i * i for i in range(9)}


def test_jobs_run_side_by_side_but_never_more_than_the_workers_at_once():
    lock, alive, most = threading.Lock(), [0], [0]
    first_waits = threading.Event()

    def job(i):
        with lock:
            alive[0] += 1
            most[0] = max(most[0], alive[0])
        if i == 0:
            met = first_waits.wait(timeout=30)  # released by job 1: only if both run at once
        else:
            first_waits.set()
            met = True
        with lock:
            alive[0] -= 1
        return met, threading.current_thread().name, torch.get_num_threads()

    results = []
    threads.run([lambda i=i: job(i) for i in range(8)], 2, lambda _, r: results.append(r))
    assert all(met for met, _, _ in results)
    assert most[0] == 2
    assert all(name.startswith("detsim-chunk") for _, name, _ in results)
    assert all(intra == 1 for _, _, intra in results)  # no op splits its work: the bits do not depend on threads


def test_one_worker_runs_in_order_in_the_calling_thread_with_one_intra_op_thread():
    before = torch.get_num_threads()
    seen = []
    threads.run([lambda i=i: (i, threading.current_thread(), torch.get_num_threads()) for i in range(4)], 1,
                 lambda _, r: seen.append(r))
    assert [i for i, _, _ in seen] == [0, 1, 2, 3]
    assert all(t is threading.current_thread() and n == 1 for _, t, n in seen)
    assert torch.get_num_threads() == before


def test_a_failing_job_stops_the_run_and_raises_in_the_caller():
    started = []

    def job(i):
        started.append(i)
        if i == 1:
            raise RuntimeError("chunk 1 failed")
        return i

    before = torch.get_num_threads()
    with pytest.raises(RuntimeError, match="chunk 1 failed"):
        threads.run([lambda i=i: job(i) for i in range(50)], 2, lambda _, r: None)
    assert len(started) < 50  # no further jobs were submitted once the failure was seen
    assert torch.get_num_threads() == before


def test_intra_op_threads_are_set_for_the_block_and_restored():
    before = torch.get_num_threads()
    with threads.intra_op_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
