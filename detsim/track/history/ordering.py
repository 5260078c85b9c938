"""The order of the recorded commits (HEAD's git history, else the commit dates asv stored), the commit to judge
(HEAD, in a project checkout), and where detection starts (``regressions_first_commits``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

from detsim.track.base.git import query
from detsim.track.history.jsonc import CONFIG, ResultsError


def project_repo(root: Path, conf: Mapping) -> Path:
    """The git repository asv.conf.json's ``repo`` names (relative to the project): the project itself for
    detsim, another repository for a target's recording (docs/targets.md)."""
    return (Path(root) / conf.get("repo", ".")).resolve()


def order_files(root: Path, files: list[dict]) -> tuple[list[dict], list[str]]:
    """Results files in commit order, and notes on what was left out or how they were ordered."""
    history = (query(root, "rev-list", "--topo-order", "HEAD") or "").split()
    position = {sha: i for i, sha in enumerate(reversed(history))}
    known = [f for f in files if f["commit_hash"] in position]
    if known:
        left_out = len(files) - len(known)
        notes = [f"{left_out} results of commits outside HEAD's history were ignored"] if left_out else []
        return sorted(known, key=lambda f: (position[f["commit_hash"]], f["env_name"])), notes
    notes = ["no recorded commit is in HEAD's history; ordered by commit date"] if history else []
    return sorted(files, key=lambda f: (f.get("date") or 0, f["env_name"])), notes


def checkout_head(root: Path) -> str | None:
    """HEAD's full hash where ``root`` is the top of a git work tree (a project checkout), else None: a results
    folder that is not itself a checkout (a copy, a fixture inside another project) has no HEAD of its own."""
    top = (query(root, "rev-parse", "--show-toplevel") or "").strip()
    if not top or Path(top).resolve() != Path(root).resolve():
        return None
    return (query(root, "rev-parse", "HEAD") or "").strip() or None


def subjects(root: Path, commits: list[str]) -> dict[str, str]:
    """Commit hash -> its subject line, for the commits git knows."""
    out = query(root, "log", "--no-walk=unsorted", "--format=%H%x09%s", *commits) if commits else None
    return dict(line.partition("\t")[::2] for line in (out or "").splitlines())


def resolve_first_commits(root: Path, conf: Mapping, order: list[str]) -> dict:
    """``regressions_first_commits`` with each commit git knows but this machine never recorded made the latest
    recorded commit among its ancestors, where there is one (raises ResultsError for a commit git does not know)."""
    resolved = {}
    for regex, commit in (conf.get("regressions_first_commits") or {}).items():
        resolved[regex] = commit
        if commit is None or any(sha.startswith(commit) for sha in order):
            continue
        ancestors = set((query(root, "rev-list", f"{commit}^{{commit}}", "--") or "").split())
        if not ancestors:
            raise ResultsError(f"{root / CONFIG}: regressions_first_commits[{regex!r}] = {commit!r}: no such commit "
                               "(neither recorded nor in the git repository)")
        covered = [sha for sha in order if sha in ancestors]
        if covered:
            resolved[regex] = covered[-1]
    return resolved


def first_commit_cut(conf: Mapping, name: str, family: str, order: list[str]) -> int | None:
    """Index of the first point to judge: after the commit ``regressions_first_commits`` names, as asv does (None:
    a null entry switches detection off, except for throughput, which asv's page cannot judge and this command can)."""
    start = 0
    for regex, commit in (conf.get("regressions_first_commits") or {}).items():
        if not re.match(regex, name):
            continue
        if commit is None and family != "throughput":
            return None
        hits = [i for i, sha in enumerate(order) if commit is not None and sha.startswith(commit)]
        if hits:
            start = max(start, hits[0] + 1)
    return start
