"""The evidence bundle of ``detsim-track explain`` (its files: docs/explain.md, "The bundle")."""

from __future__ import annotations

import shlex
from pathlib import Path

from detsim.track.base.output import atomic_write_text, write_json
from detsim.track.base.runtime import environment
from detsim.track.evidence.manifest import write_manifest


def answer_text(records: list[dict]) -> str:
    """``answer.md``: one heading and paragraph per explanation."""
    parts = ["# What changed, where, since which commit", ""]
    for record in records:
        job = record["job"]
        where = (f"at {job['first_bad'][:8]}, {job['axis']}" if job.get("axis")
                 else f"{job['last_good'][:8]}..{job['first_bad'][:8]}")
        parts += [f"## {job['kind']} of {job['workload']} ({where}, from {job['origin']})", "", record["answer"], ""]
    return "\n".join(parts)


def finish(folder: Path, records: list[dict], argv: list[str], root: Path) -> None:
    """Write the bundle's shared files into ``folder`` (the temporary one) and its manifest last."""
    write_json(folder / "explain.json", {"report": "explain", "explanations": records})
    commits = sorted({c for r in records for c in r.get("commits_between", []) + [r["job"]["last_good"]] if c})
    atomic_write_text(folder / "commands.txt", f"# run from: {root}\n{shlex.join(['detsim-track', *argv])}\n"
                      + "".join(f"# commit {c}\n" for c in commits))
    write_json(folder / "env.json", environment())
    atomic_write_text(folder / "answer.md", answer_text(records))
    write_manifest(folder)
