"""``detsim-track gpu-check``: bad input gets one line and exit 2 before any work; outputs go where they should
and replace only a previous run's."""

import json
from pathlib import Path

import pytest

from detsim.track.cli import main

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _in_checkout(monkeypatch):
    monkeypatch.chdir(ROOT)


def _run(capsys, *argv):
    code = main(["gpu-check", "--dry-run", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, message", [
    (["--steps", "speed,bogus"], "--steps 'speed,bogus': unknown bogus"),
    (["--paths", "eager-float16"], "--paths 'eager-float16': unknown eager-float16"),
    (["--cases", "zz_no_such_case"], "--cases 'zz_no_such_case': unknown"),
    (["--nanobragg", "/nonexistent/nanoBragg"], "--nanobragg /nonexistent/nanoBragg"),
    (["--machine", "a/b"], "--machine 'a/b'"),
    (["--budget", "nan"], "--budget nan: seconds"),
    (["--budget", "0"], "--budget 0: seconds"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, argv, message):
    code, out, err = _run(capsys, "--out", str(tmp_path / "x"), *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err
    assert not (tmp_path / "x").exists()


def test_a_folder_holding_another_programs_file_is_not_written(capsys, tmp_path):
    (tmp_path / "gpu.json").write_text('{"mine": true}')
    code, _, err = _run(capsys, "--out", str(tmp_path), "--steps", "nanobragg")
    assert code == 2 and "refusing to replace" in err and json.loads((tmp_path / "gpu.json").read_text()) == \
        {"mine": True}
    file_out = tmp_path / "file"
    file_out.write_text("")
    assert _run(capsys, "--out", str(file_out), "--steps", "nanobragg")[0] == 2


def test_a_dry_run_writes_only_to_its_out_folder_and_replaces_its_own_previous_run(capsys, tmp_path):
    before = sorted(p.name for p in (ROOT / "results").iterdir())
    for _ in range(2):
        code, out, _ = _run(capsys, "--out", str(tmp_path), "--steps", "nanobragg", "--budget", "30")
        assert code == 0 and out.startswith("# Device check")
    record = json.loads((tmp_path / "gpu.json").read_text())
    assert record["report"] == "gpu-check" and record["dry_run"] is True and record["machine"]
    assert record["budget_s"] == 30
    assert [s["name"] for s in record["steps"] if s["status"] != "skipped"] == []
    assert (tmp_path / "summary.md").read_text() + "\n" == out  # printed as written
    assert sorted(p.name for p in (ROOT / "results").iterdir()) == before


@pytest.mark.parametrize("record", sorted((ROOT / "results" / "gpu").glob("*/gpu.json")), ids=lambda p: p.parent.name)
def test_no_committed_gpu_result_is_a_dry_run(record):
    assert json.loads(record.read_text())["dry_run"] is False, f"{record}: a dry run's figures are CPU figures"
