"""detsim.track.judge.results_files, .benchmarks and .commits: asv.conf.json, the result files, the commit order
and what each benchmark says about itself."""

from __future__ import annotations

import ast
import json
import math
import re
import shutil
import socket
from pathlib import Path

import pytest

from detsim.track.base.files import read_json, strip_comments
from detsim.track.judge.results_files import ResultsError, checkout_head, choose_machine, load_baselines, load_config, \
    load_hashes, load_recorded, load_result_file, order_files
from detsim.track.judge.commits import subjects
from planted_history import empty_commits


ROOT = Path(__file__).resolve().parents[3]
PREFIXES = ("time_", "peakmem_", "track_", "mem_")


def test_comments_are_stripped_outside_strings_only():
    text = '{"url": "https://example.invalid/a//b", // a comment\n "x": "\\"//"}'
    assert json.loads(strip_comments(text)) == {"url": "https://example.invalid/a//b", "x": '"//'}


def test_whole_line_comments_and_a_comment_at_the_end_leave_plain_json():
    text = '// header\n{\n    // one\n    "a": [1, 2], // two\n    "b": "\\\\" // a backslash ends the string\n}\n// end'
    assert json.loads(strip_comments(text)) == {"a": [1, 2], "b": "\\"}
    assert strip_comments('{"a": 1}') == '{"a": 1}'


def test_trailing_commas_are_not_accepted(tmp_path):
    (tmp_path / "asv.conf.json").write_text('// c\n{"version": 1, "results_dir": "results",}\n')
    with pytest.raises(ResultsError, match="asv.conf.json: corrupt JSON"):
        load_config(tmp_path)


def test_unusable_files_are_named(tmp_path):
    with pytest.raises(ResultsError, match=r"missing\.json: missing"):
        read_json(tmp_path / "missing.json", error=ResultsError)
    (tmp_path / "asv.conf.json").write_text("[1, 2] // a list")
    with pytest.raises(ResultsError, match="asv.conf.json: not a JSON object"):
        load_config(tmp_path)
    (tmp_path / "cut.json").write_text('{"a": ')
    with pytest.raises(ResultsError, match=r"cut\.json: corrupt JSON"):
        read_json(tmp_path / "cut.json", error=ResultsError)
    (tmp_path / "skips.json").write_text('{"a": NaN}')  # asv writes NaN for skips
    assert math.isnan(read_json(tmp_path / "skips.json", error=ResultsError)["a"])


def benchmark_names() -> dict[str, str | None]:
    """``module.Class.method`` (or ``module.function``) of every benchmark -> its class's ``unit``."""
    names = {}
    for path in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        module = path.stem
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith(PREFIXES):
                names[f"{module}.{node.name}"] = None
            if isinstance(node, ast.ClassDef):
                unit = next((n.value.value for n in node.body if isinstance(n, ast.Assign)
                             and any(getattr(t, "id", None) == "unit" for t in n.targets)
                             and isinstance(n.value, ast.Constant)), None)
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name.startswith(PREFIXES):
                        names[f"{module}.{node.name}.{item.name}"] = unit
        if "define_case_tracks(" in path.read_text():  # per-case tracks made at import time
            names[f"{module}.track_<case>"] = None
    return names


def test_every_benchmark_has_a_regression_threshold():
    conf = load_config(ROOT)
    thresholds = conf["regressions_thresholds"]
    names = benchmark_names()
    assert any(".PathThroughput." in n for n in names) and any(".track_<case>" in n for n in names)
    missing = [n for n in names if not any(re.match(regex, n) for regex in thresholds)]
    assert not missing, f"no regressions_thresholds entry in asv.conf.json matches {missing}"


def test_every_number_of_the_suite_is_lower_is_better_as_asv_reads_it():
    """asv's compare and Regressions tab take every rise as worse: a larger-is-better unit (per second)
    would be judged the wrong way there, so throughput is recorded as time per unit of work."""
    units = benchmark_names()
    assert not [n for n, unit in units.items() if unit and unit.endswith("/s")]
    assert units["bench_engine.PathThroughput.track_ns_per_pixel_step"] == "ns/pixel-step"


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


def _dated_file(commit: str, date: int, env: str = "env") -> dict:
    return {"commit_hash": commit, "date": date, "env_name": env}


def test_git_history_wins_over_dates(tmp_path):
    commits = empty_commits(tmp_path, ["one", "two", "three"])
    files = [_dated_file(commits[2], 1), _dated_file(commits[0], 3), _dated_file(commits[1], 2, "b"), _dated_file(commits[1], 2, "a"),
             _dated_file("f" * 40, 0)]
    ordered, notes = order_files(tmp_path, files)
    assert [(f["commit_hash"], f["env_name"]) for f in ordered] == [
        (commits[0], "env"), (commits[1], "a"), (commits[1], "b"), (commits[2], "env")]
    assert notes == ["1 results of commits outside HEAD's history were ignored"]
    assert checkout_head(tmp_path) == commits[2]
    assert subjects(tmp_path, commits) == dict(zip(commits, ["one", "two", "three"]))


def test_outside_git_the_commit_dates_order_the_results(tmp_path):
    files = [_dated_file("b" * 40, 20), _dated_file("a" * 40, 10), _dated_file("c" * 40, 30)]
    ordered, notes = order_files(tmp_path, files)
    assert [f["date"] for f in ordered] == [10, 20, 30] and notes == []
    assert checkout_head(tmp_path) is None and subjects(tmp_path, ["a" * 40]) == {}


def test_commits_unknown_to_the_repository_are_ordered_by_date_and_said_so(tmp_path):
    empty_commits(tmp_path, ["one"])
    ordered, notes = order_files(tmp_path, [_dated_file("b" * 40, 20), _dated_file("a" * 40, 10)])
    assert [f["date"] for f in ordered] == [10, 20]
    assert notes == ["no recorded commit is in HEAD's history; ordered by commit date"]


def test_only_a_checkout_of_its_own_has_a_head_to_judge(tmp_path):
    commits = empty_commits(tmp_path, ["one"])
    (tmp_path / "copied-results").mkdir()
    assert checkout_head(tmp_path) == commits[0]
    assert checkout_head(tmp_path / "copied-results") is None  # inside a checkout, not one
    assert checkout_head(tmp_path.parent) is None  # no git at all
