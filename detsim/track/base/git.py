"""git, run in a folder: the one way the suite asks git anything, read-only; and another commit's ``detsim``
package, exported beside this one for measuring two commits side by side.

Inputs: a folder in a git work tree, a revision. Outputs: git's answer as text (or :class:`GitError`, one
line), a commit's full sha, its ``detsim/`` tree exported to a folder.

``--no-optional-locks`` (with ``GIT_OPTIONAL_LOCKS=0``) keeps git read-only: ``git status`` would otherwise
refresh the index and write ``.git/index.lock`` in whatever checkout it was run in. The package is pure
Python, so a commit's ``detsim/`` tree (``git archive``) first on ``PYTHONPATH`` of a fresh ``python -P``
(:mod:`.fresh`: no working directory on ``sys.path``, where the checkout's own package would come first) is the
same code asv's ``pip install`` puts in its environment.
"""

from __future__ import annotations

import sys
import tempfile
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


# ---- another commit's package

PACKAGE = "detsim"


class CommitError(RuntimeError):
    """A commit that cannot be resolved or exported (one line, naming the commit)."""


def resolve(root: Path, rev: str) -> str:
    """The full sha of ``rev`` in the repository at ``root``."""
    sha = query(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    if not sha:
        raise CommitError(f"{rev}: not a commit of {root}")
    return sha


def export_package(root: Path, commit: str, dest: Path) -> Path:
    """Write ``commit``'s ``detsim/`` package into ``dest`` (created; must not exist) and return ``dest``."""
    sha = resolve(root, commit)
    dest.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="detsim-export-") as tmp:
        archive = Path(tmp) / "package.tar"
        try:
            git(root, "archive", "--format=tar", f"--output={archive}", sha, PACKAGE)
        except GitError as exc:
            raise CommitError(f"{sha[:8]}: has no {PACKAGE}/ package ({exc})") from None
        try:
            run(["tar", "-x", "-C", str(dest), "-f", str(archive)]).check("tar")
        except ChildError as exc:
            raise CommitError(f"{sha[:8]}: could not unpack into {dest}: {exc}") from None
    return dest


def benchmark_python(root: Path, env_dir: str | Path = Path(".asv") / "env") -> str:
    """asv's environment's interpreter under ``env_dir`` (asv.conf.json's, relative to ``root``; the
    newest environment), else this interpreter."""
    candidates = sorted((root / env_dir).glob("*/bin/python"), key=lambda p: p.stat().st_mtime)
    return str(candidates[-1]) if candidates else sys.executable


def package_tree(root: Path, commit: str) -> str | None:
    """The git object id of ``commit``'s ``detsim/`` tree: the code :func:`export_package` and asv's install
    measure, so two commits with the same id run the same code (None where the commit or its package is
    unknown)."""
    return query(root, "rev-parse", "--verify", "--quiet", f"{commit}:{PACKAGE}")
