"""``detsim-track evidence`` end to end, on small planted test selections written into temporary folders."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from detsim.track import cli

from detsim.track.commands import evidence
from detsim.track.evidence import pytest_runs as pr
from detsim.track.evidence.bundle import RETIME_HEADER
from detsim.track.evidence.pytest_runs import Command

CONFTEST = '''
def pytest_addoption(parser):
    parser.addoption("--device", action="append", default=None)


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", metafunc.config.getoption("--device") or ["cpu"])
'''

PLANTED = '''
import json
import pathlib
import time
import warnings

import pytest

MODE = json.loads((pathlib.Path(__file__).parent / "mode.json").read_text())


def test_pass(device):
    assert device == "cpu"


def test_fail(device):
    value = 1
    assert not MODE["fail"] or value == 2, "planted failure"


def test_skip(device):
    pytest.skip("planted reason")


def test_warn(device):
    if MODE["warn"]:
        warnings.warn("planted warning", UserWarning)


def test_timed(device):
    time.sleep(MODE["sleep"])


class TestGroup:
    @pytest.mark.parametrize("value", [1.5, "a::b"])
    def test_in_class(self, value, device):
        assert value
'''

CRASHING = '''
import os
import signal


def test_before(device):
    pass


def test_dies(device):
    if device == "cuda":
        os.kill(os.getpid(), signal.SIGKILL)
'''

BUNDLE_FILES = {"collect.log", "pytest-cpu.log", "junit-cpu.xml", "env.json", "commands.txt", "results.json",
                "summary.md", "sha256.txt"}
FAIL_ID = "sel/test_planted.py::test_fail[cpu]"
WARN_ID = "sel/test_planted.py::test_warn[cpu]"
TIMED_ID = "sel/test_planted.py::test_timed[cpu]"


def plant(root: Path, fail=True, warn=True, sleep=0.0, tests=PLANTED) -> Path:
    """A planted selection ``root/sel`` with a conftest defining --device, like the project's."""
    sel = root / "sel"
    sel.mkdir(parents=True, exist_ok=True)
    (sel / "conftest.py").write_text(CONFTEST)
    (sel / "test_planted.py").write_text(tests)
    (sel / "mode.json").write_text(json.dumps({"fail": fail, "warn": warn, "sleep": sleep}))
    return sel


def main(*argv: str) -> int:
    """``detsim-track evidence ARGV`` in-process, through the dispatcher's parser (this subcommand only,
    so the test does not depend on the other subcommands' modules)."""
    args = cli.build_parser({"evidence": evidence}).parse_args(["evidence", *argv])
    return evidence.run(args)


def evidence_run(capsys, *argv: str) -> tuple[int, str, Path | None]:
    """Run ``detsim-track evidence`` in-process: exit code, stdout, and the bundle it wrote."""
    code = main(*argv)
    out = capsys.readouterr().out
    first = out.splitlines()[0] if out else ""
    bundle = Path(first.split(": ", 1)[1]).resolve() if first.startswith("evidence ") else None
    return code, out, bundle


def results_of(bundle: Path) -> dict:
    return json.loads((bundle / "results.json").read_text())


@pytest.fixture(scope="module")
def first_bundle(tmp_path_factory):
    """One bundle of the planted selection (one failing, one skipped, one warning test), no predecessor."""
    root = tmp_path_factory.mktemp("planted")
    plant(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        code = main("sel", "--area", "planted", "--device", "cpu")
    bundles = [p for p in (root / "reports" / "planted").iterdir()]
    assert len(bundles) == 1, bundles
    return root, code, bundles[0]


@pytest.fixture
def first_bundle_alone(first_bundle):
    """:func:`first_bundle` for a test that writes more bundles beside it: they are removed after it, so that
    every test sees the bundle alone in its folder whichever order they run in (pytest-xdist)."""
    yield first_bundle
    bundle = first_bundle[2]
    for later in set(bundle.parent.iterdir()) - {bundle}:
        shutil.rmtree(later)


def test_the_dispatcher_routes_evidence_here():
    assert cli.SUBCOMMANDS["evidence"] == evidence.__name__


def test_bundle_has_every_file_and_exact_per_test_results(first_bundle):
    root, code, bundle = first_bundle
    assert code == 1  # no previous bundle: the failing test is a new failure
    assert {p.name for p in bundle.iterdir()} == BUNDLE_FILES
    assert [p.name for p in bundle.parent.iterdir()] == [bundle.name]  # no leftover temporary folder
    results = results_of(bundle)
    assert results["runs"]["cpu"]["counts"] == {"passed": 5, "failed": 1, "error": 0, "skipped": 1, "xfailed": 0}
    tests = {t["nodeid"]: t for t in results["tests"]}
    collected = pr.collected_nodeids((bundle / "collect.log").read_text())
    assert sorted(tests) == sorted(collected)
    assert "sel/test_planted.py::TestGroup::test_in_class[cpu-a::b]" in tests
    assert tests[FAIL_ID]["outcome"] == "failed"
    assert tests[FAIL_ID]["message"] == "AssertionError: planted failure"
    skip = tests["sel/test_planted.py::test_skip[cpu]"]
    assert (skip["outcome"], skip["skip_reason"]) == ("skipped", "planted reason")
    assert all(t["device"] == "cpu" and t["duration_s"] >= 0 for t in tests.values())
    assert results["runs"]["cpu"]["warnings"][0]["text"] == "UserWarning: planted warning"
    assert results["runs"]["cpu"]["warnings"][0]["tests"] == [WARN_ID]
    log = (bundle / "pytest-cpu.log").read_text()
    assert "E       AssertionError: planted failure" in log  # the stack trace, verbatim
    assert "slowest durations" in log


def test_summary_counts_failures_skips_and_warnings(first_bundle):
    _, _, bundle = first_bundle
    summary = (bundle / "summary.md").read_text()
    assert "**Verdict: 1 new failure** (exit 1)" in summary
    assert "| cpu | ok | pytest exit 1 (some tests failed) | 5 | 1 | 0 | 1 | 0 |" in summary
    assert f"`{FAIL_ID}` (failed): AssertionError: planted failure" in summary
    assert "- planted reason (1): `cpu` `sel/test_planted.py::test_skip[cpu]`" in summary
    assert "`UserWarning: planted warning`" in summary
    assert "## Slowest tests (7 of 7)" in summary


def test_env_and_commands_are_recorded_and_rerunnable(first_bundle, tmp_path):
    root, _, bundle = first_bundle
    env = json.loads((bundle / "env.json").read_text())
    for key in ("commit", "dirty", "branch", "python", "torch", "triton", "cuda", "cpu", "torch_threads",
                "env", "pytest", "nvidia_smi", "python_executable"):
        assert key in env
    commands = (bundle / "commands.txt").read_text()
    assert f"cd {root}" in commands
    assert "--collect-only -q --device cpu sel" in commands
    assert '"--junitxml=$BUNDLE/junit-cpu.xml" --device cpu sel > "$BUNDLE/pytest-cpu.log" 2>&1' in commands
    rerun = tmp_path / "rerun"
    rerun.mkdir()
    done = subprocess.run(["bash", str(bundle / "commands.txt")], env={"BUNDLE": str(rerun), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr  # the planted failure, like the recorded run
    again = pr.read_junit(rerun / "junit-cpu.xml", pr.collected_nodeids((rerun / "collect.log").read_text()))
    recorded = {t["nodeid"]: t["outcome"] for t in results_of(bundle)["tests"]}
    assert {t["nodeid"]: t["outcome"] for t in again} == recorded


def test_sha256_covers_every_file_and_verifies(first_bundle, capsys):
    _, _, bundle = first_bundle
    listed = [line.split("  ", 1)[1] for line in (bundle / "sha256.txt").read_text().splitlines()]
    assert sorted(listed) == sorted(BUNDLE_FILES - {"sha256.txt"})
    assert main("--verify", str(bundle)) == 0
    assert "ok, 7 files match" in capsys.readouterr().out
    if shutil.which("sha256sum"):
        assert subprocess.run(["sha256sum", "--quiet", "-c", "sha256.txt"], cwd=bundle).returncode == 0


def test_verify_names_modified_missing_and_extra_files(first_bundle, tmp_path, capsys):
    _, _, bundle = first_bundle
    copy = tmp_path / "copy"
    shutil.copytree(bundle, copy)
    with open(copy / "results.json", "a") as handle:
        handle.write(" ")
    (copy / "env.json").unlink()
    (copy / "notes.txt").write_text("added later\n")
    assert main("--verify", str(copy)) == 1
    out = capsys.readouterr().out
    assert "modified: results.json" in out and "missing: env.json" in out and "extra: notes.txt" in out
    assert "summary.md" not in out
    assert main("--verify", str(tmp_path)) == 2  # no sha256.txt: not a bundle


def test_second_unchanged_run_reports_no_change(first_bundle_alone, capsys, monkeypatch):
    root, _, bundle = first_bundle_alone
    monkeypatch.chdir(root)
    code, out, second = evidence_run(capsys, "sel", "--area", "planted", "--device", "cpu")
    assert code == 0, out  # the failure is known, not new
    assert second != bundle and second.parent == bundle.parent
    assert f"compared with {bundle.name}: no change" in out
    summary = (second / "summary.md").read_text()
    assert f"## Compared with {bundle.name}: no change" in summary
    comparison = results_of(second)["comparison"]
    assert comparison["changed"] is False and comparison["changed_artifacts"] == []


# Two runs of evidence and a re-timing: five pytest processes, slow. Quick twins in the default run: the
# comparison end to end with a previous bundle (test_second_unchanged_run_reports_no_change), and new failures,
# new warnings and a confirmed slowdown on given results (tests/track/compare/test_evidence_previous.py,
# test_evidence_bundle.py: test_a_test_that_looks_slower_is_retimed_with_its_controls, test_evidence_summary.py).
@pytest.mark.slow
def test_comparison_reports_new_failure_new_warning_and_confirmed_slowdown(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plant(tmp_path, fail=False, warn=False)
    code, out, before = evidence_run(capsys, "sel", "--area", "cmp", "--device", "cpu")
    assert code == 0, out
    plant(tmp_path, fail=True, warn=True, sleep=0.6)
    code, out, after = evidence_run(capsys, "sel", "--area", "cmp", "--device", "cpu", "--retime", "1")
    assert code == 1
    assert f"compared with {before.name}: changes" in out
    assert "new failures (1):" in out and f"{FAIL_ID}: AssertionError: planted failure" in out
    assert "new warnings (1):" in out and "UserWarning: planted warning" in out
    comparison = results_of(after)["comparison"]
    assert [t["nodeid"] for t in comparison["new_failures"]] == [FAIL_ID]
    assert [w["text"] for w in comparison["new_warnings"]] == ["UserWarning: planted warning"]
    assert [t["nodeid"] for t in comparison["slower"]] == [TIMED_ID]
    assert comparison["slower"][0]["measurements"] == 2 and comparison["slower"][0]["now_s"] >= 0.6
    assert comparison["fixed"] == [] and comparison["changed_artifacts"] == []
    assert (after / "retime" / "cpu-1.xml").is_file()
    assert RETIME_HEADER in (after / "commands.txt").read_text()
    summary = (after / "summary.md").read_text()
    top = summary.split("## Runs")[0]
    assert "new failures (1)" in top and "new warnings (1)" in top and "slower" in top
    assert main("--verify", str(after)) == 0


def test_each_device_runs_separately_and_a_crash_is_recorded_with_its_log(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(evidence, "_devices", lambda chosen: ["cpu", "cuda"])  # as where CUDA is present
    plant(tmp_path, tests=CRASHING)
    code, out, bundle = evidence_run(capsys, "sel", "--area", "crash")
    assert code == 2
    assert "cuda: no tests in" in out and "[CRASHED: killed by SIGKILL while running sel/test_planted.py::test_dies[cuda]]" in out
    assert {"pytest-cpu.log", "pytest-cuda.log", "junit-cpu.xml"} <= {p.name for p in bundle.iterdir()}
    assert "--collect-only -q --device cpu --device cuda sel" in (bundle / "commands.txt").read_text()
    assert "sel/test_planted.py::test_dies[cuda]" in (bundle / "collect.log").read_text()
    results = results_of(bundle)
    assert (results["runs"]["cpu"]["status"], results["runs"]["cpu"]["counts"]["passed"]) == ("ok", 2)
    assert (results["runs"]["cuda"]["status"], results["runs"]["cuda"]["exit_code"]) == ("crashed", -9)
    assert "test_planted.py::test_dies[cuda]" in (bundle / "pytest-cuda.log").read_text()  # kept up to the kill
    assert sorted((t["device"], t["nodeid"].split("::")[1]) for t in results["tests"]) == [
        ("cpu", "test_before[cpu]"), ("cpu", "test_dies[cpu]")]
    summary = (bundle / "summary.md").read_text()
    assert "**Verdict: not measured: cuda: crashed, killed by SIGKILL while running" in summary
    assert main("--verify", str(bundle)) == 0


def test_a_collection_error_is_recorded_as_a_crash(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plant(tmp_path, tests="import no_such_module_here\n\n\ndef test_x(device):\n    pass\n")
    code, out, bundle = evidence_run(capsys, "sel", "--area", "broken", "--device", "cpu")
    assert code == 2
    assert "collection crashed, pytest exit 2" in out and "No module named 'no_such_module_here'" in out
    assert {p.name for p in bundle.iterdir()} == BUNDLE_FILES - {"pytest-cpu.log", "junit-cpu.xml"}
    assert "ModuleNotFoundError" in (bundle / "collect.log").read_text()
    assert results_of(bundle)["measured"] is False


def test_nothing_collected_is_a_failure_to_measure(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plant(tmp_path)
    assert main("--area", "empty", "--device", "cpu", "--", "sel", "-k", "no_such_test") == 2
    assert "the selection matched no tests" in capsys.readouterr().err
    assert not (tmp_path / "reports" / "empty").exists()  # no bundle, not even an empty area


def test_interrupted_run_leaves_no_bundle(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plant(tmp_path)

    def interrupt(self, folder, timeout):
        assert (folder / "env.json").is_file()  # the bundle is half written when the interrupt comes
        raise KeyboardInterrupt

    monkeypatch.setattr(Command, "execute", interrupt)
    with pytest.raises(KeyboardInterrupt):
        main("sel", "--area", "cut", "--device", "cpu")
    assert not (tmp_path / "reports").exists()  # nor the folders made for the bundle


def test_a_refused_selection_leaves_no_new_out_root(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main("nope.py", "--area", "a", "--device", "cpu", "--out-root", "NEW/sub") == 2
    assert "no bundle written" in capsys.readouterr().err
    assert not (tmp_path / "NEW").exists()


def test_bad_input_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main("sel", "--area", "../escape") == 2
    assert main("sel") == 2
    assert "--area NAME is required" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert main("sel", "--area", "x", "--device", "cuda") == 2
        assert "torch.cuda.is_available() is False" in capsys.readouterr().err
    assert not (tmp_path / "reports").exists()


def test_bad_options_are_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main("sel", "--area", "x", "--device", "cpu", "--retime", "-1") == 2
    assert main("sel", "--area", "x", "--device", "cpu", "--timeout", "0") == 2
    assert capsys.readouterr().err.count("--retime must be >= 0 and --timeout > 0") == 2
    assert main("--verify", str(tmp_path), "--area", "x") == 2
    assert "--verify takes a bundle folder and nothing else" in capsys.readouterr().err
    assert main("--verify", str(tmp_path / "absent")) == 2
    assert capsys.readouterr().err == f"evidence: --verify {tmp_path / 'absent'}: missing, not a bundle folder\n"
    assert not (tmp_path / "reports").exists()


def test_devices_default_to_cpu_plus_cuda_where_present_and_are_deduplicated():
    assert evidence._devices(None) == ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    assert evidence._devices(["cpu", "cpu"]) == ["cpu"]


@pytest.mark.parametrize("where", ["a_file", "read_only"])
def test_an_out_root_that_cannot_hold_a_bundle_is_one_line_before_anything_runs(tmp_path, capsys, monkeypatch, where):
    monkeypatch.chdir(tmp_path)
    plant(tmp_path)
    (tmp_path / "a_file").write_text("x")
    root = {"a_file": tmp_path / "a_file", "read_only": Path("/sys/detsim-track-evidence")}[where]
    monkeypatch.setattr(Command, "execute", lambda *a, **k: pytest.fail("pytest must not run"))
    assert main("sel", "--area", "x", "--device", "cpu", "--out-root", str(root)) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and f"--out-root {root}" in err


def test_a_corrupt_previous_bundle_is_named_and_nothing_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plant(tmp_path)
    broken = tmp_path / "reports" / "area" / "20000101T000000Z"
    broken.mkdir(parents=True)
    (broken / "results.json").write_text('{"measured": tr')
    monkeypatch.setattr(Command, "execute", lambda *a, **k: pytest.fail("pytest must not run"))
    assert main("sel", "--area", "area", "--device", "cpu") == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(Path("reports/area/20000101T000000Z/results.json")) in err
    assert [p.name for p in broken.parent.iterdir()] == [broken.name]  # no new or partial bundle


def test_verify_names_a_file_it_cannot_read_and_exits_2(first_bundle, capsys, monkeypatch):
    _, _, bundle = first_bundle
    from detsim.track.evidence import manifest

    real = manifest.sha256_file
    monkeypatch.setattr(manifest, "sha256_file", lambda p: (_ for _ in ()).throw(PermissionError(13, "Permission denied"))
                        if p.name == "summary.md" else real(p))
    assert main("--verify", str(bundle)) == 2
    out = capsys.readouterr().out
    assert "unreadable: summary.md (Permission denied)" in out and "1 problem against sha256.txt" in out


@pytest.mark.parametrize("kind", ["a directory", "a FIFO (named pipe)", "a symlink to nothing"])
def test_verify_calls_a_listed_file_that_is_not_a_regular_file_unreadable_and_exits_2(tmp_path, capsys, kind):
    from detsim.track.evidence.manifest import write_manifest

    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "summary.md").write_text("# Evidence\n")
    (bundle / "results.json").write_text("{}\n")
    write_manifest(bundle)
    (bundle / "summary.md").unlink()
    {"a directory": lambda p: p.mkdir(), "a FIFO (named pipe)": os.mkfifo,
     "a symlink to nothing": lambda p: p.symlink_to(tmp_path / "gone")}[kind](bundle / "summary.md")
    assert main("--verify", str(bundle)) == 2
    assert capsys.readouterr().out.splitlines() == [f"unreadable: summary.md ({kind})",
                                                    f"{bundle}: 1 problem against sha256.txt"]


def _pids_running(marker: str) -> list[int]:
    """Processes (not zombies) whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def _wait_for(condition, seconds: float) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux /proc")
# Both in the slow job (each starts the command and its pytest, ~2.5 CPU-s); their quick twins: in
# tests/track/base/test_base_fresh.py, a child's group ended first on SIGTERM to its parent
# (test_sigterm_or_ctrl_c_of_the_parent_ends_the_child_and_its_group_first) and a child killed with its parent
# (test_a_child_dies_with_a_parent_killed_outright), how evidence starts pytest; here, an interrupt mid-run
# leaving no bundle (test_interrupted_run_leaves_no_bundle); in tests/track/evidence/test_evidence_pytest_runs.py,
# an interrupt that kills the pytest run (test_an_interrupt_kills_the_process_and_goes_on)
@pytest.mark.slow
@pytest.mark.parametrize("signum", ["SIGTERM", "SIGKILL"])
def test_a_terminated_or_killed_run_leaves_no_pytest_child_running(tmp_path, signum):
    import signal
    import sys

    plant(tmp_path, sleep=120)
    parent = subprocess.Popen([sys.executable, "-m", "detsim.track.cli", "evidence", "sel", "--area", "a",
                               "--device", "cpu"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    marker = f"{tmp_path}/reports/a/"  # in the running pytest's --junitxml, inside the .partial folder
    try:
        assert _wait_for(lambda: any("junit-cpu" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")
                                     for p in _pids_running(marker)), 60), parent.communicate(timeout=5)
        children = _pids_running(marker)
        parent.send_signal(getattr(signal, signum))
        code = parent.wait(timeout=30)
        assert _wait_for(lambda: not [p for p in children if p in _pids_running(marker)], 10)
    finally:
        parent.kill()
        for pid in _pids_running(marker):
            os.kill(pid, signal.SIGKILL)
    if signum == "SIGTERM":
        assert code == 143
        assert not (tmp_path / "reports").exists()  # no .partial folder left, nor the folders made for it
