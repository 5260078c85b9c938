"""detsim.track.target.probing: cases measured at commits of a planted target (tests/planted_port.py), twins
reused by their sources without a build, a commit that does not build reported, never raised. Slow: the
default run builds and probes through test_target_hunting and test_target_build."""

from __future__ import annotations

from pathlib import Path

import pytest

from detsim.track.base.golden import find_case
from detsim.track.target.outcome import Ending
from detsim.track.target.probing import Prober
from detsim.track.target.spec import load_spec
from planted_history import commit
from planted_port import CASE, make_port

GOLDEN = Path(__file__).resolve().parents[2] / "golden"


@pytest.mark.slow
def test_every_case_is_measured_once_per_distinct_package_and_reused_by_twins(tmp_path):
    port = make_port(tmp_path, GOLDEN, render="copy")
    cases = [find_case(CASE, GOLDEN), find_case("o01", GOLDEN)]
    prober = Prober(load_spec(port.root), cases, runs=2, scratch=tmp_path / "scratch")
    base, docs, shrink = (prober.at(port.commits[name]) for name in ("base", "docs1", "shrink"))
    assert set(base.rendered) == {CASE, "o01_polar_0.9"} and base.reused_from is None
    assert all(r.outcome.status is Ending.IMAGE and r.outcome.reproduced for r in base.rendered.values())
    assert docs.rendered is base.rendered and (docs.reused_from, docs.reused_by) == (base.commit, "sources")
    assert shrink.rendered[CASE].outcome.status is Ending.WRONG_SIZE
    assert (prober.builds, prober.renders, prober.reuse.reused) == (2, 2 * 2 + 2 * 1, 1)  # a failed run ends one
    assert set(prober.rendered) == {base.commit, docs.commit, shrink.commit}


@pytest.mark.slow
def test_a_commit_that_does_not_build_is_a_probe_with_its_reason(tmp_path):
    port = make_port(tmp_path, GOLDEN, render="copy")
    (port.root / "pyproject.toml").write_text("[project\n")
    broken = commit(port.root, "a broken pyproject")
    prober = Prober(load_spec(port.root), [find_case(CASE, GOLDEN)], runs=1, scratch=tmp_path / "scratch")
    probe = prober.at(broken)
    assert probe.rendered is None and probe.build_error.startswith(f"{broken[:8]}: does not install")
    assert broken not in prober.rendered and prober.builds == 1
