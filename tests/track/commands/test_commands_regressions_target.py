"""``detsim-track regressions`` on a target's recording (a project whose asv.conf.json names another
repository): the verdict names the recording's folder, so that ``publish`` and ``explain`` show where a
parity finding's image departs with no flag; it says how many commits took a twin's results; its timing
suspects are never re-measured and are decided by ``detsim-track bisect --slower``; the target's peak
memory is judged as memory. The asv results here are written by the test, as the recording's asv run
writes them (the recording through asv itself: test_commands_record.py, slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from detsim.track.cli import main
from detsim.track.commands import publish
from detsim.track.judge import confirm
from detsim.track.target.recording import Project
from detsim.track.target.spec import load_spec
from planted_history import git
from planted_port import CASE, make_port, start_results, write_results
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


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """A planted port's first three commits recorded on m1: base measured, docs1 taking base's results (the
    same sources), edge measured, its image departing at the frame's edge (1 - r x1e5) and its whole
    process x1.5 slower; the port checked out at edge."""
    monkeypatch.setattr(confirm, "default_measure", lambda root: pytest.fail("a target's step was re-measured"))
    monkeypatch.setattr(confirm, "CACHE", tmp_path / "confirmations.json")
    port = make_port(tmp_path, GOLDEN, render="copy")
    git(port.root, "checkout", "-q", port.commits["edge"])
    spec = load_spec(port.root)
    project = Project.of(spec, tmp_path / "detsim")
    project.write(spec, tmp_path / "detsim", MACHINE)
    results = project.results(MACHINE)
    start_results(results, MACHINE, BENCHMARKS)
    outcomes = project.outcomes(MACHINE)
    outcomes.mkdir(parents=True)
    plan = [("base", None, 1e-9, 1.0, None), ("docs1", "base", 1e-9, 1.0, None),
            ("edge", None, 1e-4, 1.5, edge_departure())]
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
    return port, project


def _verdict(project: Project) -> dict:
    """The stored verdict of the only machine judged."""
    [report] = json.loads((project.folder / "reports" / "latest" / "verdict.json").read_text())["machines"].values()
    return report


def test_a_targets_verdict_names_its_recording_counts_reuse_and_advises_bisect(recorded, capsys):
    """(The command is never cut, however long the target's path: ``tmp_path`` under xdist makes it over the
    screen's width.)"""
    port, project = recorded
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
    good, bad = port.commits["docs1"], port.commits["edge"]
    assert timing["confirmation"] == "undecided" and "a target's step is never re-measured" \
        in timing["confirmation_evidence"]
    assert timing["decide_command"] == (f"detsim-track bisect {good[:10]} {bad[:10]} --target "
                                        f"{port.root.resolve()} --slower {CASE} 25")
    assert f"decide: {timing['decide_command']}" in screen and "--remeasure-budget" not in screen
    assert "REGRESSED parity" in screen and "3 commits recorded" in screen and "; 1 reused a twin's results)" in screen


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


def test_the_bisect_advice_names_a_spec_that_lives_elsewhere(recorded, capsys, tmp_path):
    port, project = recorded
    elsewhere = tmp_path / "specs" / "port.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text((port.root / "detsim-target.toml").read_text())
    project.write(load_spec(port.root, elsewhere), tmp_path / "detsim", MACHINE)
    assert main(["regressions", "--repo", str(project.folder), "--machine", MACHINE]) == 1
    [timing] = [f for f in _verdict(project)["regressions"] if f["family"] == "timing"]
    assert f"--target {port.root.resolve()} --spec {elsewhere.resolve()} --slower {CASE} 25" in timing["decide_command"]


def test_the_bisect_advice_names_the_targets_folder_not_its_repositorys_top(recorded, capsys):
    port, project = recorded
    conf = json.loads(project.config.read_text())
    assert conf["detsim_target"] == str(port.root.resolve())  # written by the recording
    # a target whose spec sits in a subfolder of its repository: asv's repo is the top, --target the subfolder
    conf["detsim_target"] = str(port.root.resolve() / "python")
    project.config.write_text(json.dumps(conf))
    assert main(["regressions", "--repo", str(project.folder), "--machine", MACHINE]) == 1
    [timing] = [f for f in _verdict(project)["regressions"] if f["family"] == "timing"]
    assert f"--target {port.root.resolve() / 'python'} --slower {CASE} 25" in timing["decide_command"]
