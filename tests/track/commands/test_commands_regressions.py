"""``detsim-track regressions`` end to end, over committed asv results (tests/data/asv/).

Each fixture folder is a project root as the command sees it (asv.conf.json, results/asv/<machine>/,
results/hashes/, results/baselines/), with 2-6 recorded commits:

    good        flat history                                  -> exit 0
    regressed   2x timings at commit 2, parity break and hash change at 3, a second hash change at 4
    noisy       timings bouncing by +-35%, then the whole machine slows down 1.8x -> suspects, decided
                by re-measuring (faked by the ``remeasured_as`` fixture)
    unmeasured  a benchmark failed at the latest commit        -> exit 2
    unbuilt     the latest commit measured nothing             -> exit 2
    otherhost   hashes recorded on another CPU class: the determinism tracks skipped, said so
    corrupt     the latest results file is cut in half         -> a one-line error naming it, exit 2
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from detsim.track import cli
from detsim.track.base.golden import load_cases
from detsim.track.commands import regressions
from detsim.track.judge import confirm
from detsim.track.judge.text import WIDTH
from detsim.track.judge.thresholds import KERNEL, LAUNCHES

DATA = Path(__file__).resolve().parents[2] / "data" / "asv"
GOLDEN = Path(__file__).resolve().parents[2] / "golden"
MACHINE_DIR = Path("results") / "asv" / "fixture-2cpu"


@pytest.fixture(autouse=True)
def _no_measuring_here(monkeypatch, tmp_path):
    """No test of the verdict measures for real: re-measuring is faked (``remeasured_as``) where a test
    has suspects, and its outcomes are kept in the test's own folder, never beside the fixture data."""
    def refuse(root):
        def measure(*args):
            raise AssertionError("a suspect was re-measured for real; use the remeasured_as fixture")
        return measure
    monkeypatch.setattr(confirm, "default_measure", refuse)
    monkeypatch.setattr(confirm, "machines_here", lambda: None)
    monkeypatch.setattr(confirm, "CACHE", tmp_path / "confirmations.json")


@pytest.fixture(autouse=True)
def _nothing_written_beside_the_fixtures():
    """Every test writes its full reports under its own folder (``--out-root``), never into tests/data."""
    yield
    assert not list(DATA.glob("*/reports")), "a test wrote a report beside the fixture data"


def _commits(root: Path) -> list[str]:
    files = [json.loads(p.read_text()) for p in (root / MACHINE_DIR).glob("*-virtualenv*.json")]
    return [f["commit_hash"] for f in sorted(files, key=lambda f: f["date"])]


def _run(root: Path, tmp_path: Path, *extra: str) -> tuple[int, dict | None]:
    """The exit and the ``--json`` verdict: the only machine's where one was judged, else the whole."""
    out = tmp_path / "report.json"
    code = cli.main(["regressions", "--repo", str(root), "--json", str(out), "--out-root", str(tmp_path / "reports"),
                     *extra])
    data = json.loads(out.read_text()) if out.exists() else None
    return code, (next(iter(data["machines"].values())) if data and len(data["machines"]) == 1 else data)


def test_flat_history_reports_nothing(tmp_path, capsys):
    code, report = _run(DATA / "good", tmp_path)
    assert code == 0
    assert report["regressions"] == [] and report["unmeasured"] == []
    assert report["commits"] == _commits(DATA / "good")
    assert "summary: nothing to act on; 9 measured, 0 noise, 0 skipped; exit 0" in capsys.readouterr().out


def test_bare_command_runs_the_regression_report(tmp_path, capsys):
    assert cli.main(["--repo", str(DATA / "good"), "--out-root", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("detsim-track: machine fixture-2cpu, 5 commits")


def test_regressions_are_named_with_their_commits_values_and_ratios(tmp_path, capsys, remeasured_as):
    remeasured_as(default=2.0)
    commits = _commits(DATA / "regressed")
    code, report = _run(DATA / "regressed", tmp_path)
    assert code == 1
    found = {(r["family"], r.get("case") or r["params"]): r for r in report["regressions"]}
    assert set(found) == {
        ("timing", "(pixels=128, dtype='float64')"), ("timing", "(pixels=256, dtype='float64')"),
        ("throughput", ""), ("parity", "a01_cubic_mosflm_center"),
        ("determinism", "a01_cubic_mosflm_center"), ("determinism", "o01_polar_0.9"),
    }
    for key in (("timing", "(pixels=128, dtype='float64')"), ("timing", "(pixels=256, dtype='float64')"), ("throughput", "")):
        r = found[key]
        assert (r["last_good"], r["first_bad"]) == (commits[1], commits[2])
    timing = found[("timing", "(pixels=128, dtype='float64')")]
    assert 1.8 < timing["ratio"] < 2.2
    assert timing["confirmation"] == "confirmed" and timing["remeasured_ratio"] > 1.9
    steps = [e for e in report["events"] if e["family"] == "timing" and e["commit"] == commits[2]]
    assert len(steps) == 2 and {e["label"] for e in steps} == {"REGRESSED"}  # the history's suspect, confirmed
    assert 0.45 < found[("throughput", "")]["ratio"] < 0.55

    parity = found[("parity", "a01_cubic_mosflm_center")]
    assert (parity["last_good"], parity["first_bad"]) == (commits[2], commits[3])
    assert parity["new_r"] == pytest.approx(0.9937) and parity["old"] == 0.0

    hashes = {p.stem: json.loads(p.read_text()) for p in (DATA / "regressed" / "results" / "hashes").glob("*.json")}
    first = found[("determinism", "a01_cubic_mosflm_center")]
    assert (first["last_good"], first["first_bad"]) == (commits[2], commits[3])
    assert first["old_sha256"] == hashes[commits[2]]["cases"]["a01_cubic_mosflm_center"]["sha256"]
    assert first["new_sha256"] == hashes[commits[4]]["cases"]["a01_cubic_mosflm_center"]["sha256"]
    second = found[("determinism", "o01_polar_0.9")]
    assert (second["last_good"], second["first_bad"]) == (commits[3], commits[4])

    out = capsys.readouterr().out.splitlines()
    assert f"REGRESSED parity a01_cubic_mosflm_center: r 1.000000000 -> 0.993700000 since {commits[3][:8]}" in out
    assert (f"REGRESSED timing EngineSweep.time_simulate(128, float64): 20.2 ms -> 40.1 ms, x1.99 "
            f"since {commits[2][:8]}") in out
    assert out[-2] == "summary: 4 regressed, 2 changed; 9 measured, 0 noise, 0 skipped; exit 1"


def test_a_machine_wide_slowdown_is_re_measured_never_excused_by_the_machine_reference(tmp_path, capsys, remeasured_as):
    # the whole machine slowed down 1.8x over the same commits (its reference says so); that is no evidence
    # about detsim, since it was not measured in the same rounds as the step: each step is re-measured, and
    # the re-measurement (here: no difference) decides
    measured = remeasured_as(default=1.0)
    code, report = _run(DATA / "noisy", tmp_path)
    assert code == 0 and report["regressions"] and len(measured) == len(report["regressions"])
    assert {r["confirmation"] for r in report["regressions"]} == {"noise"}
    assert not any("machine reference" in r["confirmation_evidence"] for r in report["regressions"])
    out = capsys.readouterr().out
    assert "NOISE" not in out and "REGRESSED" not in out  # noise needs no action: counted in the summary only
    assert out.splitlines()[-2] == "summary: nothing to act on; 9 measured, 3 noise, 0 skipped; exit 0"
    assert _run(DATA / "noisy", tmp_path, "-v")[0] == 0
    verbose = capsys.readouterr().out
    assert verbose.count("NOISE timing") == 2 and "machine reference" not in verbose


def noisy_copy(tmp_path: Path) -> Path:
    """A copy of the noisy fixture (its steps are suspects), so that re-measured outcomes stay in the test's folder."""
    root = tmp_path / "noisy"
    shutil.copytree(DATA / "noisy", root)
    return root


def test_suspects_that_re_measuring_calls_noise_are_not_regressions(tmp_path, capsys, remeasured_as):
    measured = remeasured_as(default=1.0)
    code, report = _run(noisy_copy(tmp_path), tmp_path, "--verbose")
    assert code == 0 and report["regressions"] and len(measured) == len(report["regressions"])
    assert {r["confirmation"] for r in report["regressions"]} == {"noise"}
    steps = {(r["benchmark"], r["params"], r["first_bad"]) for r in report["regressions"]}
    assert {e["label"] for e in report["events"] if (e["benchmark"], e["params"], e["commit"]) in steps} == {"NOISE"}
    out = capsys.readouterr().out
    assert "NOISE timing" in out and "rounds of fresh processes sampling in turn" in out and "summary: nothing to act on; " in out


def test_each_re_measurement_is_announced_on_stderr_as_it_starts(tmp_path, capsys, remeasured_as):
    remeasured_as(default=1.0)
    code, report = _run(noisy_copy(tmp_path), tmp_path)
    captured = capsys.readouterr()
    said = [line for line in captured.err.splitlines() if line.startswith("re-measuring timing suspect ")]
    assert len(said) == len(report["regressions"]) == 3 and said[0].startswith("re-measuring timing suspect 1 of 3 ")
    assert "re-measuring" not in captured.out  # the verdict alone on stdout


def test_a_folder_without_asv_conf_json_is_refused_naming_repo(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["regressions", "--repo", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"detsim-track: no asv.conf.json in {tmp_path.resolve()}: run this in the "
                                       "project's checkout, or pass --repo DIR\n")


def test_a_re_measured_step_is_a_regression_naming_the_evidence_that_decided(tmp_path, capsys, remeasured_as):
    commits = _commits(DATA / "noisy")
    measured = remeasured_as(default=1.8)
    code, report = _run(noisy_copy(tmp_path), tmp_path, "-v")
    assert code == 1 and {r["confirmation"] for r in report["regressions"]} == {"confirmed"}
    assert {(a, b) for _, a, b in measured} == {(commits[-2], commits[-1])}
    assert all(r["remeasured_ratio"] > 1.7 and r["remeasured_p"] < 0.01 for r in report["regressions"])
    throughput = [t for t, _, _ in measured if t.larger_is_better]
    assert throughput and all(t.benchmark.endswith("track_pixel_steps_per_second") for t in throughput)
    out = capsys.readouterr().out
    assert "REGRESSED timing" in out and "slower by more than 50%" in out


def test_suspects_not_re_measured_are_undecided_with_the_command_that_decides_them(tmp_path, capsys, remeasured_as):
    measured = remeasured_as(default=2.0)
    code, report = _run(noisy_copy(tmp_path), tmp_path, "--remeasure", "0")
    assert code == 0 and measured == [] and {r["confirmation"] for r in report["regressions"]} == {"undecided"}
    repo = tmp_path / "noisy"
    # the run's --repo goes into the command, so that it pastes where the run was typed
    assert all(r["decide_command"].startswith(f"detsim-track regressions --repo {repo} --machine ")
               for r in report["regressions"])
    out = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("UNDECIDED timing ") for line in out) == 2
    [decide] = [line for line in out if line.startswith("decide: ")]  # one command decides them all
    assert decide.startswith(f"decide: {report['regressions'][0]['decide_command']}")
    assert "3 undecided" in out[-2]


def test_a_step_judged_once_is_not_re_measured_again(tmp_path, remeasured_as):
    root = noisy_copy(tmp_path)
    measured = remeasured_as(default=1.0)
    first = _run(root, tmp_path)
    count = len(measured)
    second = _run(root, tmp_path)
    assert count and len(measured) == count and first == (0, first[1]) and second[0] == 0
    assert all("(re-measured on " in r["confirmation_evidence"] for r in second[1]["regressions"])


def test_an_accepted_change_is_not_reported_again(tmp_path):
    root = tmp_path / "regressed"
    shutil.copytree(DATA / "regressed", root)
    slowdown = _commits(root)[2]
    conf = (root / "asv.conf.json").read_text().replace(
        '"regressions_first_commits": {', '"regressions_first_commits": {\n        "bench_engine\\\\.(EngineSweep|Throughput)\\\\.": "%s",' % slowdown)
    (root / "asv.conf.json").write_text(conf)
    code, report = _run(root, tmp_path)
    assert code == 1
    assert {r["family"] for r in report["regressions"]} == {"parity", "determinism"}


def test_a_failed_benchmark_at_the_latest_commit_exits_2(tmp_path, capsys):
    code, report = _run(DATA / "unmeasured", tmp_path)
    assert code == 2
    assert report["unmeasured"] == ["bench_engine.EngineSweep.time_simulate(pixels=128, dtype='float64')",
                                    "bench_engine.EngineSweep.time_simulate(pixels=256, dtype='float64')"]
    assert "NOT MEASURED" in capsys.readouterr().out


def test_a_commit_that_did_not_build_exits_2(tmp_path, capsys):
    code, report = _run(DATA / "unbuilt", tmp_path)
    assert code == 2 and report["built"] is False
    assert any("did not build" in note for note in report["notes"])
    out = capsys.readouterr().out.splitlines()
    assert out[1] == f"NOT MEASURED at {report['latest'][:8]}: nothing (the commit did not build, or its suite did not import)"
    _run(DATA / "unbuilt", tmp_path, "-v")
    assert "NOT MEASURED" not in capsys.readouterr().out  # the full report says it in a note


def test_hashes_from_another_cpu_class_are_skipped_and_said_so(tmp_path):
    code, report = _run(DATA / "otherhost", tmp_path)
    assert code == 0 and report["skipped"] == 2
    [note] = [n for n in report["notes"] if n.startswith("image hashes not compared")]
    assert "AuthenticAMD AVX2" in note and "baselines --refresh" in note


def test_a_corrupt_results_file_is_one_line_naming_it(tmp_path, capsys):
    code, report = _run(DATA / "corrupt", tmp_path)
    err = capsys.readouterr().err
    assert code == 2 and report is None
    assert len(err.strip().splitlines()) == 1
    assert "corrupt JSON" in err and str(MACHINE_DIR) in err


def test_no_results_at_all_exits_2(tmp_path, capsys):
    shutil.copy(DATA / "good" / "asv.conf.json", tmp_path / "asv.conf.json")
    assert cli.main(["regressions", "--repo", str(tmp_path)]) == 2
    assert not (tmp_path / "reports").exists()
    assert "nothing recorded yet" in capsys.readouterr().err


def test_a_benchmark_that_failed_as_a_whole_is_not_measured(tmp_path):
    root = tmp_path / "good"
    shutil.copytree(DATA / "good", root)
    latest = max((root / MACHINE_DIR).glob("*-virtualenv*.json"), key=lambda p: json.loads(p.read_text())["date"])
    data = json.loads(latest.read_text())
    row = data["results"]["bench_engine.EngineSweep.time_simulate"]
    data["results"]["bench_engine.EngineSweep.time_simulate"] = [None, *row[1:5]]  # how asv stores a crash
    latest.write_text(json.dumps(data))
    code, report = _run(root, tmp_path)
    assert code == 2 and len(report["unmeasured"]) == 2


def test_an_unknown_machine_is_one_line_naming_the_recorded_ones(tmp_path, capsys):
    code, report = _run(DATA / "good", tmp_path, "--machine", "elsewhere")
    err = capsys.readouterr().err
    assert (code, report) == (2, None)
    assert "no results for machine 'elsewhere' (recorded: fixture-2cpu)" in err and len(err.strip().splitlines()) == 1


def test_json_never_replaces_a_file_that_is_not_a_previous_report(tmp_path, capsys):
    baseline = tmp_path / "golden_hashes.json"
    shutil.copy(DATA / "good" / "results" / "baselines" / "golden_hashes.json", baseline)
    before = baseline.read_bytes()
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes\n")
    for path in (baseline, mine):
        code = cli.main(["regressions", "--repo", str(DATA / "good"), "--json", str(path), "--out-root", str(tmp_path)])
        out, err = capsys.readouterr()
        assert code == 2 and out == ""  # refused before the work: no verdict printed
        assert len(err.strip().splitlines()) == 1 and str(path) in err and "refusing to replace" in err
    assert baseline.read_bytes() == before and mine.read_text() == "my notes\n"


def test_json_replaces_its_own_previous_report(tmp_path, remeasured_as):
    remeasured_as(default=2.0)
    code, first = _run(DATA / "good", tmp_path)
    assert code == 0 and json.loads((tmp_path / "report.json").read_text())["report"] == "detsim-track regressions"
    code, again = _run(DATA / "regressed", tmp_path)  # same --json path: a rerun updates it
    assert code == 1 and again["regressions"]


@pytest.mark.parametrize("where", ["folder", "under_a_file", "read_only"])
def test_json_that_cannot_be_written_is_one_line_before_the_work(tmp_path, capsys, where):
    target = {"folder": tmp_path, "under_a_file": tmp_path / "f" / "x.json",
              "read_only": Path("/sys/detsim-track-report.json")}[where]
    (tmp_path / "f").write_text("a file")
    code = cli.main(["regressions", "--repo", str(DATA / "regressed"), "--json", str(target), "--out-root",
                     str(tmp_path / "reports")])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and str(target) in err


def test_a_json_write_failing_late_keeps_the_verdicts_code(tmp_path, capsys, monkeypatch, remeasured_as):
    remeasured_as(default=2.0)
    def fail(path, data):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("detsim.track.commands.regressions.write_json", fail)
    code = cli.main(["regressions", "--repo", str(DATA / "regressed"), "--json", str(tmp_path / "r.json"),
                     "--out-root", str(tmp_path / "reports")])
    assert code == 1 and "not written (Permission denied)" in capsys.readouterr().err


def _checkout(root: Path) -> str:
    """Make ``root`` a git checkout of its own with one commit; HEAD's hash."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "one"]):
        subprocess.run([*git, *args], cwd=root, check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_a_checkout_whose_head_was_not_measured_exits_2_without_judging_an_older_commit(tmp_path, capsys):
    root = tmp_path / "good"
    shutil.copytree(DATA / "good", root)
    tip = _checkout(root)  # every recorded commit_hash is outside this history
    code, report = _run(root, tmp_path)
    out, err = capsys.readouterr()
    assert (code, report, out) == (2, None, "")
    assert len(err.strip().splitlines()) == 1 and f"HEAD {tip[:8]} was not measured" in err


def test_a_checkout_whose_head_was_measured_is_judged_at_head(tmp_path):
    root = tmp_path / "good"
    shutil.copytree(DATA / "good", root)
    tip = _checkout(root)
    latest = max((root / MACHINE_DIR).glob("*-virtualenv*.json"), key=lambda p: json.loads(p.read_text())["date"])
    old = json.loads(latest.read_text())["commit_hash"]
    latest.write_text(latest.read_text().replace(old, tip))
    (root / "results" / "hashes" / f"{old}.json").rename(root / "results" / "hashes" / f"{tip}.json")
    hashes = root / "results" / "hashes" / f"{tip}.json"
    hashes.write_text(hashes.read_text().replace(old, tip))
    code, report = _run(root, tmp_path)
    assert code == 0 and report["latest"] == tip and report["commits"] == [tip]
    assert report["notes"] == ["4 results of commits outside HEAD's history were ignored"]


def _latest_file(root: Path) -> Path:
    return max((root / MACHINE_DIR).glob("*-virtualenv*.json"), key=lambda p: json.loads(p.read_text())["date"])


@pytest.mark.parametrize("value, why", [(0.0, "not positive"), (-1.0, "not positive"),
                                        (float("inf"), "infinite"), ("abc", "not a number")])
def test_an_impossible_timing_is_one_line_naming_the_file_and_benchmark(tmp_path, capsys, value, why):
    root = tmp_path / "good"
    shutil.copytree(DATA / "good", root)
    latest = _latest_file(root)
    data = json.loads(latest.read_text())
    data["results"]["bench_engine.EngineSweep.time_simulate"][0][1] = value
    latest.write_text(json.dumps(data))  # json writes inf as Infinity, which json (and asv) reads back
    code, report = _run(root, tmp_path)
    err = capsys.readouterr().err
    assert (code, report) == (2, None) and len(err.strip().splitlines()) == 1
    assert latest.name in err and "bench_engine.EngineSweep.time_simulate result[1]" in err and why in err


@pytest.mark.parametrize("edit, message", [
    (('"bench_parity\\\\.": 0.0', '"bench_parity\\\\.": -0.5'), "regressions_thresholds['bench_parity\\\\.'] = -0.5"),
    (('"bench_parity\\\\.": 0.0', '"bench_parity\\\\.": "abc"'), "= 'abc' is not a threshold"),
    (('"bench_parity\\\\.": 0.0', '"bench_parity(": 0.0'), "'bench_parity(' is not a regular expression"),
    (('"bench_engine\\\\.Throughput\\\\.": null', '"bench_engine\\\\.Throughput\\\\.": "deadbeef"'),
     "= 'deadbeef': no such commit"),
    (('"bench_engine\\\\.Throughput\\\\.": null', '"bench_engine\\\\.Throughput\\\\.": 12'), "is not a commit hash"),
])
def test_an_impossible_asv_conf_entry_is_one_line_naming_it(tmp_path, capsys, edit, message):
    root = tmp_path / "good"
    shutil.copytree(DATA / "good", root)
    conf = root / "asv.conf.json"
    assert edit[0] in conf.read_text()
    conf.write_text(conf.read_text().replace(*edit))
    code, report = _run(root, tmp_path)
    err = capsys.readouterr().err
    assert (code, report) == (2, None) and len(err.strip().splitlines()) == 1
    assert str(conf) in err and message in err



def test_asvs_own_unbounded_interval_of_a_single_sample_is_accepted(tmp_path):
    root = tmp_path / "good"
    shutil.copytree(DATA / "good", root)
    latest = _latest_file(root)
    data = json.loads(latest.read_text())
    row, columns = data["results"]["bench_engine.EngineSweep.time_simulate"], data["result_columns"]
    row[columns.index("stats_ci_99_a")][0] = float("-inf")  # what asv stores for one sample
    row[columns.index("stats_ci_99_b")][0] = float("inf")
    latest.write_text(json.dumps(data))
    assert _run(root, tmp_path)[0] == 0


def _two_machines(tmp_path: Path) -> Path:
    """The regressed history recorded by two machines: ``threads1`` as recorded (2x timings at commit 2, a
    parity break and image changes at 3 and 4), ``threads2`` the same but with its timings flat."""
    root = tmp_path / "fleet"
    shutil.copytree(DATA / "regressed", root)
    asv = root / "results" / "asv"
    for name in ("threads1", "threads2"):
        shutil.copytree(asv / "fixture-2cpu", asv / name)
        (asv / name / "machine.json").write_text(json.dumps({"machine": name, "version": 1}))
    shutil.rmtree(asv / "fixture-2cpu")
    files = sorted((asv / "threads2").glob("*-virtualenv*.json"), key=lambda p: json.loads(p.read_text())["date"])
    first = json.loads(files[0].read_text())["results"]
    for path in files:
        data = json.loads(path.read_text())
        for name in data["results"]:
            if name.startswith("bench_engine.") and ".MachineReference." not in name:
                data["results"][name] = first[name]
        data["params"]["machine"] = "threads2"
        path.write_text(json.dumps(data))
    return root


def test_two_machines_on_one_history_are_judged_each_and_said_where_they_agree(tmp_path, capsys, remeasured_as):
    remeasured_as(default=2.0)
    root = _two_machines(tmp_path)
    code, report = _run(root, tmp_path)
    assert code == 1 and set(report["machines"]) == {"threads1", "threads2"} and report["not_judged"] == {}
    one, two = report["machines"]["threads1"], report["machines"]["threads2"]
    assert {r["family"] for r in one["regressions"]} >= {"timing", "parity", "determinism"}
    assert "timing" not in {r["family"] for r in two["regressions"]}
    assert ([r for r in one["regressions"] if r["family"] == "determinism"]
            == [r for r in two["regressions"] if r["family"] == "determinism"])
    agreement = report["agreement"]
    assert any(line.startswith("timing regression on threads1 only (threads1 ") and "nothing on threads2" in line
               for line in agreement), agreement
    assert any(line.startswith("determinism: both machines agree, ") for line in agreement), agreement
    assert any(line.startswith("parity: both machines agree, ") for line in agreement), agreement
    out = capsys.readouterr().out
    assert "detsim-track: machine threads1," in out and "detsim-track: machine threads2," in out
    assert "machines: threads1, threads2" in out
    assert out.splitlines()[-2] == "fleet: exit 1 (the worst of the machines'; 2 wins)"
    # one machine by name: its own verdict alone, as before
    code, alone = _run(root, tmp_path, "--machine", "threads2")
    assert code == 1 and alone["machine"] == "threads2" and "timing" not in {r["family"] for r in alone["regressions"]}


def test_explain_runs_on_a_regressed_verdict_only_and_keeps_its_exit_status(tmp_path, monkeypatch, remeasured_as):
    from detsim.track.commands import explain as cmd_explain

    remeasured_as(default=2.0)
    asked = []
    monkeypatch.setattr(cmd_explain, "run",
                        lambda args: asked.append((args.root, args.machine, args.verdict, args.out)) or 2)
    assert _run(DATA / "regressed", tmp_path, "--explain")[0] == 1
    [folder] = [p for p in (tmp_path / "reports").iterdir() if p.name != "latest"]  # beside the verdict it explains
    assert asked == [(DATA / "regressed", "fixture-2cpu", folder / "verdict.json", str(folder / "explain"))]
    assert _run(DATA / "good", tmp_path, "--explain")[0] == 0 and len(asked) == 1


def _wide(tmp_path: Path) -> Path:
    """The regressed history with every golden case's image changed at its parity break (one commit changed
    them all), and an engine benchmark whose CUDA and triton combinations skip on this CPU-only machine."""
    root = tmp_path / "wide"
    shutil.copytree(DATA / "regressed", root)
    commits = _commits(root)
    listing = root / "results" / "asv" / "benchmarks.json"
    benchmarks = json.loads(listing.read_text())
    names = {}
    for case in load_cases(GOLDEN):
        name = "bench_determinism.track_hash_changed_" + case.id.replace(".", "_")
        if name not in benchmarks:
            names[name] = case.id
            benchmarks[name] = {"name": name, "param_names": [], "params": [], "type": "track", "version": "1",
                                "pretty_name": f"image hash changed: {case.id}", "unit": "changed (0/1)"}
    modes = "bench_engine.EngineModes.time_simulate"
    benchmarks[modes] = {"name": modes, "param_names": ["mode", "device"], "type": "time", "unit": "seconds",
                         "params": [["'eager'", "'triton'"], ["'cpu'", "'cuda'"]], "version": "1"}
    listing.write_text(json.dumps(benchmarks))
    for path in (root / MACHINE_DIR).glob("*-virtualenv*.json"):
        data = json.loads(path.read_text())
        at = commits.index(data["commit_hash"])
        for name in names:
            data["results"][name] = [[float(at >= 3)], [], "1", 1795314300000, 0.1]
        nan = float("nan")  # how asv stores a skip (NotImplementedError)
        data["results"][modes] = [[0.01, nan, nan, nan], benchmarks[modes]["params"], "1", 1795314300000]
        path.write_text(json.dumps(data))
    return root


@pytest.fixture
def default_lines(capsys, monkeypatch):
    def run(root: Path, tmp_path: Path, *extra: str) -> list[str]:
        monkeypatch.chdir(tmp_path)  # the report's path is shown from here
        cli.main(["regressions", "--repo", str(root), "--remeasure", "0", "--out-root", str(tmp_path / "reports"),
                  *extra])
        return capsys.readouterr().out.splitlines()
    return run


@pytest.mark.parametrize("fixture", sorted(p.name for p in DATA.iterdir() if p.name != "corrupt") + ["wide", "fleet"])
def test_every_default_line_fits_the_screen(tmp_path, default_lines, fixture):
    root = {"wide": _wide, "fleet": _two_machines}.get(fixture, lambda _: DATA / fixture)(tmp_path)
    lines = default_lines(root, tmp_path)
    # a decide: line holds a command to paste, never cut: past the width it is the command alone
    wide = [line for line in lines if len(line) > WIDTH]
    assert lines and all(line.startswith("decide: ") and " (" not in line for line in wide), max(lines, key=len)
    assert sum(line.startswith("summary: ") for line in lines) == (2 if fixture == "fleet" else 1)
    assert lines[-1].startswith("full report") and lines[-1].endswith("/verdict.txt and verdict.json")


def test_a_commit_that_changed_every_image_is_one_line_and_the_skips_say_why(tmp_path, default_lines):
    root = _wide(tmp_path)
    changed_all = _commits(root)[3]
    lines = default_lines(root, tmp_path)
    changed = [line for line in lines if line.startswith("CHANGED")]
    assert changed[0].startswith("CHANGED image hash of 52 golden cases (a01, b01, c01, ")
    assert "+" in changed[0] and changed[0].endswith(f"since {changed_all[:8]}")
    assert changed[1].startswith("CHANGED image hash o01_polar_0.9: ")  # its own commit: a line of its own
    assert len(lines) == 10, "\n".join(lines)  # header, 3 timing steps, their command, parity, 2 hashes, summary, report
    assert lines[4].startswith(f"decide: detsim-track regressions --repo {root} --machine fixture-2cpu ")  # after the steps
    assert lines[-2] == ("summary: 1 regressed, 53 changed, 3 undecided; 61 measured, 0 noise, 3 skipped: "
                         "2 CUDA benchmarks (no GPU here), 1 triton benchmark (GPU only); exit 1")


def test_the_full_report_is_always_written_beside_the_project_and_equals_verbose_and_json(tmp_path, capsys,
                                                                                          monkeypatch):
    root = tmp_path / "regressed"
    shutil.copytree(DATA / "regressed", root)
    monkeypatch.setattr(regressions, "utc_stamp", lambda: "20260101T000000Z")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["regressions", "--repo", str(root), "--remeasure", "0", "--json", str(tmp_path / "r.json")]) == 1
    default = capsys.readouterr().out.splitlines()
    folder = root / "reports" / "20260101T000000Z"
    assert default[-1] == "full report, 1 note (-v prints it): regressed/reports/20260101T000000Z/verdict.txt and verdict.json"
    assert json.loads((folder / "verdict.json").read_text()) == json.loads((tmp_path / "r.json").read_text())
    assert cli.main(["regressions", "--repo", str(root), "--remeasure", "0", "-v"]) == 1  # a rerun replaces its own
    verbose = capsys.readouterr().out
    assert (folder / "verdict.txt").read_text() == verbose and len(verbose.splitlines()) > len(default) - 3
    assert sorted(p.name for p in folder.iterdir()) == ["verdict.json", "verdict.md", "verdict.txt"]


@pytest.mark.parametrize("foreign", ["verdict.txt", "verdict.json", "verdict.md"])
def test_a_report_folder_holding_files_not_ours_is_refused_before_the_work(tmp_path, capsys, monkeypatch, foreign):
    monkeypatch.setattr(regressions, "utc_stamp", lambda: "20260101T000000Z")
    folder = tmp_path / "reports" / "20260101T000000Z"
    folder.mkdir(parents=True)
    (folder / foreign).write_text("my notes\n")
    code = cli.main(["regressions", "--repo", str(DATA / "regressed"), "--out-root", str(tmp_path / "reports")])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1 and "refusing to replace" in err
    assert [p.name for p in folder.iterdir()] == [foreign] and (folder / foreign).read_text() == "my notes\n"


@pytest.mark.parametrize("failing", [2, 3])  # the text, the Markdown file
def test_a_report_that_cannot_be_written_keeps_the_verdict_and_leaves_no_half(tmp_path, capsys, monkeypatch, failing):
    calls = []

    def fail_second(path, text):
        calls.append(path)
        if len(calls) == failing:
            raise OSError(28, "No space left on device")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    monkeypatch.setattr(regressions, "atomic_write_text", fail_second)
    code = cli.main(["regressions", "--repo", str(DATA / "good"), "--out-root", str(tmp_path / "reports")])
    out, err = capsys.readouterr()
    assert code == 2 and "not written (No space left on device)" in err and "summary: " in out
    assert not [p for p in (tmp_path / "reports").rglob("*") if p.is_file()]


def _unbuilt_in_the_middle(tmp_path: Path) -> tuple[Path, str]:
    """The good history with its middle commit's results all null, as asv stores a commit that did not build."""
    root = tmp_path / "good"
    shutil.copytree(DATA / "good", root)
    middle = _commits(root)[2]
    for path in (root / MACHINE_DIR).glob("*-virtualenv*.json"):
        data = json.loads(path.read_text())
        if data["commit_hash"] == middle:
            data["results"] = {name: [None, *row[1:]] for name, row in data["results"].items()}
            path.write_text(json.dumps(data))
    return root, middle


def test_a_commit_that_did_not_build_in_the_middle_of_the_range_is_named(tmp_path, capsys):
    root, middle = _unbuilt_in_the_middle(tmp_path)
    code, report = _run(root, tmp_path)
    assert code == 0 and report["unbuilt"] == [middle]  # the latest commit was measured: the verdict stands
    assert f"commit {middle[:8]} did not build or its suite did not import: nothing was measured" in report["notes"]
    out = capsys.readouterr().out.splitlines()
    assert (f"NOT MEASURED: 1 earlier commit measured nothing (did not build, or the suite did not import): "
            f"{middle[:8]}") in out


def test_a_deleted_machine_file_is_one_line_naming_it(tmp_path, capsys):
    root = tmp_path / "good"
    shutil.copytree(DATA / "good", root)
    (root / MACHINE_DIR / "machine.json").unlink()
    for extra in ([], ["--machine", "fixture-2cpu"]):
        code, report = _run(root, tmp_path, *extra)
        err = capsys.readouterr().err
        assert (code, report) == (2, None) and len(err.strip().splitlines()) == 1
        assert f"{root / MACHINE_DIR / 'machine.json'}: missing" in err


def test_control_characters_of_a_subject_are_escaped_on_the_terminal_and_in_verdict_txt(tmp_path, capsys):
    root = tmp_path / "good"
    shutil.copytree(DATA / "good", root)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    hostile = "clear\x1b[2J\x1b]0;owned\x07 then \x9b31m"
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", hostile]):
        subprocess.run([*git, *args], cwd=root, check=True, capture_output=True)
    tip = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True,
                         text=True).stdout.strip()
    latest = _latest_file(root)
    old = json.loads(latest.read_text())["commit_hash"]
    latest.write_text(latest.read_text().replace(old, tip))
    code, report = _run(root, tmp_path, "-v")
    out = capsys.readouterr().out
    assert code == 0 and report["subjects"][tip] == hostile  # the record keeps the subject as it is
    text = (tmp_path / "reports" / "latest" / "verdict.txt").read_text()
    for shown in (out, text):
        assert not any(c in shown for c in "\x1b\x07\x9b") and r'"clear\x1b[2J\x1b]0;owned\x07 then \x9b31m"' in shown
    _run(root, tmp_path)
    assert r"\x1b[2J" in capsys.readouterr().out.splitlines()[0]


STARTING = """
import importlib.abc, os, signal, sys
class Interrupt(importlib.abc.MetaPathFinder):  # Ctrl-C arrives while {module} loads
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Interrupt())
from detsim.track.cli import main
sys.exit(main(["regressions", "--repo", {repo!r}, "--out-root", {out!r}]))
"""


@pytest.mark.parametrize("module", ["detsim.host.signals", "detsim.track.commands.regressions",
                                    "detsim.track.judge.analysis"])
def test_ctrl_c_while_the_command_starts_exits_130_without_a_traceback(tmp_path, module):
    import sys

    code = STARTING.format(module=module, repo=str(DATA / "good"), out=str(tmp_path / "reports"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (130, "") and not (tmp_path / "reports").exists()


def test_the_decide_command_carries_the_repo_as_typed_and_runs_as_pasted(tmp_path, capsys, monkeypatch, remeasured_as):
    remeasured_as(default=1.0)
    shutil.copytree(DATA / "noisy", tmp_path / "my demo")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["regressions", "--repo", "my demo", "--remeasure", "0"]) == 0
    [decide] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("decide: ")]
    command = decide.removeprefix("decide: ").split(" (")[0]
    assert command.startswith("detsim-track regressions --repo 'my demo' --machine fixture-2cpu ")
    import shlex
    assert cli.main(shlex.split(command)[1:]) == 0  # pasted: it re-measures, and every step is noise here
    assert "UNDECIDED" not in capsys.readouterr().out


def test_the_markdown_verdict_is_written_beside_the_others_and_appended_to_the_job_summary(
        tmp_path, capsys, monkeypatch, remeasured_as):
    remeasured_as(default=2.0)
    summary = tmp_path / "summary.md"
    summary.write_text("# the tests job\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, report = _run(DATA / "regressed", tmp_path)
    screen = capsys.readouterr().out.splitlines()
    [folder] = [p for p in (tmp_path / "reports").iterdir() if not p.is_symlink()]
    assert sorted(p.name for p in folder.iterdir()) == ["verdict.json", "verdict.md", "verdict.txt"]
    markdown = (folder / "verdict.md").read_text()
    assert markdown.startswith("## detsim-track verdict: exit 1, something regressed\n") and code == 1
    link = markdown.split("[status.html](", 1)[1].split(")", 1)[0]  # from the report folder to the project's page
    assert (folder / link).resolve() == DATA / "regressed" / "reports" / "html" / "status.html"
    parity = next(line for line in screen if line.startswith("REGRESSED parity a01_cubic_mosflm_center"))
    assert f"\n{parity}\n" in markdown  # the terminal's line, word for word
    assert markdown.count("\nREGRESSED ") + markdown.count("\nCHANGED ") == len(report["regressions"]) == 6
    assert summary.read_text() == "# the tests job\n" + markdown


def _device_costs(tmp_path: Path) -> tuple[Path, list[str]]:
    """The flat history with the device costs counted on the CPU (benchmarks/bench_device_cost.py): launches per
    render flat on every path until commit 2, where the triton path launches a kernel per chunk again (x50),
    and the fused kernel clean until commit 3, where it spills 24 bytes per thread; the thresholds are the
    table's own rows."""
    root = tmp_path / "device"
    shutil.copytree(DATA / "good", root)
    commits = _commits(root)
    conf = root / "asv.conf.json"
    text = json.loads("\n".join(line for line in conf.read_text().splitlines() if not line.strip().startswith("//")))
    text["regressions_thresholds"].update({row.asv_regex: row.value for row in (LAUNCHES, KERNEL)})
    conf.write_text(json.dumps(text))
    listing = root / "results" / "asv" / "benchmarks.json"
    benchmarks = json.loads(listing.read_text())
    modes, dtypes = [["'eager'", "'compiled'", "'triton'"]], [["'float32'", "'float64'"]]
    tracks = {"bench_device_cost.LaunchesPerRender.track_launches": (["mode"], modes, "launches"),
              "bench_device_cost.FusedKernel.track_local_bytes": (["dtype"], dtypes, "local bytes"),
              "bench_device_cost.FusedKernel.track_registers": (["dtype"], dtypes, "registers")}
    for name, (names, params, unit) in tracks.items():
        benchmarks[name] = {"name": name, "param_names": names, "params": params, "type": "track", "unit": unit,
                            "version": "1"}
    listing.write_text(json.dumps(benchmarks))
    for path in (root / MACHINE_DIR).glob("*-virtualenv*.json"):
        data = json.loads(path.read_text())
        at = commits.index(data["commit_hash"])
        launches = [289, 127, 3 * (50 if at >= 2 else 1)]  # triton: one fused launch per block of 3, then x50
        spilled = [24 if at >= 3 else 0, 0]
        for name, values in zip(tracks, (launches, spilled, [96, 128])):
            data["results"][name] = [values, tracks[name][1], "1", 1795314300000, 0.1]
        path.write_text(json.dumps(data))
    return root, commits


def test_a_commit_that_launches_a_kernel_per_chunk_again_is_flagged_at_that_commit(tmp_path):
    root, commits = _device_costs(tmp_path)
    code, report = _run(root, tmp_path)
    assert code == 1
    found = {(r["benchmark"], r["params"]): r for r in report["regressions"]}
    launches = found.pop(("bench_device_cost.LaunchesPerRender.track_launches", "(mode='triton')"))
    assert (launches["family"], launches["first_bad"], launches["last_good"]) == ("cost", commits[2], commits[1])
    assert (launches["old"], launches["new"], launches["label"]) == (3, 150, "REGRESSED")
    spill = found.pop(("bench_device_cost.FusedKernel.track_local_bytes", "(dtype='float32')"))
    assert (spill["family"], spill["first_bad"], spill["last_good"]) == ("cost", commits[3], commits[2])
    assert found == {}  # the flat paths, dtypes and registers are not flagged


def test_detsims_own_commits_measured_on_a_cluster_are_said_so_from_the_sidecar_and_a_bad_one_named(tmp_path, capsys):
    from detsim.track.base.where import WHERE_FILE, Taken, write_where

    root = tmp_path / "good"
    shutil.copytree(DATA / "good", root)
    commits = _commits(root)
    write_where(root / MACHINE_DIR, [], [Taken(commits[-1], "r2", "tcp://127.0.0.1:4001"),
                                         Taken(commits[-1], "r2", "tcp://127.0.0.1:4002"),
                                         Taken(commits[-2], "r1", "tcp://127.0.0.1:3001")])
    code, report = _run(root, tmp_path)
    assert code == 0
    [note] = [n for n in report["notes"] if n.startswith("where it was measured")]
    assert note == ("where it was measured: the timings on machine fixture-2cpu alone (the machine this history "
                    "belongs to); instruction counts, device costs, parity, image hashes, reproducibility and peak "
                    f"memory of 2 of the {len(commits)} commits judged by Dask workers in 2 recordings (1 + 2 worker "
                    "processes) on 127.0.0.1 (`detsim-track record --workers/--scheduler`), of the other "
                    f"{len(commits) - 2} on machine fixture-2cpu")
    capsys.readouterr()
    (root / MACHINE_DIR / WHERE_FILE).write_text("not json\n")
    code, _ = _run(root, tmp_path)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"{WHERE_FILE}:1: not a record of where" in err
