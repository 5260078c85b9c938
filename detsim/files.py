"""Writing output files safely: paths checked before the work, files replaced atomically, nothing clobbered.

Conventions (what nanoBragg users expect of ``-floatfile`` and friends, made safe):
    * Output paths are checked before anything is computed (:func:`check_output_path`, :func:`check_outputs`):
      not empty, not a directory (nor a path ending in ``/``), its directory exists and is writable, an existing
      file is writable, no two outputs are one file and no output is an input file (the same file by device and
      inode: hard links and symlinks count).
    * A regular file is written to a temporary file beside it, which replaces it only once complete
      (:func:`atomic_write`); on any error the temporary file is removed and the old file is untouched.
    * A symlink is followed and a device or FIFO written through, as C's ``fopen`` does; a read-only file is
      refused, never overwritten.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path
from typing import BinaryIO, Callable, Sequence

__all__ = ["OutputError", "PathLike", "atomic_write", "check_output_path", "check_outputs", "file_identity"]

PathLike = str | os.PathLike


class OutputError(ValueError):
    """An output path that cannot be written, or must not be (a read-only file); the message is one line."""


def _resolved(path: PathLike) -> Path:
    """The file a write to ``path`` lands in: symlinks are followed, as C's ``fopen`` follows them."""
    return Path(os.path.realpath(path))


def check_output_path(path: PathLike, flag: str) -> None:
    """Raise :class:`OutputError` (one line naming ``flag`` and the path) unless ``path`` can be written.

    Checked: the path is not empty and not a directory (a path ending in ``/``, ``/.`` or ``/..`` names one,
    even when it does not exist: C's ``fopen`` refuses it), an existing file is writable (a file without any
    write permission bit is refused even for root, so that it is never overwritten), and a new file's
    directory exists and is writable. Devices and FIFOs are written through, so only their permission counts.
    """
    text = os.fspath(path)
    if text == "":
        raise OutputError(f"{flag}: the output file name is empty")
    if os.path.basename(text) in ("", ".", ".."):
        raise OutputError(f"{flag} {text}: names a directory (a file name cannot end in '/'); give a file name")
    target = _resolved(text)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except NotADirectoryError:
        raise OutputError(f"{flag} {text}: {target.parent} is not a directory") from None
    except OSError as exc:
        raise OutputError(f"{flag} {text}: cannot be written ({exc.strerror})") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise OutputError(f"{flag} {text}: is a directory")
        if (stat.S_ISREG(info.st_mode) and not info.st_mode & 0o222) or not os.access(target, os.W_OK):
            raise OutputError(f"{flag} {text}: the file is read-only; not overwritten")
        return
    parent = target.parent
    if not parent.exists():
        raise OutputError(f"{flag} {text}: directory {parent} does not exist")
    if not parent.is_dir():
        raise OutputError(f"{flag} {text}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {text}: directory {parent} is not writable")


def file_identity(path: PathLike) -> tuple[int, int] | None:
    """(device, inode) of the file ``path`` names, symlinks followed; None when there is none (or no access)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_dev, info.st_ino


def _is_char_device(path: PathLike) -> bool:
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def check_outputs(outputs: Sequence[tuple[str, PathLike]], inputs: Sequence[tuple[str, PathLike]] = ()) -> None:
    """Check a run's outputs before any work: each can be written, no two are one file, none is an input.

    ``outputs`` and ``inputs`` are (flag, path) pairs. Two paths are one file when they name the same device
    and inode (a hard link or a symlink to it counts) or, for files not there yet, the same resolved path.
    Outputs may share a character device (``/dev/null``): writing through it twice loses nothing. Raises
    :class:`OutputError`, one line naming both flags and paths.
    """
    read = [(flag, path, file_identity(path)) for flag, path in inputs]
    seen: dict[object, tuple[str, PathLike]] = {}
    for flag, path in outputs:
        check_output_path(path, flag)
        identity = file_identity(path)
        for in_flag, in_path, in_identity in read:
            if identity is not None and identity == in_identity:
                raise OutputError(f"{flag} {os.fspath(path)} is the {in_flag} input file {os.fspath(in_path)}; "
                                  "an output may not overwrite an input")
        key = identity if identity is not None else os.path.realpath(path)
        if key in seen and not _is_char_device(path):
            other_flag, other_path = seen[key]
            raise OutputError(f"{flag} {os.fspath(path)} and {other_flag} {os.fspath(other_path)} name the same "
                              "file; give each output its own file")
        seen[key] = (flag, path)


def atomic_write(path: PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Create or replace the file at ``path`` atomically with what ``write`` puts into a binary file object.

    A symlink is followed and its target written, as nanoBragg's ``fopen`` does; the link stays. A device
    or FIFO is written through, not replaced. A regular file is written to a temporary file next to it (so
    the final rename stays on one file system) that then replaces it, keeping its permission bits; a new
    file gets the default permissions of a plain ``open`` (0666 less the umask). A read-only file is
    refused (:class:`OutputError`) and left as it is.
    """
    check_output_path(path, "output")
    target = _resolved(path)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        with open(target, "wb") as handle:  # a device or FIFO: through it, as nanoBragg writes
            write(handle)
        return
    temp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        if info is not None:
            os.chmod(fd, stat.S_IMODE(info.st_mode))
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
