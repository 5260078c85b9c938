"""Throwaway git histories for the slow end-to-end proofs: commands logged to a file, commits by a fixed identity."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from detsim.track.judge.results_files import load_config

REPO = Path(__file__).resolve().parent.parent
ENV_CACHE = REPO / ".asv" / "planted-env"  # asv's virtualenv, kept between runs: torch installs once


def run(cmd: list[str], cwd: Path, env: dict, log: Path, ok=(0,), timeout: float = 3000) -> int:
    """Run ``cmd``; its output goes to ``log``; a return code outside ``ok`` fails with the log's tail."""
    with open(log, "a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        code = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode
    if code not in ok:
        tail = "\n".join(log.read_text().splitlines()[-40:])
        pytest.fail(f"{' '.join(cmd[:4])} exited {code}; last lines of {log}:\n{tail}")
    return code


GIT_IDENTITY = {"GIT_AUTHOR_NAME": "planted", "GIT_AUTHOR_EMAIL": "planted@example.invalid",
                "GIT_COMMITTER_NAME": "planted", "GIT_COMMITTER_EMAIL": "planted@example.invalid"}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_IDENTITY}).stdout.strip()



def empty_commits(path: Path, subjects: list[str]) -> list[str]:
    """A git repository at ``path`` with one empty commit per subject; their hashes, oldest first."""
    run = lambda *args: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=path,
                                       check=True, capture_output=True, text=True).stdout
    run("init", "-q")
    for subject in subjects:
        run("commit", "-q", "--allow-empty", "-m", subject)
    return run("rev-list", "--reverse", "HEAD").split()

def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def start(work: Path) -> tuple[Path, dict, Path]:
    """A new repository ``work/detsim`` with a home of its own: (root, the environment of its commands, the log)."""
    root, home, log = work / "detsim", work / "home", work / "commands.log"
    home.mkdir()
    root.mkdir()
    env = dict(os.environ, HOME=str(home), PYTHONPATH=str(root), **GIT_IDENTITY)
    env.pop("ASV_COMMIT", None)
    git(root, "init", "-q", "-b", "main")
    return root, env, log


def link_project_venv(root: Path) -> None:
    """``root/.venv`` as a link to this checkout's environment, which must be up to date: else the tracking
    run's ``make venv`` would reinstall it from the throwaway copy, and the checkout's own commands would then
    run the copy's code (and break once the copy is gone)."""
    stamp = REPO / ".venv" / ".installed"
    if not stamp.exists() or stamp.stat().st_mtime < (REPO / "pyproject.toml").stat().st_mtime:
        pytest.fail(f"{REPO / '.venv'} is older than pyproject.toml: run `make venv` first", pytrace=False)
    os.symlink(REPO / ".venv", root / ".venv")


def copy_project(root: Path) -> None:
    """This checkout's files (tracked, and untracked but not ignored; no recorded results or reports) into
    ``root``, with asv's environment kept in :data:`ENV_CACHE` so that torch installs once."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = REPO / name
        if source.is_file() and not name.startswith(("results/asv/", "results/hashes/", "reports/")):
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    # the project's accepted first commits name commits of this history, absent from the throwaway one
    # (asv publish fails on a commit it cannot find): only the "never" entries (null) stay
    conf = load_config(root)
    conf["env_dir"] = str(ENV_CACHE)
    conf["regressions_first_commits"] = {regex: None for regex, first in
                                         (conf.get("regressions_first_commits") or {}).items() if first is None}
    (root / "asv.conf.json").write_text(json.dumps(conf, indent=4) + "\n")
