"""env.json and commands.txt: where a bundle was made, and how to make it again."""

from __future__ import annotations

import sys
from pathlib import Path

from detsim.track.evidence import run_context
from detsim.track.evidence.records import Request
from detsim.track.evidence.pytest_runs import Command


def _request(**changes) -> Request:
    fields = dict(area="parity", selection=("tests/a.py",), devices=("cpu",), cwd=Path("/src/my project"),
                  asked_devices=(), out_root=Path("reports"), timeout=None, retime=3)
    return Request(**{**fields, **changes})


def test_invocation_names_only_options_that_differ_from_their_defaults():
    assert run_context.invocation(_request()) == "detsim-track evidence tests/a.py --area parity"
    changed = _request(out_root=Path("/tmp/r"), asked_devices=("cpu", "cuda"), timeout=90.0, retime=0)
    assert run_context.invocation(changed) == ("detsim-track evidence tests/a.py --area parity --out-root /tmp/r "
                                              "--device cpu --device cuda --timeout 90 --retime 0")
    with_options = _request(selection=("tests/a.py", "-k", "not slow"))
    assert run_context.invocation(with_options) == "detsim-track evidence --area parity -- tests/a.py -k 'not slow'"


def test_commands_export_what_was_set_and_unset_the_rest(monkeypatch):
    for name in run_context.COMMAND_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTEST_ADDOPTS", "-x --tb=short")
    collect = Command(("python", "-m", "pytest", "--collect-only"), "collect.log")
    text = run_context.commands_text(_request(), [collect], [])
    lines = text.splitlines()
    assert lines[0] == "# Commands run by `detsim-track evidence tests/a.py --area parity` for this bundle, in order."
    assert "cd '/src/my project'" in lines and "export PYTEST_ADDOPTS='-x --tb=short'" in lines
    unset = next(line for line in lines if line.startswith("unset "))
    assert "PYTHONPATH" in unset.split() and "PYTEST_ADDOPTS" not in unset.split()
    assert lines[-1] == collect.shell() and run_context.RETIME_HEADER not in text


def test_retimings_follow_their_header():
    retime = Command(("python", "-m", "pytest", "-q"), "retime/cpu-1.log")
    lines = run_context.commands_text(_request(), [], [retime]).splitlines()
    assert lines[-3:] == [run_context.RETIME_HEADER, 'mkdir -p "$BUNDLE/retime"', retime.shell()]


def test_environment_adds_pytest_interpreter_diff_and_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_ADDOPTS", "-q")
    env = run_context.bundle_environment(tmp_path)
    assert env["python_executable"] == sys.executable and env["cwd"] == str(tmp_path)
    assert env["git_diff_sha256"] is None  # not a git work tree
    assert env["env"]["PYTEST_ADDOPTS"] == "-q" and "output" in env["nvidia_smi"]
    for key in ("commit", "torch", "cuda", "cpu", "torch_threads", "pytest"):
        assert key in env
