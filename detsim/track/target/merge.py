"""One history from slices: records of one target made on several machines (each a window of its
history) merged, in the repository's order.

Input: the records (``detsim-track record``'s JSON), the target repository. Output: the merged rows,
oldest first, and a note for each commit two slices both measured whose image hashes disagree (a hash is
valid per machine class: ``docs/tracking.md``); the first slice's row is kept. The turns are then found
over the whole history (:func:`.window.turns`), across the slices' seams.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from detsim.track.base.git import GitError, git


class MergeError(ValueError):
    """Slices that cannot be merged (one line)."""


def merge_rows(root: Path, records: Sequence[Mapping]) -> tuple[list[dict], list[str]]:
    """The rows of ``records`` as one history of ``root`` (see the module docstring)."""
    targets = {rec.get("target") for rec in records}
    if len(targets) != 1:
        raise MergeError(f"the slices are records of different targets: {', '.join(sorted(map(str, targets)))}")
    by_commit: dict[str, dict] = {}
    notes = []
    for rec in records:
        for row in rec["rows"]:
            have = by_commit.setdefault(row["commit"], row)
            if have is row:
                continue
            for case, outcome in row["cases"].items():
                other = have["cases"].get(case)
                if other and other.get("sha256") != outcome.get("sha256"):
                    notes.append(f"{row['commit'][:10]} {case}: image {str(other.get('sha256'))[:12]} on "
                                 f"{have.get('machine')}, {str(outcome.get('sha256'))[:12]} on {row.get('machine')}")
    if not by_commit:
        return [], notes
    try:
        order = git(root, "rev-list", "--reverse", "--topo-order", *by_commit).split()
    except GitError as exc:
        raise MergeError(f"the slices name commits {root} does not have ({exc})") from None
    position = {commit: i for i, commit in enumerate(order)}
    return sorted(by_commit.values(), key=lambda row: position[row["commit"]]), notes
