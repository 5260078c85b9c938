"""The pytest plugin evidence loads: ``--device`` for any selection, and never twice."""

from __future__ import annotations

import subprocess
import sys

from detsim.track.commands import evidence as cmd_evidence
from detsim.track.evidence import plugin
from detsim.track import cli

CONFTEST_WITH_DEVICE = '''
def pytest_addoption(parser):
    parser.addoption("--device", action="append", default=None, help="the conftest's own")
'''


def _pytest(folder, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", plugin.__name__, *args],
                          cwd=folder, capture_output=True, text=True)


def test_a_folder_without_a_conftest_accepts_device(tmp_path):
    (tmp_path / "test_mine.py").write_text(
        "def test_sees_the_devices(request):\n    assert request.config.getoption('device') == ['cpu', 'cuda']\n")
    done = _pytest(tmp_path, "-q", "--device", "cpu", "--device", "cuda", "test_mine.py")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_conftest_that_defines_device_keeps_its_own_option(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST_WITH_DEVICE)
    (tmp_path / "test_mine.py").write_text(
        "def test_it(request):\n    assert request.config.getoption('device') == ['cpu']\n")
    done = _pytest(tmp_path, "-q", "--device", "cpu", "test_mine.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the conftest's own" in _pytest(tmp_path, "--help").stdout


def test_add_device_option_refuses_a_second_definition():
    import argparse

    class Parser:  # the part of pytest's Parser the plugin uses
        def __init__(self):
            self.parser = argparse.ArgumentParser()

        def addoption(self, *names, **attrs):
            try:
                self.parser.add_argument(*names, **attrs)
            except argparse.ArgumentError as exc:
                raise ValueError(str(exc)) from None

    parser = Parser()
    assert plugin.add_device_option(parser) is True and plugin.add_device_option(parser) is False


def test_evidence_runs_a_conftest_less_selection_elsewhere(tmp_path, capsys, monkeypatch):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_theirs.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    monkeypatch.chdir(tmp_path)
    args = cli.build_parser({"evidence": cmd_evidence}).parse_args(
        ["evidence", "tests", "--area", "theirs", "--device", "cpu"])
    assert cmd_evidence.run(args) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert "cpu: 1 passed" in out and "unrecognized arguments" not in out
