"""Chunks across forked processes: every job once, side by side, one intra-op thread, and no child left behind."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from detsim.host import processes

pytestmark = pytest.mark.skipif(not processes.available(torch.device("cpu")), reason="no fork-safe workers here")

WAIT_S = 30.0  # for something another process does; a test that passes never waits this long


def _wait_until(condition) -> bool:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)  # a condition may scan /proc (~2 ms a scan): faster, it would take a core from the child
    return True


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped by whoever adopted it, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_every_job_runs_once_and_its_result_reaches_the_shared_memory(workers):
    out = processes.shared_zeros(40, torch.float64)
    runs = processes.shared_zeros(40, torch.int64)

    def job(i):
        runs[i] += 1
        return i, float(i * i), torch.get_num_threads()

    def store(result):
        i, value, intra = result
        out[i] = value if intra == 1 else -1.0  # -1: an op could have split its work across threads

    seen = []
    processes.run([lambda i=i: job(i) for i in range(40)], workers, store, seen.append)
    assert out.tolist() == [float(i * i) for i in range(40)]
    assert runs.tolist() == [1] * 40
    assert seen[-1] == 40 and seen == sorted(seen)
    assert multiprocessing.active_children() == []


def test_jobs_run_side_by_side_in_different_processes():
    pids = processes.shared_zeros(8, torch.int64)
    met = processes.shared_zeros(8, torch.int64)

    def job(i):
        pids[i] = os.getpid()
        if i == 0:  # waits for a job that another process runs: only if both run at once
            return i, _wait_until(lambda: any(p not in (0, os.getpid()) for p in pids.tolist()))
        return i, True

    processes.run([lambda i=i: job(i) for i in range(8)], 2, lambda r: met.__setitem__(r[0], int(r[1])))
    assert met.tolist() == [1] * 8
    assert len(set(pids.tolist())) == 2 and os.getpid() in pids.tolist()


def test_a_failing_child_stops_the_run_and_its_error_is_raised_in_the_caller():
    parent = os.getpid()
    runs = processes.shared_zeros(1, torch.int64)

    def job():
        runs[0] += 1
        if os.getpid() != parent:
            raise ValueError("chunk failed in a child")
        time.sleep(0.02)

    with pytest.raises(processes.WorkerError, match="ValueError: chunk failed in a child"):
        processes.run([job] * 500, 2, lambda _: None)
    assert int(runs[0]) < 500  # the caller stopped taking jobs
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("error", [RuntimeError("the caller's chunk failed"), KeyboardInterrupt()])
def test_an_exception_in_the_caller_stops_and_reaps_every_child(error):
    parent = os.getpid()
    children = processes.shared_zeros(4, torch.int64)

    def job(i):
        if os.getpid() != parent:
            children[i % 4] = os.getpid()
            time.sleep(0.05)
            return
        assert _wait_until(lambda: int((children != 0).sum()) > 0)  # a child is working
        raise error

    with pytest.raises(type(error)):
        processes.run([lambda i=i: job(i) for i in range(10_000)], 3, lambda _: None)
    pids = {int(p) for p in children if p}
    assert pids and not any(_alive(pid) for pid in pids)
    assert multiprocessing.active_children() == []


def test_workers_fork_safely_after_the_caller_ran_ops_on_several_threads():
    # GNU OpenMP's pool does not survive a fork: a child entering a parallel region with 2 threads hangs.
    # The caller runs parallel regions first, then matrix products and cosines run in the workers.
    script = textwrap.dedent("""
        import torch
        from detsim.host import processes
        torch.set_num_threads(2)
        x = torch.rand(2_000_000, dtype=torch.float64)
        x.cos().sum(), torch.mm(torch.rand(400, 400, dtype=torch.float64), torch.rand(400, 400, dtype=torch.float64))
        out = processes.shared_zeros(6, torch.float64)
        a = torch.rand(300, 300, dtype=torch.float64)
        def job(i):
            return i, float(torch.mm(a, a).cos().sum())
        processes.run([lambda i=i: job(i) for i in range(6)], 2, lambda r: out.__setitem__(r[0], r[1]))
        assert len(set(out.tolist())) == 1 and float(out[0]) != 0
        assert torch.get_num_threads() == 2
        print("ok")
    """)
    caller = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        out, err = caller.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(caller.pid, signal.SIGKILL)  # the hung children with it
        caller.communicate()
        raise
    assert caller.returncode == 0 and out.strip() == "ok", err[-2000:]


def test_children_stop_when_the_caller_is_killed():
    script = textwrap.dedent("""
        import os, sys, time, torch
        from detsim.host import processes
        parent, said = os.getpid(), []
        def job():
            if os.getpid() != parent and not said:  # one whole line, one write: children share the pipe
                said.append(os.write(1, f"{os.getpid()}\\n".encode()))
            time.sleep(0.05)
        processes.run([job] * 100_000, 3, lambda _: None)
    """)
    caller = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pids = {int(caller.stdout.readline()), int(caller.stdout.readline())}
    finally:
        caller.kill()
        caller.wait()
    assert _wait_until(lambda: not any(_alive(pid) for pid in pids))


def test_only_cpu_renders_outside_daemonic_workers_fork(monkeypatch):
    assert processes.available(torch.device("cpu"))
    assert not processes.available(torch.device("meta"))

    class Daemon:
        daemon = True

    monkeypatch.setattr(multiprocessing, "current_process", lambda: Daemon())
    assert not processes.available(torch.device("cpu"))


def _children_of(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.add(int(entry))
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                pass
    return found


# Ctrl-C to the whole group runs in the slow job; its twins here: the same command's cleanup after SIGTERM, and
# test_an_exception_in_the_caller_stops_and_reaps_every_child[error1] (a KeyboardInterrupt in the caller)
@pytest.mark.parametrize("signum,status", [(signal.SIGTERM, 143), pytest.param(signal.SIGINT, 130, marks=pytest.mark.slow)],
                         ids=["SIGTERM", "Ctrl-C"])
def test_the_detsim_command_stopped_mid_render_leaves_no_worker_and_no_file(tmp_path, signum, status):
    argv = [sys.executable, "-m", "detsim.commandline.command", "-cell", "100", "100", "100", "90", "90", "90", "-default_F", "100",
            "-N", "5", "-lambda", "1", "-distance", "100", "-detpixels", "1024", "-pixel", "0.1", "-oversample", "4",
            "-mosaic", "0.5", "-mosaic_dom", "20", "-phisteps", "5", "-osc", "0.5", "-threads", "3",
            "-nonoise", "-nopgm", "-noprogress", "-floatfile", str(tmp_path / "float.bin"),
            "-intfile", str(tmp_path / "int.img")]
    command = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        assert _wait_until(lambda: len(_children_of(command.pid)) == 2 or command.poll() is not None)
        workers = _children_of(command.pid)
        assert len(workers) == 2, "the render ended before its workers were seen"
        # SIGTERM to the command, as a job scheduler sends it; Ctrl-C to the whole group, as a terminal does
        os.kill(command.pid, signum) if signum == signal.SIGTERM else os.killpg(command.pid, signum)
        _, err = command.communicate(timeout=WAIT_S)
    finally:
        if command.poll() is None:
            os.killpg(command.pid, signal.SIGKILL)
            command.wait()
    assert command.returncode == status, err
    assert not any(_alive(pid) for pid in workers)
    assert sorted(os.listdir(tmp_path)) == []
