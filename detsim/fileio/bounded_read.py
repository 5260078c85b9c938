"""Reading input files within bounds: regular files only, text line by line under a cap, prefixes where that
is all a format needs.

Every file a flag names for reading (``-hkl``, ``-mat``, ``-sourcefile``, ``-img``, ``-mask``, ``-stol``) is
opened here, so that a directory, a FIFO or a device (``/dev/zero``, ``/dev/null``) is refused saying what
it is, instead of blocking, reading forever or being taken for a missing file, and so that no read grows
with the file: a line longer than :data:`MAX_LINE_BYTES` is refused, and readers bound what they keep by the
memory available (:mod:`detsim.host.memory`). Errors are the caller's one-line exception class, naming the path.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO, Iterator

__all__ = ["DIRECTORY", "MAX_LINE_BYTES", "MISSING", "REGULAR_FILE", "describe", "open_regular", "read_lines",
           "read_prefix", "what_is"]

# The longest line nanoBragg's text reader takes whole (fgets into 10240 bytes, less the newline and the NUL;
# it splits a longer one into two lines). Far more than a line of numbers needs.
MAX_LINE_BYTES = 10238

REGULAR_FILE, DIRECTORY, MISSING = "a regular file", "a directory", "missing"
_KINDS = ((stat.S_ISREG, REGULAR_FILE), (stat.S_ISDIR, DIRECTORY), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def what_is(path: str | os.PathLike) -> str:
    """What is at ``path``, symlinks followed: :data:`REGULAR_FILE`, :data:`DIRECTORY`, "a FIFO (named
    pipe)", "a character device", "a block device", "a socket", "a symlink to nothing", :data:`MISSING`, or
    "unreachable (why)" when it cannot be looked at (no permission to search a parent, a symlink loop)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "a symlink to nothing" if os.path.islink(path) else MISSING
    except OSError as exc:
        return f"unreachable ({exc.strerror or exc})"
    return _kind(mode)


def describe(path: str | os.PathLike) -> str | None:
    """What ``path`` is when it is not a readable regular file ("no such file", "a directory", "a character
    device", "an empty file", ...); None for a non-empty regular file. Symlinks are followed."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not stat.S_ISREG(info.st_mode):
        return _kind(info.st_mode)
    return "an empty file" if info.st_size == 0 else None


def open_regular(path: str | os.PathLike, what: str, error: type[Exception]) -> BinaryIO:
    """Open ``path`` for reading in binary, refusing anything but a regular file.

    The file is opened without blocking (a FIFO would wait for a writer) and checked on the open descriptor,
    so what is read is what was checked. Raises ``error`` with one line naming the path: "cannot read the
    {what} (reason)", or "is a character device; the {what} must be a regular file".
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise error(f"{os.fspath(path)}: cannot read the {what} ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{os.fspath(path)}: is {_kind(info.st_mode)}; the {what} must be a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_prefix(path: str | os.PathLike, what: str, limit: int, error: type[Exception]) -> tuple[bytes, bool]:
    """The first ``limit`` bytes of a regular file, and whether the file goes on past them."""
    with open_regular(path, what, error) as handle:
        data = handle.read(limit + 1)
    return data[:limit], len(data) > limit


def read_lines(handle: BinaryIO, path: str | os.PathLike, what: str, error: type[Exception],
               max_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes, bool]]:
    """(line number from 1, the line without its newline, whether it had one) for each line of ``handle``.

    A line longer than ``max_bytes`` (newline excluded) raises ``error`` naming the path and the line: it is
    never read whole, so a file without newlines costs ``max_bytes`` of memory, not its size.
    """
    number = 0
    while True:
        line = handle.readline(max_bytes + 1)
        if not line:
            return
        number += 1
        ended = line.endswith(b"\n")
        if ended:
            line = line[:-1]
        elif len(line) > max_bytes:
            raise error(f"{os.fspath(path)} line {number}: longer than {max_bytes} bytes, too long for a line of "
                        f"the {what}")
        yield number, line, ended
