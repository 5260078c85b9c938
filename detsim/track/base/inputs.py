"""Checking a command's inputs at the edge, before any work: counts and paths.

:func:`positive_int` and :func:`count` are the argparse ``type=`` of every option that takes a number of
things (repeats, threads, pixels, re-measurements...): a bad value is refused while the options are
parsed, exit 2, before anything runs. :func:`what_is` says in a few words what is at a path (a regular
file, a directory, a FIFO, a symlink to nothing, missing...), for the one line that refuses it.
"""

from __future__ import annotations

import argparse
import os
import stat

REGULAR_FILE = "a regular file"
DIRECTORY = "a directory"
MISSING = "missing"
_KINDS = ((stat.S_ISREG, REGULAR_FILE), (stat.S_ISDIR, DIRECTORY), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def positive_int(text: str) -> int:
    """An argparse type: a whole number, 1 or more."""
    value = _whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {text}")
    return value


def count(text: str) -> int:
    """An argparse type: a whole number, 0 or more."""
    value = _whole_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def what_is(path: os.PathLike | str) -> str:
    """What is at ``path``, symlinks followed: :data:`REGULAR_FILE`, :data:`DIRECTORY`, ``a FIFO``, ``a
    character device``, ``a block device``, ``a socket``, ``a symlink to nothing``, :data:`MISSING`, or
    ``unreachable (why)`` when it cannot be looked at (no permission to search a parent, a symlink loop)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "a symlink to nothing" if os.path.islink(path) else MISSING
    except OSError as exc:
        return f"unreachable ({exc.strerror or exc})"
    return next((kind for test, kind in _KINDS if test(mode)), "not a file")
