"""detsim.track.target.hunting: a planted target history (tests/planted_port.py) hunted fault by fault,
every fault found at its commit in at most log2(N) + 3 builds, twins of measured commits reused.

The default run uses the port whose command copies the case's reference (no torch in its processes); the
slow tests render with detsim's CLI under the wrapper, as a real port would.

Also the first bad commit in about log2(N) probes, skipped commits stepped
around, and the candidates named when skips hide the exact one.

Also cases measured at commits of a planted target (tests/planted_port.py), twins
reused by their sources without a build, a commit that does not build reported, never raised. Slow: the
default run builds and probes through test_target_hunting and test_target_build."""

from __future__ import annotations

from pathlib import Path

import pytest

from _tolerances import FLOAT32_PIXEL_REL
from detsim.track.base.golden import find_case
from detsim.track.target.criteria import Criterion, Kind
from detsim.track.target.hunting import HuntError, Prober, hunt

from detsim.track.base.status import Status
from detsim.track.target.spec import load_spec
from planted_history import commit
from planted_port import CASE, make_port


GOLDEN = Path(__file__).resolve().parents[2] / "golden"


@pytest.fixture(scope="module")
def copying(tmp_path_factory):
    """The planted port whose command copies the reference image (its docs commits reused unbuilt)."""
    return make_port(tmp_path_factory.mktemp("copying"), GOLDEN, render="copy")


def _hunt(port, kind: Kind, good: str, bad: str, tmp_path: Path, **criterion):
    spec = load_spec(port.root)
    case = find_case(CASE, GOLDEN)
    said: list[str] = []
    found = hunt(spec, Criterion(kind, case.id, **criterion), case, port.commits[good], port.commits[bad],
                 tmp_path / "scratch", said.append)
    record = found.to_dict()
    names = {sha: name for name, sha in port.commits.items()}
    return record, names.get(record["first_bad"]), said


@pytest.mark.slow  # test_each_planted_fault_is_found_at_its_commit finds the same edge fault in the slow job
def test_a_parity_change_at_the_edge_is_found_at_its_commit_and_located(copying, tmp_path):
    record, first_bad, said = _hunt(copying, Kind.PARITY, "base", "docs6", tmp_path)
    assert first_bad == "edge" and record["exact"]
    assert record["builds"] <= record["build_bound"] and record["reused"] >= 1
    assert any(step["reused_by"] == "sources" for step in record["steps"])
    gone = record["departure"]
    assert gone["where"] == "edges" and gone["central_passes_full_fails"] is False  # 2 %: the frame still passes
    assert gone["regions"]["edges"]["share"] == 1.0
    assert gone["worst"][0]["ratio"] == pytest.approx(1.02, rel=FLOAT32_PIXEL_REL)
    assert len(said) == len(record["steps"]) + 1 and said[-1].startswith("[step")


@pytest.mark.slow
def test_a_wrong_image_size_is_broken_at_its_commit(copying, tmp_path):
    record, first_bad, _ = _hunt(copying, Kind.BROKEN, "base", "shrink", tmp_path)
    assert first_bad == "shrink" and record["departure"] is None
    assert record["steps"][1]["outcome"]["status"] == "wrong size"


def test_commits_out_of_line_are_refused_before_any_build(copying, tmp_path):
    with pytest.raises(HuntError, match="not a descendant"):
        _hunt(copying, Kind.BROKEN, "docs6", "base", tmp_path)
    assert not (tmp_path / "scratch").exists()


@pytest.mark.slow
def test_the_ends_are_checked_before_any_bisection(copying, tmp_path):
    with pytest.raises(HuntError, match="GOOD .* cannot anchor the criterion: it renders no image"):
        _hunt(copying, Kind.PARITY, "crash", "docs6", tmp_path)
    record, first_bad, said = _hunt(copying, Kind.BROKEN, "base", "docs1", tmp_path)
    assert not record["found"] and first_bad is None and "nothing to bisect" in said[-1]
    with pytest.raises(HuntError, match="BAD .* cannot be judged by this criterion .*crashed.*--broken finds"):
        _hunt(copying, Kind.PARITY, "base", "crash", tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("kind, good, bad, fault", [
    (Kind.BROKEN, "unshrink", "docs5", "crash"),  # later commits render again: the first failure is the crash
    (Kind.IRREPRODUCIBLE, "uncrash", "varies", "varies"),
    (Kind.CHANGED, "base", "docs6", "edge"),
])
def test_each_planted_fault_is_found_at_its_commit(copying, tmp_path, kind, good, bad, fault):
    if kind is Kind.BROKEN:
        bad = "crash"
    record, first_bad, _ = _hunt(copying, kind, good, bad, tmp_path)
    assert first_bad == fault and record["builds"] <= record["build_bound"]


@pytest.fixture(scope="module")
def rendering(tmp_path_factory):
    """The planted port rendering with detsim's CLI; no export paths: every probe is built, and docs commits
    are reused by their installed files."""
    return make_port(tmp_path_factory.mktemp("rendering"), GOLDEN, render="detsim", export=False)


@pytest.mark.slow
def test_through_detsims_cli_the_edge_change_is_found_and_twins_are_reused_by_their_installed_files(rendering,
                                                                                                     tmp_path):
    record, first_bad, _ = _hunt(rendering, Kind.PARITY, "base", "docs6", tmp_path)
    assert first_bad == "edge" and record["builds"] <= record["build_bound"]
    assert record["renders"] < record["builds"] and any(s["reused_by"] == "installed files" for s in record["steps"])
    assert record["departure"]["where"] == "edges"


@pytest.mark.slow
def test_through_detsims_cli_a_15_percent_slowdown_is_found(rendering, tmp_path):
    record, first_bad, _ = _hunt(rendering, Kind.SLOWER, "steady", "docs6", tmp_path, percent=7)
    assert first_bad == "slow"


@pytest.mark.slow
def test_every_case_is_measured_once_per_distinct_package_and_reused_by_twins(tmp_path):
    port = make_port(tmp_path, GOLDEN, render="copy")
    cases = [find_case(CASE, GOLDEN), find_case("o01", GOLDEN)]
    prober = Prober(load_spec(port.root), cases, runs=2, scratch=tmp_path / "scratch")
    base, docs, shrink = (prober.at(port.commits[name]) for name in ("base", "docs1", "shrink"))
    assert set(base.results) == {CASE, "o01_polar_0.9"} and base.reused_from is None
    assert all(r.outcome.status is Status.OK and r.outcome.reproduced for r in base.results.values())
    assert docs.results is base.results and (docs.reused_from, docs.reused_by) == (base.commit, "sources")
    assert shrink.results[CASE].outcome.status is Status.WRONG_SIZE
    assert (prober.reuse.builds, prober.renders, prober.reuse.reused) == (2, 2 * 2 + 2 * 1, 1)  # a failed run ends one


@pytest.mark.slow
def test_a_commit_that_does_not_build_is_a_probe_with_its_reason(tmp_path):
    port = make_port(tmp_path, GOLDEN, render="copy")
    (port.root / "pyproject.toml").write_text("[project\n")
    broken = commit(port.root, "a broken pyproject")
    prober = Prober(load_spec(port.root), [find_case(CASE, GOLDEN)], runs=1, scratch=tmp_path / "scratch")
    probe = prober.at(broken)
    assert probe.results is None and probe.build_error.startswith(f"{broken[:8]}: does not install")
    assert prober.reuse.builds == 1
