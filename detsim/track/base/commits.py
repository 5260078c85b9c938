"""Another commit's ``detsim`` package, importable beside this one: for measuring two commits side by side.

:func:`export_package` writes a commit's ``detsim/`` tree (``git archive``) into a folder of its own;
putting that folder first on ``PYTHONPATH`` of a fresh interpreter imports that commit's package
instead of the installed one. The package is pure Python (setuptools, no build step), so this is the
same code asv's ``pip wheel`` + ``pip install`` puts in its environment.

:func:`benchmark_python` is the interpreter that measures: the one of asv's environment when asv has
made one (it holds the same torch as every recorded commit), else this one. :func:`child_env` is the
environment of such a process; start it with ``python -P`` (no working directory on ``sys.path``, which
would otherwise put the checkout's own package first), and :func:`imported_from` checks inside it that
the right package was imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PACKAGE = "detsim"


class CommitError(RuntimeError):
    """A commit that cannot be resolved or exported (one line, naming the commit)."""


def resolve(root: Path, rev: str) -> str:
    """The full sha of ``rev`` in the repository at ``root``."""
    done = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                          capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():
        raise CommitError(f"{rev}: not a commit of {root}")
    return done.stdout.strip()


def export_package(root: Path, commit: str, dest: Path) -> Path:
    """Write ``commit``'s ``detsim/`` package into ``dest`` (created; must not exist) and return ``dest``."""
    sha = resolve(root, commit)
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", sha, PACKAGE],
                             capture_output=True)
    if archive.returncode != 0:
        raise CommitError(f"{sha[:8]}: has no {PACKAGE}/ package ({archive.stderr.decode(errors='replace').strip()})")
    unpack = subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, capture_output=True)
    if unpack.returncode != 0:
        raise CommitError(f"{sha[:8]}: could not unpack into {dest}: {unpack.stderr.decode(errors='replace').strip()}")
    return dest


def benchmark_python(root: Path, env_dir: str | Path = Path(".asv") / "env") -> str:
    """asv's environment's interpreter under ``env_dir`` (asv.conf.json's, relative to ``root``; the
    newest environment), else this interpreter."""
    candidates = sorted((root / env_dir).glob("*/bin/python"), key=lambda p: p.stat().st_mtime)
    return str(candidates[-1]) if candidates else sys.executable


def child_env(package_dir: Path, extra_path: list[Path] = (), **overrides: str) -> dict[str, str]:
    """This process's environment with ``package_dir`` (then ``extra_path``) first on PYTHONPATH."""
    env = dict(os.environ)
    parts = [str(package_dir), *map(str, extra_path)]
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env.update(overrides)
    return env


def imported_from(module, package_dir: Path) -> bool:
    """Whether ``module`` (an imported ``detsim``) was loaded from ``package_dir``."""
    return Path(module.__file__).resolve().is_relative_to(Path(package_dir).resolve())
