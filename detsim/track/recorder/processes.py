"""What a recording leaves running: asv's fork servers (a process group each, so a kill of the run's group does
not reach them), installs in its environments, and the fork servers' socket folders; stopped and removed when
the run ends and, for a run killed outright, by the next. Standard library only (Linux's /proc)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

FORKSERVER_PREFIX = "asv-forkserver-"  # asv 0.6.6's folder for a fork server's socket (runner.ForkServer)
STALE_S = 60.0  # a fork-server folder with no socket yet is a dead run's once this old (a live one binds it at once)
CLOSING_S = 2.0  # an unbound socket still there this much later is a dead run's, not one asv is closing


def _processes() -> dict[int, tuple[int, list[str]]]:
    """pid -> (parent pid, command line) of every process this one can see."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = (entry / "stat").read_text()
            parent = int(stat[stat.rindex(")") + 2:].split()[1])
            found[int(entry.name)] = (parent, (entry / "cmdline").read_bytes().decode(errors="replace").split("\0"))
    return found


def descendants(pid: int, table: dict[int, tuple[int, list[str]]] | None = None) -> list[int]:
    """Every process below ``pid``, parents before children (of ``table``, :func:`_processes`, where given)."""
    table = _processes() if table is None else table
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, (parent, _) in table.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:][:1] != "Z"


def _ancestors() -> set[int]:
    """This process and those above it: never stopped by it."""
    table, found = _processes(), {os.getpid()}
    pid = os.getpid()
    while pid in table and table[pid][0] not in found and table[pid][0] > 0:
        pid = table[pid][0]
        found.add(pid)
    return found


def _stop(pids: list[int]) -> None:
    """SIGTERM, then after a moment SIGKILL, each process and the group it leads (asv starts each fork server
    as a group of its own: the forks that run the benchmarks are in it)."""
    pids = [pid for pid in pids if pid not in _ancestors()]
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(OSError):
                os.killpg(pid, signum) if os.getpgid(pid) == pid else os.kill(pid, signum)
        if signum == signal.SIGTERM and pids:
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
                time.sleep(0.05)


def leftovers(root: Path) -> list[tuple[int, Path | None]]:
    """(pid, its fork server's socket folder or None) of every process of this checkout's recordings whose
    asv is gone: asv's fork servers of ``root/benchmarks`` and whatever runs an interpreter of its
    environments (``root/.asv``: builds, installs), when their parent is no asv (it was killed outright).
    asv starts each in a process group of its own, so killing the run's group does not reach them."""
    table = _processes()
    benchmarks, envs = str(root / "benchmarks"), str(root / ".asv") + os.sep

    def ours(argv: list[str]) -> bool:
        server = "run_server" in argv and argv[argv.index("run_server") + 1:][:1] == [benchmarks]
        return server or argv[0].startswith(envs)

    def asv(argv: list[str]) -> bool:
        return any(arg.endswith(os.sep + "asv") for arg in argv[:2])

    return [(pid, _server_folder(argv)) for pid, (parent, argv) in table.items()
            if ours(argv) and not (parent in table and (asv(table[parent][1]) or ours(table[parent][1])))]


def _server_folder(argv: list[str]) -> Path | None:
    """The socket's folder of an asv fork server's command line (``... run_server BENCHMARKS SOCKET``), else None."""
    socket = argv[argv.index("run_server") + 2:][:1] if "run_server" in argv else []
    return Path(socket[0]).parent if socket else None


def _bound_sockets() -> set[str]:
    """The paths of the Unix sockets some process has bound (Linux's /proc/net/unix)."""
    try:
        lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    except OSError:
        return set()
    return {line.split()[7] for line in lines if len(line.split()) > 7}


def clean_up(root: Path, below: int | None = None) -> list[str]:
    """Stop the processes below ``below`` (the tracking run's, when it ends), then what recordings of the
    checkout ``root`` left running (:func:`leftovers`: a run killed outright cannot stop them), then remove
    the fork-server folders whose socket no process holds any more (of any run: a dead one's). Returns what
    it did, one line each."""
    stopped = set()  # the folders of the run's own fork servers: its asv, stopped with them, closes none of them
    if below is not None:
        table = _processes()
        ours = descendants(below, table)
        stopped = {folder for pid in ours if (folder := _server_folder(table[pid][1])) is not None}
        _stop(ours)
    left = leftovers(root)
    _stop([pid for pid, _ in left])
    done = [f"stopped process {pid}, left by a run that was killed ({'asv fork server' if folder else 'asv'})"
             for pid, folder in left]
    killed = {folder for _, folder in left} | stopped
    unheld = _unheld_folders()
    if unheld - killed:  # a live asv unbinds its socket just before it removes its folder: look again after that
        time.sleep(CLOSING_S)
        unheld &= _unheld_folders()
    for folder in sorted(killed | unheld, key=str):
        with contextlib.suppress(OSError):
            if folder is not None and folder.exists():
                shutil.rmtree(folder)
                done.append(f"removed {folder}")
    return done


def _unheld_folders() -> set[Path]:
    """The fork-server folders whose socket no process holds: a socket file unbound, or none in a folder past
    :data:`STALE_S`."""
    bound, now, found = _bound_sockets(), time.time(), set()
    for folder in Path(tempfile.gettempdir()).glob(FORKSERVER_PREFIX + "*"):
        with contextlib.suppress(OSError):
            socket = folder / "socket"
            if str(socket) not in bound and (socket.exists() or now - folder.stat().st_mtime > STALE_S):
                found.add(folder)
    return found


