"""Loading what a project recorded: which machine, asv's files validated, hashes and the baseline."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from detsim.track.history.asvresults import (
    choose_machine, load_baselines, load_hashes, load_recorded, load_result_file,
)
from detsim.track.history.jsonc import ResultsError

DATA = Path(__file__).resolve().parents[2] / "data" / "asv"
MACHINE_DIR = Path("results") / "asv" / "fixture-2cpu"


def _machines(tmp_path: Path, *names: str) -> Path:
    for name in names:
        (tmp_path / name).mkdir()
        (tmp_path / name / "machine.json").write_text("{}")
    return tmp_path


def test_the_machine_is_the_requested_the_only_or_this_host(tmp_path):
    one = tmp_path / "one"
    one.mkdir()
    assert choose_machine(_machines(one, "m1"), None).name == "m1"
    several = tmp_path / "several"
    several.mkdir()
    _machines(several, "m1", "m2")
    assert choose_machine(several, "m2").name == "m2"
    with pytest.raises(ResultsError, match=r"no results for machine 'm3' \(recorded: m1, m2\)"):
        choose_machine(several, "m3")
    with pytest.raises(ResultsError, match="several machines recorded"):
        choose_machine(several, None)
    _machines(several, socket.gethostname())
    assert choose_machine(several, None).name == socket.gethostname()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ResultsError, match="nothing recorded yet"):
        choose_machine(empty, None)


def test_results_files_are_validated(tmp_path):
    good = next((DATA / "good" / MACHINE_DIR).glob("*-virtualenv*.json"))
    assert load_result_file(good)["version"] == 2
    data = json.loads(good.read_text())
    for change, message in ((dict(version=1), "format version 2"), (dict(results=[]), "no result_columns/results"),
                            (dict(commit_hash="abc"), "not a full git hash")):
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({**data, **change}))
        with pytest.raises(ResultsError, match=message):
            load_result_file(path)
    name = next(iter(data["results"]))
    path.write_text(json.dumps({**data, "results": {name: ["not a list of values"]}}))
    with pytest.raises(ResultsError, match=f"malformed row for {name}"):
        load_result_file(path)


def test_a_hash_file_must_name_its_own_commit(tmp_path):
    (tmp_path / "results" / "hashes").mkdir(parents=True)
    path = tmp_path / "results" / "hashes" / ("a" * 40 + ".json")
    path.write_text(json.dumps({"commit": "a" * 40, "cases": {}}))
    assert load_hashes(tmp_path) == {"a" * 40: {"commit": "a" * 40, "cases": {}}}
    path.write_text(json.dumps({"commit": "b" * 40, "cases": {}}))
    with pytest.raises(ResultsError, match=f"{path}: not a per-commit hash record"):
        load_hashes(tmp_path)
    assert load_hashes(tmp_path / "elsewhere") == {}  # nothing recorded by earlier versions of the suite


def test_without_a_baseline_a_note_says_so(tmp_path):
    assert load_baselines(tmp_path) == ({}, ["no golden baseline of any machine class under results/baselines"])
    (tmp_path / "results" / "baselines").mkdir(parents=True)
    (tmp_path / "results" / "baselines" / "golden_hashes.json").write_text('{"cases": []}')
    with pytest.raises(ResultsError, match="malformed baseline"):
        load_baselines(tmp_path)


def test_everything_recorded_is_loaded_in_commit_order(tmp_path):
    root = tmp_path / "good"
    shutil.copytree(DATA / "good", root)
    recorded = load_recorded(root)
    dates = [f["date"] for f in recorded.files]
    assert recorded.machine == "fixture-2cpu" and dates == sorted(dates) and len(dates) == 5
    assert set(recorded.hashes) == {f["commit_hash"] for f in recorded.files}
    assert "bench_engine.EngineSweep.time_simulate" in recorded.benchmarks and "version" not in recorded.benchmarks
    assert recorded.baselines["results/baselines/golden_hashes.json"]["holds_for"]["threads"] == 1
    assert recorded.notes == ()  # outside git: ordered by date, nothing left out
    for path in (root / MACHINE_DIR).glob("*-virtualenv*.json"):
        path.unlink()
    with pytest.raises(ResultsError, match="no results recorded"):
        load_recorded(root)


@pytest.mark.parametrize("requested", [None, "fixture-2cpu"])
def test_results_whose_machine_file_is_gone_name_the_missing_file(tmp_path, requested):
    root = tmp_path / "good"
    shutil.copytree(DATA / "good", root)
    (root / MACHINE_DIR / "machine.json").unlink()
    with pytest.raises(ResultsError) as raised:
        load_recorded(root, requested)
    message = str(raised.value)
    assert message.startswith(f"{root / MACHINE_DIR / 'machine.json'}: missing, beside the results of machine "
                              "'fixture-2cpu'") and "asv machine --yes --machine fixture-2cpu" in message
    assert "recorded: none" not in message and "nothing recorded" not in message
