"""``detsim-track baselines``: showing the stored golden hashes, and refreshing them deliberately."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from detsim.track import cli
from detsim.track.base import fresh, golden_hashes
from detsim.track.commands import baselines as cmd_baselines
from detsim.track.base.provenance import MachineClass
from detsim.track.base.golden import BASELINE, BASELINE_DIR, class_path
from detsim.track.base.golden import golden_dir, load_cases
from detsim.track.base.golden_hashes import GoldenHashes
from detsim.track.base.fresh import Finished

ROOT = Path(__file__).resolve().parents[3]
CASES = ("a01_cubic_mosflm_center", "o01_polar_0.9")


def test_the_stored_baseline_covers_every_golden_case(capsys):
    import torch

    repo = ROOT
    threads = torch.get_num_threads()
    try:
        assert cli.main(["baselines", "--repo", str(repo)]) == 0
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert f"{len(json.loads((repo / 'tests' / 'golden' / 'manifest.json').read_text()))} golden cases" in out


def _project(tmp_path: Path, holds_for: dict | None = None, cases: dict | None = None) -> Path:
    """A project with two golden cases and a baseline holding for ``holds_for``."""
    golden = tmp_path / "tests" / "golden"
    golden.mkdir(parents=True)
    manifest = json.loads((ROOT / "tests" / "golden" / "manifest.json").read_text())
    (golden / "manifest.json").write_text(json.dumps([m for m in manifest if m["id"] in CASES]))
    for case in CASES:
        shutil.copytree(ROOT / "tests" / "golden" / case, golden / case)
    if holds_for is not None:
        (tmp_path / BASELINE).parent.mkdir(parents=True)
        (tmp_path / BASELINE).write_text(json.dumps({
            "schema": 1, "holds_for": holds_for, "recorded": {"commit": "0" * 40, "at": "t", "cpu": "c"},
            "cases": cases if cases is not None else {c: "a" * 64 for c in CASES}}))
    return tmp_path


def test_a_baseline_of_this_machine_is_said_to_match(tmp_path, capsys):
    root = _project(tmp_path, golden_hashes.machine_class().as_record())
    assert cli.main(["baselines", "--repo", str(root)]) == 0
    out = capsys.readouterr().out
    assert "results/baselines/golden_hashes.json: 2 golden cases" in out
    assert "this machine: matches; the determinism tracks compare against it" in out


def test_another_machine_class_and_missing_cases_are_named(tmp_path, capsys):
    other = {**golden_hashes.machine_class().as_record(), "threads": 4}
    root = _project(tmp_path, other, {CASES[0]: "a" * 64, "gone": "b" * 64})
    assert cli.main(["baselines", "--repo", str(root)]) == 0  # another class's gaps are that class's to fill
    out = capsys.readouterr().out
    assert "another machine class (a fact, not a failure): this machine has threads=1" in out
    assert "no baseline of its class; the determinism tracks compare its images commit to commit" in out
    assert "not in the manifest any more: gone" in out
    assert f"golden cases without a baseline hash: {CASES[1]} (run with --refresh on that class)" in out
    mine = {**golden_hashes.machine_class().as_record()}
    (root / BASELINE).write_text(json.dumps({"schema": 1, "holds_for": mine, "cases": {CASES[0]: "a" * 64}}))
    assert cli.main(["baselines", "--repo", str(root)]) == 2  # this class's gap: exit 2


def test_no_baseline_file_exits_2(tmp_path, capsys):
    assert cli.main(["baselines", "--repo", str(_project(tmp_path))]) == 2
    assert "no baseline file of any machine class" in capsys.readouterr().err


def test_a_class_without_a_baseline_is_a_fact_not_a_failure(tmp_path, capsys):
    other = {**golden_hashes.machine_class().as_record(), "cpu_class": "x86_64 GenuineIntel AVX512"}
    root = _project(tmp_path, other)
    assert cli.main(["baselines", "--repo", str(root)]) == 0
    out = capsys.readouterr().out
    assert "results/baselines/golden_hashes.json: 2 golden cases\n" in out
    assert "another machine class (a fact, not a failure): this machine has cpu_class=" in out


def _fake_renders(monkeypatch, failures: dict | None = None, varying: dict | None = None) -> None:
    """Renders by hash digit: 1 eager, 2 compiled; ``varying``: (mode, threads) of the second process ->
    cases whose image differs there."""
    def render(cases, mode, threads=1):
        cases = list(cases)
        digit = "1" if mode == golden_hashes.EAGER else "2"
        return GoldenHashes(mode=mode, hashes={c.id: digit * 64 for c in cases if c.id not in (failures or {})},
                            failures=failures or {})

    def again(cases, golden, runs, hash_seed="1"):
        out = {}
        for mode, threads in runs:
            first = render(cases, mode, threads)
            differ = (varying or {}).get((mode, threads), ())
            out[mode, threads] = GoldenHashes(mode, {c: ("f" * 64 if c in differ else sha)
                                                     for c, sha in first.hashes.items()}, dict(first.failures))
        return out

    monkeypatch.setattr(golden_hashes, "render_hashes", render)
    monkeypatch.setattr(golden_hashes, "in_a_fresh_process", again)


def test_a_refresh_writes_this_class_file_only_and_lists_changes(tmp_path, monkeypatch, capsys):
    root = _project(tmp_path, {**golden_hashes.machine_class().as_record(), "torch": "old"}, {CASES[0]: "1" * 64})
    legacy = (root / BASELINE).read_text()
    _fake_renders(monkeypatch)
    assert cli.main(["baselines", "--repo", str(root), "--refresh", "--allow-dirty"]) == 0
    mine = root / class_path(golden_hashes.machine_class())
    assert mine.parent == root / BASELINE_DIR and (mine.stat().st_mode & 0o777) == 0o644 & ~_umask()
    data = json.loads(mine.read_text())
    assert data["cases"] == {c: "1" * 64 for c in CASES} and data["cases_compiled"] == {c: "2" * 64 for c in CASES}
    assert data["holds_for"] == golden_hashes.machine_class().as_record() and data["schema"] == 1
    assert (root / BASELINE).read_text() == legacy  # another class's baseline: untouched
    out = capsys.readouterr().out
    assert "2 golden hashes (and 2 of the compiled path) written for cpu_class=" in out
    assert "  no previous baseline of this machine class" in out
    # a second class's file beside it, then a refresh that changes one case: only this class's file moves
    other = MachineClass(**{**golden_hashes.machine_class().as_record(), "cpu_class": "aarch64 ARM SVE"})
    theirs = root / class_path(other)
    theirs.write_text(json.dumps({"schema": 1, "holds_for": other.as_record(), "cases": {CASES[0]: "9" * 64}}))
    before_theirs = theirs.read_text()
    data["cases"][CASES[1]] = "3" * 64
    mine.write_text(json.dumps(data))
    assert cli.main(["baselines", "--repo", str(root), "--refresh", "--allow-dirty"]) == 0
    out = capsys.readouterr().out
    assert f"  1 changed since the previous baseline:\n    {CASES[1]}: 3333333333333333 -> 1111111111111111" in out
    assert theirs.read_text() == before_theirs and (root / BASELINE).read_text() == legacy
    assert json.loads(mine.read_text())["cases"][CASES[1]] == "1" * 64
    assert cli.main(["baselines", "--repo", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"{class_path(golden_hashes.machine_class())}: 2 golden cases  <- this machine" in out
    assert f"{class_path(other)}: 1 golden cases" in out
    (root / BASELINE).write_text(json.dumps({"schema": 1, "holds_for": golden_hashes.machine_class().as_record(),
                                             "cases": {CASES[0]: "a" * 64}}))
    assert cli.main(["baselines", "--repo", str(root)]) == 0
    assert "results/baselines/golden_hashes.json" not in capsys.readouterr().out  # its class has a file of its own


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_refresh_with_a_failed_case_writes_nothing(tmp_path, monkeypatch, capsys):
    root = _project(tmp_path, {"torch": "old"})
    before = (root / BASELINE).read_text()
    _fake_renders(monkeypatch, {CASES[1]: "ValueError: the image has non-finite values"})
    assert cli.main(["baselines", "--repo", str(root), "--refresh", "--allow-dirty"]) == 2
    err = capsys.readouterr().err
    assert f"  {CASES[1]}: ValueError: the image has non-finite values" in err
    assert f"  {CASES[1]} (compiled): ValueError" in err
    assert (root / BASELINE).read_text() == before and not (root / BASELINE_DIR).exists()


@pytest.mark.parametrize("varying, line", [
    ({("eager", 1): [CASES[1]], ("eager", 2): [CASES[1]]}, f"process (a render in a second fresh process against the first): 1 case: {CASES[1]}"),
    ({("eager", 2): CASES}, f"threads (a render with 2 torch threads against 1): 2 cases: {', '.join(CASES)}"),
    ({("compiled", 1): [CASES[0]]}, "compiled (the compiled path's render in a second fresh process against the "
                                    f"first): 1 case: {CASES[0]}"),
])
def test_a_refresh_refuses_images_that_do_not_reproduce_and_writes_nothing(tmp_path, monkeypatch, capsys, varying,
                                                                          line):
    root = _project(tmp_path, {"torch": "old"})
    before = (root / BASELINE).read_text()
    _fake_renders(monkeypatch, varying=varying)
    assert cli.main(["baselines", "--repo", str(root), "--refresh", "--allow-dirty"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("detsim-track baselines: not refreshed: the images of these cases do not reproduce")
    assert f"\n  {line}\n" in err and err.count("\n  ") == 1
    assert (root / BASELINE).read_text() == before and not (root / BASELINE_DIR).exists()


@pytest.mark.slow  # its in-process twin: test_the_second_run_job_renders_each_mode_and_thread_count_asked
def test_a_second_process_renders_the_same_golden_hashes_as_this_one():
    cases = [c for c in load_cases(golden_dir(ROOT)) if c.id in CASES]
    here = golden_hashes.render_hashes(cases)
    again = golden_hashes.in_a_fresh_process(cases, golden_dir(ROOT), [("eager", 1), ("eager", 2)])
    assert again[("eager", 1)].hashes == again[("eager", 2)].hashes == here.hashes and len(here.hashes) == 2


def test_the_second_run_job_renders_each_mode_and_thread_count_asked(monkeypatch):
    """What :func:`golden_hashes.in_a_fresh_process` hands its fresh interpreter (the job and its pinned
    environment), answered here by the function that interpreter runs, :func:`golden_hashes.rerun`."""
    cases = [c for c in load_cases(golden_dir(ROOT)) if c.id in CASES]
    here = golden_hashes.render_hashes(cases)
    asked = {}

    def in_this_process(entry, job, **how):
        asked.update(how, entry=entry)
        module, function = entry.split(":")
        assert module == golden_hashes.__name__
        entry_function = getattr(golden_hashes, function)
        sent = json.loads(json.dumps(job.to_json()))  # what crosses the process boundary, read back as the child does
        return Finished(0, b"", b"", 0.0, result=entry_function(fresh._job_class(entry_function).from_json(sent)))

    monkeypatch.setattr("detsim.track.base.fresh.run_job", in_this_process)
    again = golden_hashes.in_a_fresh_process(cases, golden_dir(ROOT), [("eager", 1), ("eager", 2)])
    assert again[("eager", 1)].hashes == again[("eager", 2)].hashes == here.hashes and len(here.hashes) == 2
    assert not again[("eager", 1)].failures and not again[("eager", 2)].failures
    assert asked["env"]["PYTHONHASHSEED"] == "1" and asked["env"]["OMP_NUM_THREADS"] == "2"


def _args(root: Path, **flags) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cmd_baselines.add_arguments(parser)
    return parser.parse_args(["--repo", str(root), *[f"--{k.replace('_', '-')}" for k, v in flags.items() if v]])


def test_a_refresh_refuses_uncommitted_changes(tmp_path, monkeypatch, capsys):
    root = _project(tmp_path, {"torch": "old"})
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], cwd=root, check=True)
    (root / BASELINE).write_text((root / BASELINE).read_text() + " ")
    _fake_renders(monkeypatch)
    assert cmd_baselines.run(_args(root, refresh=True)) == 2
    assert "uncommitted changes" in capsys.readouterr().err



def test_a_refresh_that_cannot_write_its_file_says_so_before_rendering(tmp_path, monkeypatch, capsys):
    root = _project(tmp_path, {"torch": "old"})
    (root / BASELINE_DIR).write_text("a file where the baselines' folder belongs")

    def no_render(*args, **kwargs):
        raise AssertionError("rendered before checking where the baseline goes")

    monkeypatch.setattr(golden_hashes, "render_hashes", no_render)
    assert cli.main(["baselines", "--repo", str(root), "--refresh", "--allow-dirty"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not refreshed" in err and f"{root / BASELINE_DIR} is not a folder" in err


def test_a_refresh_whose_write_fails_says_so_in_one_line_and_keeps_the_old_file(tmp_path, monkeypatch, capsys):
    import errno

    root = _project(tmp_path, {"torch": "old"})
    _fake_renders(monkeypatch)

    def disk_full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cmd_baselines, "write_json", disk_full)
    assert cli.main(["baselines", "--repo", str(root), "--refresh", "--allow-dirty"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err and "unchanged" in err
    assert not (root / class_path(golden_hashes.machine_class())).exists()


def _gate_baseline(root: Path, sha256: str) -> None:
    """A bench gate baseline holding one render of CASES[0] as the golden hashes render it, on this machine."""
    extra = {**golden_hashes.machine_class().as_record(), "role": "simulate", "case": CASES[0], "sha256": sha256}
    (root / "results" / "baselines" / "pytest-baseline.json").write_text(json.dumps({"benchmarks": [
        {"name": "test_simulate[a01-cpu-float64]", "fullname": "b.py::test_simulate[a01-cpu-float64]",
         "stats": {"min": 0.1}, "extra_info": extra}]}))


def test_a_gate_baseline_that_disagrees_with_the_golden_hashes_exits_1_naming_the_command(tmp_path, capsys):
    root = _project(tmp_path, golden_hashes.machine_class().as_record())
    _gate_baseline(root, "a" * 64)
    assert cli.main(["baselines", "--repo", str(root)]) == 0
    assert ("results/baselines/pytest-baseline.json: holds the golden hashes' image hash in all 1 render(s) both "
            "record") in capsys.readouterr().out
    _gate_baseline(root, "b" * 64)
    assert cli.main(["baselines", "--repo", str(root)]) == 1
    out = capsys.readouterr().out
    assert (f"  {CASES[0]}: results/baselines/pytest-baseline.json (test_simulate[a01-cpu-float64]) holds "
            f"{'b' * 16}, ") in out
    assert "run `make baselines` on this machine class" in out
