"""A target's side of re-measuring: each commit installed once for the run, each side rendered once unmeasured,
then a round's renders in the round's order; a commit that does not install or render, or a case the spec does
not have, is a RemeasureError naming it (the builds and renders faked: the real ones in the slow proof of
test_commands_regressions_target.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from detsim.track.base.status import Status
from detsim.track.judge.confirm import RemeasureError, Target
from detsim.track.target import retiming
from detsim.track.target.project import Project
from detsim.track.target.render import CaseOutcome, CaseRender
from detsim.track.target.spec import load_spec
from planted_port import CASE, fake_builder, make_port

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
TIMED = Target("bench_target.Timing.time_render", (CASE,))


@pytest.fixture
def installs(tmp_path, monkeypatch):
    """A planted port's project and the target's installs of it; returns (installs, builds, renders), the
    commits installed and rendered, in order (commit "broken" does not install, "crashes" does not render)."""
    port = make_port(tmp_path, GOLDEN, render="copy")
    spec = load_spec(port.root)
    project = Project.of(spec, tmp_path / "detsim")
    project.write(spec, tmp_path / "detsim", "m1")
    builds, renders = [], []

    def render(spec, case, bin_dir, runs):
        renders.append(bin_dir.name)
        if bin_dir.name == "crashes":
            return CaseRender(CaseOutcome(case.id, Status.CRASHED, "exited 1: planted"), None, None)
        return CaseRender(CaseOutcome(case.id, Status.OK, seconds={"a": 1.0, "b": 2.0}.get(bin_dir.name, 3.0)),
                          None, None)

    monkeypatch.setattr(retiming, "Builder", fake_builder(builds))
    monkeypatch.setattr(retiming, "render_case", render)
    return retiming._Installs(project.folder, tmp_path / "scratch"), builds, renders


def test_each_commit_is_installed_once_and_a_round_renders_in_its_order(installs):
    sides, builds, renders = installs
    with sides.sides(TIMED, "a", "b") as sample:
        assert renders == ["a", "b"]  # once each, unmeasured
        assert sample("BA") == {"B": 2.0, "A": 1.0} and renders[2:] == ["b", "a"]
    with sides.sides(TIMED, "a", "c") as sample:  # another suspect at one of the same commits
        assert sample("AB") == {"A": 1.0, "B": 3.0}
    assert builds == ["a", "b", "c"]


def test_what_cannot_be_re_timed_is_one_line_naming_it(installs):
    sides = installs[0]
    with pytest.raises(RemeasureError, match="^broken: does not install: planted$"):
        with sides.sides(TIMED, "a", "broken"):
            pass
    with pytest.raises(RemeasureError, match=f"^{CASE} did not render at crashes: crashed: exited 1: planted$"):
        with sides.sides(TIMED, "a", "crashes"):
            pass
    with pytest.raises(RemeasureError, match="^nope: not a case of the target's spec"):
        with sides.sides(Target("bench_target.Timing.time_render", ("nope",)), "a", "b"):
            pass
