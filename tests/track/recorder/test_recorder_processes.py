"""What a recording leaves running is stopped, and the fork servers' folders removed, nothing of other runs."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from detsim.track.recorder import processes


SERVER = ("import socket, sys, time; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[3]); s.listen(); "
          "open(sys.argv[3] + '.up', 'w').close(); time.sleep(60)")


def _fork_server(root):
    """A process as asv starts its fork server: its own group, a socket in a folder asv-forkserver-*."""
    folder = Path(tempfile.mkdtemp(prefix=processes.FORKSERVER_PREFIX))
    server = subprocess.Popen([sys.executable, "-c", SERVER, "run_server", str(root / "benchmarks"),
                               str(folder / "socket")], process_group=0)
    while not (folder / "socket.up").exists():
        assert server.poll() is None, f"the stand-in fork server ended ({server.returncode}) before binding its socket"
        time.sleep(0.01)
    return server, folder


@pytest.fixture(autouse=True)
def _own_temporary_folder(monkeypatch, tmp_path_factory):
    """Fork-server folders here, never the machine's: a clean-up run by a test must not reach a real recording's.
    Short, as a socket's path must be (108 bytes). pytest's own temporary folder is made first, outside it (made
    in it, it would go with it, and the file's later tests would have none)."""
    tmp_path_factory.getbasetemp()
    folder = tempfile.mkdtemp(prefix="cu", dir="/tmp")
    monkeypatch.setattr(tempfile, "tempdir", folder)
    yield
    shutil.rmtree(folder, ignore_errors=True)


def test_what_a_killed_run_left_is_stopped_and_removed_and_nothing_of_others(tmp_path, monkeypatch):
    # the moment an unbound socket is left to an asv closing it: how long is the next test's
    monkeypatch.setattr(processes, "CLOSING_S", 0.01)
    ours, our_folder = _fork_server(tmp_path / "ours")
    theirs, their_folder = _fork_server(tmp_path / "another-clone")
    dead = Path(tempfile.mkdtemp(prefix=processes.FORKSERVER_PREFIX))
    (dead / "socket").write_text("")  # a socket file no process holds
    try:
        # the test runner is the servers' parent, not asv: as if asv had been killed
        done = processes.clean_up(tmp_path / "ours")
        assert ours.wait(timeout=5) is not None and theirs.poll() is None
        assert not our_folder.exists() and not dead.exists() and their_folder.exists()
        assert any(str(ours.pid) in line for line in done)
    finally:
        theirs.kill()
        theirs.wait()
        shutil.rmtree(their_folder)


def test_a_run_that_ends_stops_every_process_below_it_and_removes_its_servers_folders_at_once(tmp_path,
                                                                                                 monkeypatch):
    folder = Path(tempfile.mkdtemp(prefix=processes.FORKSERVER_PREFIX))
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                               "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                               f"subprocess.Popen([sys.executable, '-c', {SERVER!r}, 'run_server', 'benchmarks', "
                               "sys.argv[1]], process_group=0); time.sleep(60)", str(folder / "socket")])
    deadline = time.monotonic() + 10
    while not (folder / "socket.up").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    children = processes.descendants(parent.pid)
    assert len(children) == 2
    waits, sleep = [], time.sleep
    monkeypatch.setattr(processes.time, "sleep", lambda s: (waits.append(s), sleep(min(s, 0.05))))
    done = processes.clean_up(tmp_path, below=parent.pid)
    assert not any(processes._alive(child) for child in children)
    # the run's own server, stopped by it: no asv of it is left to close the folder, which goes without a wait
    assert done == [f"removed {folder}"] and not folder.exists() and processes.CLOSING_S not in waits
    parent.kill()
    parent.wait()




def test_a_folder_whose_server_just_ended_is_left_to_the_asv_that_is_removing_it(monkeypatch):
    """asv unbinds its fork server's socket a moment before it removes the folder: a clean-up in between (another
    run's) must not take the folder from under it; a socket still unbound after that moment is a dead run's."""
    closing = Path(tempfile.mkdtemp(prefix=processes.FORKSERVER_PREFIX))
    (closing / "socket").write_text("")
    dead = Path(tempfile.mkdtemp(prefix=processes.FORKSERVER_PREFIX))
    (dead / "socket").write_text("")
    monkeypatch.setattr(processes, "CLOSING_S", 0.01)
    monkeypatch.setattr(processes.time, "sleep", lambda s: shutil.rmtree(closing))  # asv removes its own meanwhile
    done = processes.clean_up(Path("/nonexistent-checkout"))
    assert done == [f"removed {dead}"] and not dead.exists()
