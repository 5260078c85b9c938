"""A published folder replaced whole: built aside (:func:`building`), then swapped in (:func:`swap_in`), so
that a reader sees the old page or the new one, never half of either. Linux exchanges the two folders in one
``renameat2(RENAME_EXCHANGE)``; elsewhere the old folder is renamed away and the new one into its place (two
renames, each atomic, with no half page at any time, only an instant with none).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

RENAME_EXCHANGE = 2  # linux/fs.h
AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap the paths ``a`` and ``b`` in one step; False where this system cannot."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):  # no such call, or not on this file system
        return False
    raise OSError(code, os.strerror(code), str(b))


@contextlib.contextmanager
def building(final: Path) -> Iterator[Path]:
    """A new empty folder beside ``final`` to build its replacement in; removed on leaving unless
    :func:`swap_in` took it."""
    final.parent.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix=f".{final.name}.new-", dir=final.parent))
    try:
        yield new
    finally:
        shutil.rmtree(new, ignore_errors=True)


def swap_in(new: Path, final: Path) -> None:
    """``new`` (a folder) becomes ``final``; the folder that was there is removed after the swap."""
    mask = os.umask(0)
    os.umask(mask)
    new.chmod(0o777 & ~mask)  # as a folder made by mkdir, not mkdtemp's private one
    if not final.exists():
        os.rename(new, final)
        return
    old = new  # after an exchange, the old page sits where the new one was built
    if not _exchange(new, final):
        old = new.with_name(new.name.replace(".new-", ".old-"))
        os.rename(final, old)
        os.rename(new, final)
    shutil.rmtree(old, ignore_errors=True)
