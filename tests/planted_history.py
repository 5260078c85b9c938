"""Throwaway git histories for the slow end-to-end proofs: commands logged to a file, commits by a fixed identity."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

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


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)
