""".ci/track, run on a throwaway git history with stand-ins for asv and detsim-track (tests/_fake_tools.py):
what it records, in which phases, what it calls and in which order, and what it refuses (the real tools run
end to end in tests/test_ci_track_faults.py, a slow test)."""

from __future__ import annotations

import ast
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FAKES = Path(__file__).with_name("_fake_tools.py")
MACHINE = "box"
CONFIG = """// a comment, as asv allows
{"version": 1, "project": "detsim", "repo": ".", "environment_type": "virtualenv",
 "benchmark_dir": "benchmarks", "env_dir": ".asv/env", "results_dir": "results/asv", "html_dir": "reports/html"}
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=repo,
                          check=True, capture_output=True, text=True).stdout.strip()


def _checkout(tmp_path: Path) -> Path:
    """A checkout of 3 commits holding .ci/track and its steps, a package that does not import, and the
    stand-ins in .venv/bin; HOME is a folder of its own."""
    repo = tmp_path / "repo"
    for part in (".ci/track", "pyproject.toml", "detsim/track/__init__.py"):
        (repo / part).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / part, repo / part)
    for part in ("detsim/track/base", "detsim/track/recorder"):  # the recorder's steps and the base they import
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "detsim" / "__init__.py").write_text("raise ImportError('this commit breaks the package')\n")
    (repo / "benchmarks").mkdir()
    (repo / "asv.conf.json").write_text(CONFIG)
    (repo / "Makefile").write_text("venv:\n\t@echo '[\"make\", \"venv\"]' >> $$FAKE_LOG\n")
    (repo / ".gitignore").write_text(".venv/\n.asv/\n.asv-second.conf.json\nresults/\n")
    _git(repo, "init", "-q", "-b", "main")
    for n in range(3):
        (repo / "notes.txt").write_text(f"{n}\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", f"commit {n}")
    bin_ = repo / ".venv" / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "python").symlink_to(sys.executable)
    for tool in ("asv", "detsim-track"):
        (bin_ / tool).write_text(f"#!{sys.executable} -S\n" + FAKES.read_text())  # stand-ins need no site-packages
        (bin_ / tool).chmod(0o755)
    (tmp_path / "home").mkdir()
    return repo


@pytest.fixture
def checkout(tmp_path):
    return _checkout(tmp_path)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    """(checkout, finished run, the stand-ins' calls, VIRTUALENV_APP_DATA as each asv call saw it) of one run
    on a fresh checkout whose verdict is 1."""
    repo = _checkout(tmp_path_factory.mktemp("first"))
    seen = repo.parent / "seen"
    wrapper = repo / ".venv" / "bin" / "asv"
    wrapper.write_text(wrapper.read_text().replace(
        "def _log(argv: list[str]) -> None:\n",
        f"def _log(argv: list[str]) -> None:\n    open({str(seen)!r}, 'a').write("
        "os.environ.get('VIRTUALENV_APP_DATA', '-') + '\\n')\n"))
    done = _track(repo, FAKE_VERDICT="1")
    return repo, done, _calls(repo), set(seen.read_text().split())


@pytest.fixture(autouse=True)
def _own_temporary_folder(monkeypatch):
    """Each run's temporary folder its own, so that its clean-up never reaches a real recording's fork servers on
    this machine; short, as a fork server's socket path must be (108 bytes)."""
    folder = tempfile.mkdtemp(prefix="ct", dir="/tmp")
    monkeypatch.setenv("TMPDIR", folder)
    yield
    shutil.rmtree(folder, ignore_errors=True)


def _env(repo: Path, **extra: str) -> dict:
    return {**os.environ, "HOME": str(repo.parent / "home"), "FAKE_LOG": str(repo.parent / "log"),
            "ASV_MACHINE": MACHINE, "RECENT": "3", **extra}


def _track(repo: Path, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", ".ci/track"], cwd=repo, env=_env(repo, **extra), capture_output=True,
                          text=True, timeout=60, start_new_session=True)  # a group of its own, to kill


def _calls(repo: Path) -> list[list[str]]:
    log = repo.parent / "log"
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    return calls


def _recorded(repo: Path) -> dict[str, set[str]]:
    """commit -> the benchmarks its results file holds."""
    folder = repo / "results" / "asv" / MACHINE
    return {json.loads(p.read_text())["commit_hash"]: set(json.loads(p.read_text())["results"])
            for p in folder.glob("*-fake.json")}


def _commits(repo: Path) -> list[str]:
    return _git(repo, "rev-list", "HEAD").split()


def _runs(calls: list[list[str]]) -> list[list[str]]:
    return [call for call in calls if call[0] == "asv" and "run" in call]


def _leftovers(repo: Path) -> list[int]:
    """Processes still serving this checkout's benchmarks (the stand-in's fork servers)."""
    benchmarks = str(repo / "benchmarks")
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"run_server" in argv and benchmarks.encode() in argv:
                found.append(int(entry.name))
    return found


def test_a_run_records_every_commit_completely_then_judges_then_publishes(first_run):
    checkout, done, calls, _ = first_run
    assert done.returncode == 1, done.stderr  # the verdict's status
    assert [c for c in calls if c[0] == "detsim-track"] == [
        ["detsim-track", "regressions", "--help"], ["detsim-track", "regressions", "--machine", MACHINE],
        ["detsim-track", "publish", "--machine", MACHINE, "--assets", ".asv/www-assets"]]
    assert not any(c[:2] == ["asv", "publish"] for c in calls)  # detsim-track publish makes the page
    assert calls.index(["detsim-track", "regressions", "--machine", MACHINE]) > max(
        calls.index(run) for run in _runs(calls))
    recorded = _recorded(checkout)
    assert set(recorded) == set(_commits(checkout))
    suite = set(json.loads((checkout / "results/asv/benchmarks.json").read_text())) - {"version"}
    assert all(names == suite for names in recorded.values())  # both halves merged, then the timings
    assert not list((checkout / ".asv" / "results-second").glob("*/*-fake.json"))
    assert json.loads((checkout.parent / "home" / ".asv-machine.json").read_text()).keys() >= {MACHINE}
    assert "Traceback" not in done.stderr and not _leftovers(checkout)


def test_every_asv_call_keeps_virtualenv_s_cache_in_the_checkout(first_run):
    checkout, _, _, places = first_run
    assert places == {str(checkout / ".asv" / "virtualenv-app-data")}


def _static_benchmarks() -> list[str]:
    """The asv suite's benchmarks that its modules define by name (module.Class.method or module.function)."""
    prefixes = ("time_", "timeraw_", "track_", "peakmem_", "mem_")
    names = []
    for path in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith(prefixes):
                names.append(f"{path.stem}.{node.name}")
            elif isinstance(node, ast.ClassDef):
                names += [f"{path.stem}.{node.name}.{item.name}" for item in node.body
                          if isinstance(item, ast.FunctionDef) and item.name.startswith(prefixes)]
    return names


def test_each_benchmark_is_recorded_in_exactly_one_phase_and_the_timings_alone(first_run):
    runs = _runs(first_run[2])  # the two exact halves at once, in either order, then the timings
    assert sorted(run[run.index("--config") + 1] for run in runs[:2]) == [".asv-second.conf.json", "asv.conf.json"]
    assert runs[2][runs[2].index("--config") + 1] == "asv.conf.json"
    phases = [re.compile(run[run.index("--bench") + 1]) for run in runs]
    names = _static_benchmarks()
    assert len(names) > 5
    for name in names:
        assert sum(bool(phase.search(name)) for phase in phases) == 1, name
    assert {n for n in names if phases[2].search(n)} == {"bench_engine.PathThroughput.track_ns_per_pixel_step",
                                                         "bench_cli.DetsimCommand.time_detsim_command"}


def test_a_second_run_records_head_and_what_is_not_a_complete_record_again(checkout):
    assert _track(checkout).returncode == 0
    head, older, oldest = _commits(checkout)
    [cut] = (checkout / "results" / "asv" / MACHINE).glob(f"{older[:8]}-*.json")
    cut.write_text(cut.read_text()[:40])  # as a kill while asv writes it leaves it
    done = _track(checkout)
    assert done.returncode == 0, done.stderr
    assert (checkout / ".asv" / "record.txt").read_text().split() == [head, older]  # oldest is complete
    assert f"{cut.relative_to(checkout)}: corrupt JSON" in done.stderr
    assert len(_recorded(checkout)[older]) == 8


def test_a_commit_whose_recording_was_killed_is_recorded_again_until_complete(checkout):
    timed = "^(?!bench_(cost|device_cost|parity|determinism|reproducibility)\\.|bench_engine\\.LargeDetectorMemory\\.)"
    killed = _track(checkout, FAKE_KILL=timed, FAKE_KILL_AFTER="1")  # the timings of the oldest commit only
    assert killed.returncode == -signal.SIGKILL or killed.returncode == 137
    partial = _recorded(checkout)
    oldest, middle, head = reversed(_commits(checkout))
    assert "bench_cli.DetsimCommand.time_detsim_command" in partial[oldest]
    assert "bench_cli.DetsimCommand.time_detsim_command" not in partial[middle]
    (checkout / "notes.txt").write_text("new\n")
    _git(checkout, "commit", "-qam", "a new commit")
    done = _track(checkout, RECENT="4")
    assert done.returncode == 0, done.stderr
    assert (checkout / ".asv" / "record.txt").read_text().split() == _commits(checkout)[:3]  # not the oldest
    assert f"{middle[:8]} was recorded only in part" in done.stderr
    suite = set(json.loads((checkout / "results/asv/benchmarks.json").read_text())) - {"version"}
    assert all(names == suite for names in _recorded(checkout).values())


def test_a_second_run_in_the_same_clone_is_refused_in_one_line(checkout):
    (checkout / ".asv").mkdir()
    with open(checkout / ".asv" / "track.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        refused = _track(checkout)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "tracking run: another tracking run is under way in this clone (it holds .asv/track.lock); "
        "run again when it has ended"]
    assert _calls(checkout) == []


def test_a_run_killed_outright_leaves_no_lock_and_its_leftovers_are_cleaned_up_by_the_next(checkout):
    running = subprocess.Popen(["bash", ".ci/track"], cwd=checkout, env=_env(checkout, FAKE_HANG="every run"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 30
    while len(_leftovers(checkout)) < 2 and time.monotonic() < deadline:  # both recordings' servers up
        time.sleep(0.05)
    os.killpg(running.pid, signal.SIGKILL)
    running.wait()
    left = _leftovers(checkout)
    assert len(left) == 2  # asv's fork servers are groups of their own: the kill does not reach them
    folders = {Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[-2].decode() for pid in left}
    done = _track(checkout)
    assert done.returncode == 0, done.stderr
    assert not _leftovers(checkout)
    assert not any(Path(folder).parent.exists() for folder in folders)


def test_sigterm_stops_the_recording_and_leaves_nothing_running(checkout):
    running = subprocess.Popen(["bash", ".ci/track"], cwd=checkout, env=_env(checkout, FAKE_HANG="every run"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while len(_leftovers(checkout)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    running.send_signal(signal.SIGTERM)  # the script alone, not its group
    assert running.wait(timeout=20) == 143
    assert not _leftovers(checkout)
    assert not list((checkout / ".asv").glob("*.tmp"))


def test_a_machine_name_from_outside_is_validated_before_anything_is_written(checkout):
    refused = _track(checkout, ASV_MACHINE="../evil")
    assert refused.returncode == 2
    assert len(refused.stderr.splitlines()) == 1 and "'../evil' refused" in refused.stderr
    assert not (checkout / ".asv").exists() and not (checkout / "results").exists()
    assert not (checkout.parent / "home" / ".asv-machine.json").exists() and _calls(checkout) == []


def test_results_that_cannot_be_written_are_named_before_anything_is_recorded(checkout):
    (checkout / "results").mkdir()
    (checkout / "results" / "asv").write_text("a file where a folder belongs\n")
    refused = _track(checkout)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"tracking run: results/asv/{MACHINE}: cannot be written (results/asv is not a folder)"]
    assert _calls(checkout) == []


def test_a_commit_that_breaks_the_package_is_recorded_and_ends_not_measured_in_one_line(checkout):
    # the throwaway package raises on import: the run's own steps never import it
    done = _track(checkout, FAKE_BROKEN="1")
    assert done.returncode == 2
    assert _runs(_calls(checkout)) and set(_recorded(checkout)) == set(_commits(checkout))
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == ("tracking run: NOT MEASURED: detsim-track does not start at this "
                                            "commit (ImportError: cannot import name 'nothing')")


def test_a_target_is_recorded_by_detsim_track_record_then_judged_and_published_as_detsims(checkout, tmp_path):
    port = tmp_path / "port"
    port.mkdir()
    done = _track(checkout, TARGET=str(port), FAKE_VERDICT="1")
    calls = _calls(checkout)
    assert done.returncode == 1, done.stderr  # the verdict's
    project = "results/targets/port"
    steps = [call for call in calls if call[0] == "detsim-track"]
    assert steps == [["detsim-track", "record", "--target", str(port), "--recent", "3", "--machine", MACHINE,
                      "--no-judge"],
                     ["detsim-track", "regressions", "--help"],
                     ["detsim-track", "regressions", "--repo", project, "--machine", MACHINE],
                     ["detsim-track", "publish", "--repo", project, "--machine", MACHINE, "--assets",
                      ".asv/www-assets"]]
    assert not [call for call in calls if call[0] == "asv"]  # detsim's own asv run is not started
    assert not (checkout / "results" / "asv").exists() or not any((checkout / "results" / "asv").rglob("*.json"))


def test_workers_is_passed_to_a_targets_recording_as_a_number_or_a_schedulers_address(checkout, tmp_path):
    port = tmp_path / "port"
    port.mkdir()
    address = "tcp://127.0.0.1:8786"
    for workers, passed in (("2", ["--workers", "2"]), (address, ["--scheduler", address])):
        done = _track(checkout, TARGET=str(port), FAKE_VERDICT="0", WORKERS=workers)
        assert done.returncode == 0, done.stderr
        record = next(call for call in _calls(checkout) if call[:2] == ["detsim-track", "record"])
        assert record[-2:] == passed


def test_a_relative_target_is_the_callers_and_a_missing_one_is_refused_in_one_line(checkout, tmp_path):
    (tmp_path / "port").mkdir()
    elsewhere = subprocess.run(["bash", str(checkout / ".ci" / "track")], cwd=tmp_path, capture_output=True, text=True,
                               env=_env(checkout, TARGET="port", FAKE_VERDICT="0"), timeout=60, start_new_session=True)
    assert elsewhere.returncode == 0, elsewhere.stderr
    record = [call for call in _calls(checkout) if call[:2] == ["detsim-track", "record"]]
    assert record and record[0][3] == str((tmp_path / "port").resolve())
    refused = _track(checkout, TARGET="no/such/port")
    assert (refused.returncode, refused.stderr) == (2, "tracking run: TARGET=no/such/port: not a folder\n")
    assert _calls(checkout) == []


def test_a_fresh_clone_installs_the_asv_that_pyproject_pins_before_the_rest(checkout):
    python = checkout / ".venv" / "bin" / "python"
    python.unlink()
    (checkout / ".venv" / "bin" / "asv").rename(checkout.parent / "asv")
    python.write_text(f"#!/bin/sh\nif [ \"$1\" = -m ] && [ \"$2\" = pip ]; then\n"
                      f"  echo \"[\\\"pip\\\", \\\"$5\\\", \\\"$6\\\"]\" >> \"$FAKE_LOG\"\n"
                      f"  cp {checkout.parent / 'asv'} {checkout / '.venv/bin/asv'}; exit 0\nfi\n"
                      f"exec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    assert _track(checkout).returncode == 0
    calls = _calls(checkout)
    dev = re.search(r"^dev = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    pinned = [r for r in re.findall(r'"([^"]+)"', dev) if r.startswith("asv==")]
    assert calls[0] == ["pip", *pinned, "virtualenv"] and ["make", "venv"] in calls


def test_ci_runs_the_readmes_test_command_as_make_test_runs_it():
    recipe = re.search(r"^test: venv\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M)
    assert recipe, "the Makefile has no test target"
    commands = [line.strip().replace("$(PY)", ".venv/bin/python") for line in recipe.group(1).splitlines()]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-len(commands):] == commands and "make venv" in ci  # the same commands, last, after the install
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and commands[-1].removeprefix(".venv/bin/") in readme


@pytest.mark.slow  # (the cluster's client is a fresh interpreter of .venv's)
def test_workers_for_detsims_own_commits_start_the_cluster_client_which_a_broken_head_stops_before_recording(
        checkout):
    done = _track(checkout, WORKERS="2")
    calls = _calls(checkout)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == ("tracking run: the Dask cluster could not be had, or its client (.venv's "
                                            "detsim-track) did not start: said above")
    assert "this commit breaks the package" in done.stderr  # the client's own error, above
    assert not [call for call in calls if call[0] == "asv" and "run" in call]  # nothing recorded
    assert not (checkout / "results" / "asv" / MACHINE).exists() or not any(
        (checkout / "results" / "asv" / MACHINE).glob("*-*.json"))
