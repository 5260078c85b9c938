"""Measuring golden cases at any commit of a target: built in a throwaway venv, or its results reused from a
commit with the same sources or installed files (:mod:`.reuse`, the one rule bisection and recording share).

Input: a :class:`~.spec.TargetSpec`, the cases, the processes per render. Output: a :class:`Probe` per commit
(each case's :class:`~.render.CaseRender`, or why the commit did not build), and the counts of builds,
renders and reused results.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from detsim.track.base.golden import GoldenCase
from detsim.track.target.build import Builder, BuildError
from detsim.track.target.render import CaseRender, render_case
from detsim.track.target.reuse import Reuse, source_key
from detsim.track.target.spec import TargetSpec


@dataclass(frozen=True)
class Probe:
    """One commit's measurement: rendered, reused from another commit, or not built."""

    commit: str
    rendered: Mapping[str, CaseRender] | None = None  # case id -> what it came to; None: not built
    reused_from: str | None = None  # the commit whose installed files (or exported sources) were the same
    reused_by: str | None = None  # "sources" (the export paths' git trees) or "installed files"
    build_error: str | None = None
    build_s: float | None = None
    keys: tuple[str, ...] = ()  # its reuse keys: the sources' (when the spec exports paths), the installed files'


class Prober:
    """Measures ``cases`` at any commit of ``spec.root``, building each in a throwaway venv under ``scratch``
    and reusing results across commits with the same sources or installed files. With ``in_turns`` the first
    commit measured stays installed and every later render is timed in turns with it."""

    def __init__(self, spec: TargetSpec, cases: Sequence[GoldenCase], runs: int, scratch: Path,
                 in_turns: bool = False):
        self.spec, self.cases, self.runs, self.in_turns = spec, list(cases), runs, in_turns
        self.baseline: Path | None = None  # the first commit's command folder, kept installed when in_turns
        self.builder = Builder(spec, scratch)
        self.reuse: Reuse[Mapping[str, CaseRender]] = Reuse()
        self.builds = self.renders = 0
        self.rendered: dict[str, Mapping[str, CaseRender]] = {}  # commit -> what it came to, reused or not

    def recorded(self, commit: str, keys: Sequence[str], rendered: Mapping[str, CaseRender]) -> None:
        """What an earlier run measured at ``commit`` under ``keys``: its twins here take it, unmeasured."""
        self.reuse.put(commit, rendered, *keys)

    def at(self, commit: str) -> Probe:
        probe = self._measure(commit)
        if probe.rendered is not None:
            self.rendered[probe.commit] = probe.rendered
        return probe

    def _measure(self, commit: str) -> Probe:
        source = source_key(self.spec.root, commit, self.spec.export)
        hit = self.reuse.get(source)
        if hit is not None:
            return Probe(commit, hit[1], reused_from=hit[0], reused_by="sources", keys=(source,))
        self.builds += 1
        try:
            installed = self.builder.install(commit)
        except BuildError as exc:
            return Probe(commit, build_error=str(exc))
        keep = self.in_turns and self.baseline is None
        keys = tuple(k for k in (source, installed.fingerprint) if k is not None)
        try:
            hit = self.reuse.get(installed.fingerprint)
            if hit is not None:
                self.reuse.put(hit[0], hit[1], source)
                return Probe(installed.commit, hit[1], reused_from=hit[0], reused_by="installed files",
                             build_s=installed.seconds, keys=keys)
            rendered = {case.id: render_case(self.spec, case, installed.bin_dir, runs=self.runs,
                                             baseline=self.baseline) for case in self.cases}
            self.renders += sum(r.runs for r in rendered.values())
            self.reuse.put(installed.commit, rendered, *keys)
            return Probe(installed.commit, rendered, build_s=installed.seconds, keys=keys)
        finally:
            if keep:
                self.baseline = installed.bin_dir
            else:
                self.builder.discard(installed)
