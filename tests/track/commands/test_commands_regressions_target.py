"""``detsim-track regressions`` on a target's recording (a project whose asv.conf.json names another
repository): the verdict names the recording's folder, so that ``publish`` and ``explain`` show where a
parity finding's image departs with no flag; it says how many commits took a twin's results; its timing
suspects are decided in the run by re-timing both commits' installs side by side (the renders faked here;
built and rendered for real in the slow tests: an unchanged commit is noise, a planted slowdown REGRESSED);
the target's peak memory is judged as memory. The asv results here are written by the test, as the
recording's asv run writes them (the recording through asv itself: test_commands_record.py, slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from detsim.track.base.status import Status
from detsim.track.cli import main
from detsim.track.commands import publish
from detsim.track.judge import confirm
from detsim.track.recorder import cluster as cluster_recording
from detsim.track.target import retiming
from detsim.track.target.project import Project
from detsim.track.target.render import CaseOutcome, CaseRender
from detsim.track.target.spec import load_spec
from planted_history import git
from planted_port import CASE, fake_builder, make_port, plant, start_results, write_results
from publish_assets import edge_departure, fake_asset_cache

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden"
MACHINE = "m1"
BENCHMARKS = {  # name -> (asv type, unit), as asv lists the suite for targets
    "bench_target.Case.track_parity_one_minus_r": ("track", "1 - r"),
    "bench_target.Case.track_peak_memory": ("track", "MB"),
    "bench_target.Timing.time_render": ("time", "seconds"),
    "bench_target.Case.track_fingerprint": ("track", "image fingerprint"),
}


def _record(tmp_path: Path, port, plan) -> Project:
    """``plan`` (name, twin, 1 - r, seconds, departure) recorded on m1 as the recording's asv run writes it,
    the port checked out at its last commit."""
    git(port.root, "checkout", "-q", port.commits[plan[-1][0]])
    spec = load_spec(port.root)
    project = Project.of(spec, tmp_path / "detsim")
    project.write(spec, tmp_path / "detsim", MACHINE)
    results = project.results(MACHINE)
    start_results(results, MACHINE, BENCHMARKS)
    outcomes = project.outcomes(MACHINE)
    outcomes.mkdir(parents=True)
    for i, (name, twin, one_minus_r, seconds, departs) in enumerate(plan):
        commit = port.commits[name]
        write_results(results, MACHINE, commit, 1_700_000_000_000 + i * 1000, {
            "bench_target.Case.track_parity_one_minus_r": one_minus_r,
            "bench_target.Case.track_peak_memory": 300.0, "bench_target.Timing.time_render": seconds,
            "bench_target.Case.track_fingerprint": 0.5 if departs is None else 0.25})
        case = {"status": "image", **({"departure": departs} if departs else {})}
        (outcomes / f"{commit}.json").write_text(json.dumps({
            "commit": commit, "machine": MACHINE, "reused_from": port.commits[twin] if twin else None,
            "reused_by": "sources" if twin else None, "build_error": None, "keys": [], "cases": {CASE: case}}))
    return project


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """A planted port's first three commits recorded on m1: base measured, docs1 taking base's results (the
    same sources), edge measured, its image departing at the frame's edge (1 - r x1e5) and its whole
    process x1.5 slower; the port checked out at edge. detsim's own re-measuring never runs for it."""
    monkeypatch.setattr(confirm, "default_measure", lambda root: pytest.fail("detsim's package was re-measured"))
    monkeypatch.setattr(confirm, "CACHE", tmp_path / "confirmations.json")
    port = make_port(tmp_path, GOLDEN, render="copy")
    project = _record(tmp_path, port, [("base", None, 1e-9, 1.0, None), ("docs1", "base", 1e-9, 1.0, None),
                                       ("edge", None, 1e-4, 1.5, edge_departure())])
    return port, project


@pytest.fixture
def renders_take(monkeypatch):
    """``renders_take({commit: seconds})``: the target's re-timing installs nothing and each render of a commit
    takes its seconds (a little jitter, the same for both sides of a round); returns the renders, in order, as
    (spec, commit)."""
    done = []

    def install(seconds):
        def render(spec, case, bin_dir, runs):
            commit = bin_dir.name
            done.append((spec, commit))
            jitter = 1 + 0.01 * (len(done) // 2 % 3)
            return CaseRender(CaseOutcome(case.id, Status.OK, seconds=seconds[commit] * jitter), None, None)
        monkeypatch.setattr(retiming, "Builder", fake_builder())
        monkeypatch.setattr(retiming, "render_case", render)
        return done
    return install


def _verdict(project: Project) -> dict:
    """The stored verdict of the only machine judged."""
    [report] = json.loads((project.folder / "reports" / "latest" / "verdict.json").read_text())["machines"].values()
    return report


def test_a_targets_verdict_names_its_recording_counts_reuse_and_decides_its_timing_in_the_run(recorded, capsys,
                                                                                               renders_take):
    port, project = recorded
    good, bad = port.commits["docs1"], port.commits["edge"]
    renders = renders_take({good: 0.4, bad: 0.4})  # x1.5 recorded, the same seconds side by side
    assert main(["regressions", "--repo", str(project.folder), "--machine", MACHINE]) == 1
    screen = capsys.readouterr().out
    verdict = _verdict(project)
    assert verdict["target_results"] == str(project.folder)
    assert verdict["reused"] == [port.commits["docs1"]]
    assert "1 of the 3 commits judged took the results of a commit with the same exported sources or installed " \
           "files (not built or measured again; `detsim-track record` reuses them)" in verdict["notes"]
    assert verdict["families"]["memory"] == {"measured": 1, "failed": [], "skipped": 0}
    assert f"image hashes: compared commit to commit from the first recorded commit, {port.commits['base'][:8]} " \
           "(a target's images have no stored baseline)" in verdict["notes"]
    assert not any("baselines --refresh" in note or "no golden baseline" in note for note in verdict["notes"])
    assert "track" not in verdict["families"]
    [timing] = [f for f in verdict["regressions"] if f["family"] == "timing"]
    assert timing["confirmation"] == "noise" and timing["remeasured_rounds"] == confirm.ROUNDS
    assert timing["remeasured_ratio"] == pytest.approx(1.0, abs=0.02) and "decide_command" not in timing
    assert timing["confirmation_evidence"].startswith(f"re-measured {good[:8]} and {bad[:8]} in 16 rounds")
    # each side rendered once unmeasured, then once a round, the sides going first in turns
    assert [commit for _, commit in renders] == [good, bad] + [good, bad, bad, good] * (confirm.ROUNDS // 2)
    assert "UNDECIDED" not in screen and "decide:" not in screen
    assert not any(note.startswith("where it was measured") for note in verdict["notes"])  # all here: nothing said
    assert "REGRESSED parity" in screen and "3 commits recorded" in screen and "; 1 reused a twin's results)" in screen


def test_a_target_whose_commit_renders_slower_side_by_side_is_regressed_in_timing(recorded, capsys, renders_take):
    port, project = recorded
    good, bad = port.commits["docs1"], port.commits["edge"]
    renders_take({good: 0.4, bad: 0.6})
    assert main(["regressions", "--repo", str(project.folder), "--machine", MACHINE]) == 1
    [timing] = [f for f in _verdict(project)["regressions"] if f["family"] == "timing"]
    assert timing["confirmation"] == "confirmed" and timing["remeasured_ratio"] == pytest.approx(1.5, rel=0.03)
    assert f"REGRESSED timing {CASE}: 1 s -> 1.5 s, x1.50 since {bad[:8]}" in capsys.readouterr().out


def test_a_targets_step_not_re_measured_is_decided_by_the_run_that_re_measures(recorded, capsys, renders_take):
    """(The command is never cut, however long the target's path: ``tmp_path`` under xdist makes it over the
    screen's width.)"""
    port, project = recorded
    assert renders_take({}) is not None
    assert main(["regressions", "--repo", str(project.folder), "--machine", MACHINE, "--remeasure", "0"]) == 1
    [timing] = [f for f in _verdict(project)["regressions"] if f["family"] == "timing"]
    assert timing["confirmation"] == "undecided"
    assert timing["decide_command"] == (f"detsim-track regressions --repo {project.folder} --machine {MACHINE} "
                                        "--remeasure-budget 900")
    assert f"decide: {timing['decide_command']}" in capsys.readouterr().out


def test_publish_and_explain_show_a_targets_departure_with_no_flag(recorded, capsys, tmp_path, monkeypatch):
    port, project = recorded
    assert main(["regressions", "--repo", str(project.folder), "--machine", MACHINE, "--remeasure", "0"]) == 1
    monkeypatch.setattr(publish, "asv_publish", lambda root, dest: (dest / "index.html").write_text(
        "<html><body><nav></nav></body></html>"))
    cache = tmp_path / "cache"
    fake_asset_cache(cache)
    assert main(["publish", "--repo", str(project.folder), "--assets", str(cache)]) == 0
    page = (project.folder / "html" / "status.html").read_text()
    assert f'<div class="departure" data-case="{CASE}">' in page
    assert "the images part at the edges" in page
    capsys.readouterr()
    out = tmp_path / "bundle"
    assert main(["explain", "--root", str(ROOT), "--verdict", str(project.folder / "reports" / "latest" /
                                                                    "verdict.json"), "--out", str(out)]) == 1
    said = capsys.readouterr()
    assert f"the image of {CASE} at {port.commits['edge'][:8]} departs from the reference: the images part at the " \
           "edges" in said.out
    assert "time_render(case='c02_xds_xbeam_quirk'): a timing step not confirmed (undecided)" in said.err


def test_an_unreadable_row_of_the_recording_is_one_line_naming_it(recorded, capsys):
    port, project = recorded
    row = project.outcomes(MACHINE) / f"{port.commits['docs1']}.json"
    row.write_text("{")
    assert main(["regressions", "--repo", str(project.folder), "--machine", MACHINE]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"detsim-track: {row}: not a readable row of a target's recording") and "\n" not in err
    assert not (project.folder / "reports" / "latest").exists()


def test_a_target_whose_measures_a_dask_cluster_took_says_so_and_where_the_timings_were_taken(recorded, capsys):
    port, project = recorded
    workers = {"base": "tcp://10.0.0.7:40001", "docs1": "tcp://10.0.0.7:40001", "edge": "tcp://10.0.0.8:40002"}
    for name in ("base", "docs1"):  # as a recording with --workers stores them (docs1: base's results)
        row_file = project.outcomes(MACHINE) / f"{port.commits[name]}.json"
        row = json.loads(row_file.read_text())
        row["cases"][CASE][cluster_recording.WORKER] = workers[name]
        row_file.write_text(json.dumps(row))
    assert main(["regressions", "--repo", str(project.folder), "--machine", MACHINE, "--remeasure", "0"]) == 1
    note = (f"where it was measured: the timings on machine {MACHINE} alone (the machine this history belongs to); "
            "parity, image hashes, reproducibility, instruction counts and peak memory of 2 of the 3 commits judged "
            "by 1 Dask worker address(es) of recordings that stored no name on 10.0.0.7 (`detsim-track record "
            "--workers/--scheduler`), of the other 1 on "
            f"machine {MACHINE}")
    assert note in _verdict(project)["notes"]
    assert note in (project.folder / "reports" / "latest" / "verdict.txt").read_text()


def test_the_re_timing_installs_with_the_spec_the_recording_was_made_with(recorded, renders_take, tmp_path):
    port, project = recorded
    elsewhere = tmp_path / "specs" / "port.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text((port.root / "detsim-target.toml").read_text())
    project.write(load_spec(port.root, elsewhere), tmp_path / "detsim", MACHINE)
    renders = renders_take({port.commits["docs1"]: 0.4, port.commits["edge"]: 0.4})
    assert main(["regressions", "--repo", str(project.folder), "--machine", MACHINE]) == 1
    assert {spec.source.resolve() for spec, _ in renders} == {elsewhere.resolve()}


def test_a_target_that_cannot_be_installed_leaves_its_step_undecided_naming_why(recorded, capsys):
    port, project = recorded
    conf = json.loads(project.config.read_text())
    conf["detsim_target"] = str(port.root.resolve() / "moved")  # the target's folder is gone
    project.config.write_text(json.dumps(conf))
    assert main(["regressions", "--repo", str(project.folder), "--machine", MACHINE]) == 1
    [timing] = [f for f in _verdict(project)["regressions"] if f["family"] == "timing"]
    assert timing["confirmation"] == "undecided"
    assert f"not re-measured: {port.root.resolve() / 'moved'}: the target is not a folder" \
        in timing["confirmation_evidence"]


@pytest.mark.slow
@pytest.mark.parametrize("planted", ["unchanged", "slower"])
def test_a_real_targets_suspect_is_re_timed_from_its_installs(tmp_path, monkeypatch, capsys, planted):
    """A planted port's latest commit recorded x1.6 slower than base: docs1 (the same package: noise) or a commit
    that spends four times the CPU time (REGRESSED), both commits built and rendered for real."""
    monkeypatch.setattr(confirm, "CACHE", tmp_path / "confirmations.json")
    port = make_port(tmp_path, GOLDEN, render="copy")
    latest = "docs1" if planted == "unchanged" else "slower"
    if planted == "slower":
        plant(port, "slower", SLOW=3.0)
    project = _record(tmp_path, port, [("base", None, 1e-9, 1.0, None), (latest, None, 1e-9, 1.6, None)])
    expected = {"unchanged": 0, "slower": 1}[planted]
    assert main(["regressions", "--repo", str(project.folder), "--machine", MACHINE]) == expected
    [timing] = [f for f in _verdict(project)["regressions"] if f["family"] == "timing"]
    assert timing["confirmation"] == {"unchanged": "noise", "slower": "confirmed"}[planted], timing
    screen = capsys.readouterr().out
    assert ("REGRESSED timing" in screen) == (planted == "slower") and "UNDECIDED" not in screen
