"""The recorded commits as git knows them: their subject lines, and where asv.conf.json's
``regressions_first_commits`` starts judging a benchmark.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

from detsim.track.base.git import query
from detsim.track.judge.family import Family
from detsim.track.judge.results_files import CONFIG, ResultsError


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


def first_commit_cut(conf: Mapping, name: str, family: Family, order: list[str]) -> int | None:
    """Index of the first point to judge: after the commit ``regressions_first_commits`` names, as asv does (None:
    a null entry switches detection off, except for throughput, which asv's page cannot judge and this command can)."""
    start = 0
    for regex, commit in (conf.get("regressions_first_commits") or {}).items():
        if not re.match(regex, name):
            continue
        if commit is None and family != Family.THROUGHPUT:
            return None
        hits = [i for i, sha in enumerate(order) if commit is not None and sha.startswith(commit)]
        if hits:
            start = max(start, hits[0] + 1)
    return start

