"""git, run in a folder: the one way the suite asks git anything, read-only.

``--no-optional-locks`` (with ``GIT_OPTIONAL_LOCKS=0``) keeps it so: ``git status`` would otherwise refresh the
index and write ``.git/index.lock`` in whatever checkout it was run in.
"""

from __future__ import annotations

from pathlib import Path

from .fresh import ChildError, pinned_env, run

TIMEOUT_S = 60


class GitError(RuntimeError):
    """git failed, ran past its time or is missing (one line)."""


def output(folder: Path, *args: str, timeout: float = TIMEOUT_S) -> bytes:
    """stdout of ``git --no-optional-locks ARGS`` run in ``folder``; :class:`GitError` (one line) when it fails."""
    what = f"git {args[0]}" if args else "git"
    try:
        done = run(["git", "--no-optional-locks", *args], cwd=folder, env=pinned_env(GIT_OPTIONAL_LOCKS="0"),
                   timeout=timeout, what=what).check(what)
    except ChildError as exc:
        raise GitError(f"{exc} (in {folder})") from None
    return done.out


def git(folder: Path, *args: str, timeout: float = TIMEOUT_S) -> str:
    """stdout of ``git ARGS`` run in ``folder``, as text without its final newline."""
    return output(folder, *args, timeout=timeout).decode(errors="replace").rstrip("\n")


def query(folder: Path, *args: str, timeout: float = TIMEOUT_S) -> str | None:
    """:func:`git`, or None where git fails or is missing (outside a work tree, an unknown commit)."""
    try:
        return git(folder, *args, timeout=timeout)
    except GitError:
        return None
