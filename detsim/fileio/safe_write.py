"""Writing output files safely: paths checked before the work, files replaced all or none, nothing clobbered.

Conventions (what nanoBragg users expect of ``-floatfile`` and friends, made safe):
    * Output paths are checked before anything is computed (:func:`check_output_path`, :func:`check_outputs`):
      not empty, not a directory (nor a path ending in ``/``), its directory exists and is writable, an existing
      file is writable, no two outputs are one file and no output is an input file (the same file by device and
      inode: hard links and symlinks count).
    * A regular file is written to a temporary file beside it, which replaces it only once complete; the outputs
      of one run are staged together (:class:`StagedOutputs`) and replace their files only once every one of them
      is written. On any error every temporary file is removed and every old file is untouched.
    * A symlink is followed and a device or FIFO written through, as C's ``fopen`` does; a read-only file is
      refused, never overwritten.
    * A failed write raises :class:`OSError` naming the output's path (not the temporary file's).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Sequence

__all__ = ["OutputError", "PathLike", "StagedOutputs", "Writer", "atomic_write", "check_output_path",
           "check_outputs", "file_identity"]

PathLike = str | os.PathLike
Writer = Callable[[BinaryIO], None]


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


def _naming(exc: OSError, path: PathLike) -> OSError:
    """``exc`` naming ``path``: the output the user gave, not the temporary file beside it."""
    return OSError(exc.errno, exc.strerror or str(exc), os.fspath(path))  # the errno's subclass, if any


@dataclass
class _Staged:
    path: PathLike  # as the user gave it, for messages
    target: Path  # the file it lands in (symlinks followed)
    temp: Path | None  # the written temporary file; None for a device or FIFO, written through on commit
    write: Writer | None  # what a device or FIFO gets on commit


class StagedOutputs:
    """Several outputs written all or none: temporaries first, then every file replaced once all are written.

    Use as a context manager: :meth:`add` each output (its temporary file is written at once, beside it);
    leaving the block without an error commits (devices and FIFOs are written through, then every temporary
    file replaces its file), and an error removes every temporary file and leaves every existing file as it
    was. Permissions of a replaced file are kept; a new file gets those of a plain ``open`` (0666 less the
    umask). A failed write raises :class:`OSError` naming the output's path.
    """

    def __init__(self) -> None:
        self._staged: list[_Staged] = []

    def __enter__(self) -> StagedOutputs:
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()

    def add(self, path: PathLike, write: Writer) -> None:
        """Stage the output ``path`` with what ``write`` puts into a binary file object."""
        check_output_path(path, "output")
        target = _resolved(path)
        try:
            info = os.stat(target)
        except FileNotFoundError:
            info = None
        if info is not None and not stat.S_ISREG(info.st_mode):
            self._staged.append(_Staged(path, target, None, write))
            return
        temp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as exc:
            raise _naming(exc, path) from exc
        self._staged.append(_Staged(path, target, temp, None))
        try:
            if info is not None:
                os.chmod(fd, stat.S_IMODE(info.st_mode))
            with os.fdopen(fd, "wb") as handle:
                write(handle)
        except OSError as exc:
            raise _naming(exc, path) from exc

    def commit(self) -> None:
        """Write the devices and FIFOs through, then replace every file by its temporary file."""
        try:
            for staged in self._staged:
                if staged.write is not None:
                    try:
                        with open(staged.target, "wb") as handle:  # a device or FIFO: through it, as nanoBragg
                            staged.write(handle)
                    except OSError as exc:
                        raise _naming(exc, staged.path) from exc
            for staged in self._staged:
                if staged.temp is not None:
                    try:
                        os.replace(staged.temp, staged.target)
                    except OSError as exc:
                        raise _naming(exc, staged.path) from exc
                    staged.temp = None
        except BaseException:
            self.discard()
            raise
        self._staged = []

    def discard(self) -> None:
        """Remove every temporary file not yet renamed; the outputs' files stay as they were."""
        for staged in self._staged:
            if staged.temp is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(staged.temp)
        self._staged = []


def atomic_write(path: PathLike, write: Writer) -> None:
    """Create or replace the file at ``path`` atomically with what ``write`` puts into a binary file object.

    One output staged on its own (:class:`StagedOutputs`): a symlink is followed and its target written, as
    nanoBragg's ``fopen`` does (the link stays); a device or FIFO is written through, not replaced; a regular
    file is written to a temporary file next to it (so the final rename stays on one file system) that then
    replaces it, keeping its permission bits. A read-only file is refused (:class:`OutputError`) and left as
    it is.
    """
    with StagedOutputs() as staged:
        staged.add(path, write)
