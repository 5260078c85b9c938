"""Re-timing a target's timing suspects in the run that judges it: both commits installed, the suspect's case
rendered by each in turn, each render a fresh process. :mod:`detsim.track.judge.confirm` runs the rounds and
decides (REGRESSED or noise, as for detsim's own suspects); this module is the target's side of it, which
``detsim-track regressions`` plugs in for a target's project.

Input: a target's project folder (its asv.conf.json names the target's folder and the spec it was recorded
with), then suspects (``bench_target.Timing.time_render`` with its one parameter, the case) at two commits.
Each commit is installed once per run (:class:`~.build.Builder`, in a temporary folder) and kept for every
suspect that names it; each side renders the case once unmeasured (its byte code written, its files in the
page cache), then a round renders it once at each commit, in the round's order, and a side's figure is that
render's whole-process wall seconds (:func:`~.render.render_case`), what ``time_render`` recorded. A commit
that does not install or render is a :class:`~detsim.track.judge.confirm.RemeasureError` naming it (the step
stays undecided). The machine is not checked: a target's rows may come from slices recorded on several hosts
under one machine name, and both sides are timed here, under the same load.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from detsim.track.base.fresh import HERE
from detsim.track.base.golden import GoldenError
from detsim.track.judge.confirm import Measurer, RemeasureError, Sample, Target, measuring
from detsim.track.judge.results_files import TARGET_FOLDER, TARGET_SPEC, ResultsError, load_config
from detsim.track.target.build import BuildError, Builder, scratch_folder
from detsim.track.target.render import render_case
from detsim.track.target.spec import SpecError, load_spec, target_cases


class _Installs:
    """The target's commits, each installed on first use under ``scratch``, and their renders of a case."""

    def __init__(self, folder: Path, scratch: Path):
        self.folder, self.scratch = Path(folder), Path(scratch)
        self.builder: Builder | None = None
        self.cases: dict = {}
        self.bin_dirs: dict[str, Path] = {}  # commit -> its installed commands

    def _start(self) -> None:
        """The spec and cases the project was recorded with (read once, at the first suspect)."""
        try:
            conf = load_config(self.folder)
            spec_file = conf.get(TARGET_SPEC)
            spec = load_spec(Path(conf[TARGET_FOLDER]), Path(spec_file) if spec_file else None)
            self.cases = {case.id: case for case in target_cases(spec, HERE)}
        except KeyError:
            raise RemeasureError(f"{self.folder}: its asv.conf.json names no target folder ({TARGET_FOLDER})") from None
        except (ResultsError, SpecError, GoldenError) as exc:
            raise RemeasureError(str(exc)) from None
        self.builder = Builder(spec, self.scratch)

    def bin_dir(self, commit: str) -> Path:
        if self.builder is None:
            self._start()
        if commit not in self.bin_dirs:
            try:
                self.bin_dirs[commit] = self.builder.install(commit).bin_dir
            except BuildError as exc:
                raise RemeasureError(str(exc)) from None
        return self.bin_dirs[commit]

    def seconds(self, case: str, commit: str) -> float:
        """One render of ``case`` at ``commit``: its whole process's wall seconds."""
        outcome = render_case(self.builder.spec, self.cases[case], self.bin_dir(commit), runs=1).outcome
        if outcome.status.is_failure or not outcome.seconds:
            raise RemeasureError(f"{case} did not render at {commit[:8]}: {outcome.summary()}")
        return outcome.seconds

    @contextlib.contextmanager
    def sides(self, target: Target, commit_a: str, commit_b: str) -> Iterator[Sample]:
        """Both commits installed and rendered once each, then sampled side by side."""
        if len(target.params) != 1:
            raise RemeasureError(f"{target.label}: a target's timing takes one parameter, its case")
        [case] = target.params
        commits = {"A": commit_a, "B": commit_b}
        for commit in commits.values():
            self.bin_dir(commit)
        if case not in self.cases:
            raise RemeasureError(f"{case}: not a case of the target's spec (cases: {', '.join(sorted(self.cases))})")
        for commit in commits.values():
            self.seconds(case, commit)
        yield lambda first: {side: self.seconds(case, commits[side]) for side in first}


@contextlib.contextmanager
def target_measurer(folder: Path) -> Iterator[Measurer]:
    """The re-measuring of the target whose project is ``folder``, for one run (its installs removed after)."""
    with scratch_folder() as scratch:
        yield Measurer(measuring(_Installs(folder, Path(scratch)).sides))
