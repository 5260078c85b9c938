"""detsim.track.judge.results_files, .benchmarks and .commits: asv.conf.json, the result files, the commit order
and what each benchmark says about itself."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import math
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from detsim.track.base.recording import read_json, strip_comments
from detsim.track.judge.thresholds import DEFAULT_THRESHOLD
from detsim.track.judge.family import FAMILY_ORDER
from detsim.track.judge.series import Point, Series
from detsim.track.judge.results_files import ResultsError, checkout_head, choose_machine, load_baselines, load_config, \
    load_hashes, load_recorded, load_result_file, order_files
from detsim.track.judge.benchmarks import case_of, family_of, param_labels, threshold_for
from detsim.track.judge.commits import first_commit_cut, resolve_first_commits, subjects
from detsim.track.base.runtime import thread_count


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


def _repo(path: Path, subjects_: list[str]) -> list[str]:
    """A git repository with one empty commit per subject; their hashes, oldest first."""
    run = lambda *args: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=path,
                                       check=True, capture_output=True, text=True).stdout
    run("init", "-q")
    for subject in subjects_:
        run("commit", "-q", "--allow-empty", "-m", subject)
    return run("rev-list", "--reverse", "HEAD").split()


def _dated_file(commit: str, date: int, env: str = "env") -> dict:
    return {"commit_hash": commit, "date": date, "env_name": env}


def test_git_history_wins_over_dates(tmp_path):
    commits = _repo(tmp_path, ["one", "two", "three"])
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
    _repo(tmp_path, ["one"])
    ordered, notes = order_files(tmp_path, [_dated_file("b" * 40, 20), _dated_file("a" * 40, 10)])
    assert [f["date"] for f in ordered] == [10, 20]
    assert notes == ["no recorded commit is in HEAD's history; ordered by commit date"]


def test_first_commits_start_detection_after_the_named_commit():
    order = ["aaa1", "bbb2", "ccc3", "ddd4"]
    conf = {"regressions_first_commits": {r"bench_engine\.": "bbb", r"bench_engine\.Engine": "ccc3",
                                          r"bench_engine\.MachineReference\.": None,
                                          r"bench_engine\.Throughput\.": None}}
    assert first_commit_cut(conf, "bench_engine.EngineSweep.time_simulate", "timing", order) == 3  # the latest wins
    assert first_commit_cut(conf, "bench_engine.Other.time_x", "timing", order) == 2
    assert first_commit_cut(conf, "bench_cli.DetsimCommand.time_x", "timing", order) == 0
    assert first_commit_cut(conf, "bench_engine.MachineReference.time_reference", "reference", order) is None
    # null switches asv's own detection off; throughput is still checked here (the right way up)
    assert first_commit_cut(conf, "bench_engine.Throughput.track_x", "throughput", order) == 2
    assert first_commit_cut({}, "x", "timing", order) == 0


def test_only_a_checkout_of_its_own_has_a_head_to_judge(tmp_path):
    commits = _repo(tmp_path, ["one"])
    (tmp_path / "copied-results").mkdir()
    assert checkout_head(tmp_path) == commits[0]
    assert checkout_head(tmp_path / "copied-results") is None  # inside a checkout, not one
    assert checkout_head(tmp_path.parent) is None  # no git at all


def test_a_first_commit_git_knows_but_did_not_record_starts_detection_after_it(tmp_path):
    c = _repo(tmp_path, ["zero", "one", "two", "three"])
    order = [c[0], c[1], c[3]]  # c[2] was never recorded
    conf = {"regressions_first_commits": {"a": c[2][:8], "b": c[0][:8], "off": None}}
    resolved = resolve_first_commits(tmp_path, conf, order)
    assert resolved == {"a": c[1], "b": c[0][:8], "off": None}
    assert first_commit_cut({"regressions_first_commits": resolved}, "a.x", "timing", order) == 2
    early = resolve_first_commits(tmp_path, conf, [c[1], c[3]])["b"]  # named before anything recorded
    assert first_commit_cut({"regressions_first_commits": {"b": early}}, "b.x", "timing", [c[1], c[3]]) == 0


def test_an_unknown_first_commit_is_refused_naming_it(tmp_path):
    c = _repo(tmp_path, ["zero"])
    with pytest.raises(ResultsError, match=r"asv.conf.json: regressions_first_commits\['x'\] = 'deadbeef': no such"):
        resolve_first_commits(tmp_path, {"regressions_first_commits": {"x": "deadbeef"}}, c)


PREFIX_TYPES = {"time_": ("time", "seconds"), "peakmem_": ("peakmemory", "bytes"), "mem_": ("memory", "bytes"),
                "track_": ("track", "unit")}  # asv's type and default unit by method prefix


def _family_before(name: str, bench: dict) -> str:
    """``family_of`` as it was when it named the suite's modules (the classification to keep)."""
    kind, unit = bench.get("type"), str(bench.get("unit", ""))
    if name.startswith("bench_parity."):
        return "parity"
    if name.startswith("bench_reproducibility."):
        return "reproducibility"
    if name.startswith("bench_determinism."):
        method = name.rsplit(".", 1)[-1]
        if method.startswith("track_fingerprint"):  # image fingerprints, compared commit to commit
            return "fingerprint"
        if method == "track_machine_class":
            return "machine class"
        return "determinism" if case_of(bench) else "hash count"
    if ".MachineReference." in name:
        return "reference"
    if kind == "time":
        return "timing"
    if kind in ("peakmemory", "memory"):
        return "memory"
    if unit == "instructions":  # the instruction-count tracks, their own family since they exist
        return "cost"
    if name.startswith("bench_device_cost."):  # device costs counted on the CPU: cost since they exist
        return "cost"
    return "throughput" if unit.endswith("/s") else "track"


def _describe(name: str, fn, owner=None) -> tuple[str, dict]:
    kind, default_unit = next(v for p, v in PREFIX_TYPES.items() if fn.__name__.startswith(p))
    bench = {"type": kind, "unit": getattr(fn, "unit", getattr(owner, "unit", default_unit))}
    if getattr(fn, "pretty_name", None):
        bench["pretty_name"] = fn.pretty_name
    return name, bench


def suite_benchmarks(monkeypatch) -> dict[str, dict]:
    """Every benchmark ``benchmarks/bench_*.py`` defines, as asv describes it in benchmarks.json."""
    monkeypatch.syspath_prepend(str(ROOT))
    found = {}
    with thread_count(1):  # importing the suite pins torch's threads
        modules = [importlib.import_module(f"benchmarks.{p.stem}") for p in sorted((ROOT / "benchmarks").glob("bench_*.py"))]
    for module in modules:
        short = module.__name__.split(".")[-1]
        for attr, value in vars(module).items():
            if attr.startswith(tuple(PREFIX_TYPES)) and callable(value):
                found.update([_describe(f"{short}.{attr}", value)])
            elif inspect.isclass(value) and value.__module__ == module.__name__:
                for method in dir(value):
                    if method.startswith(tuple(PREFIX_TYPES)):
                        found.update([_describe(f"{short}.{attr}.{method}", getattr(value, method), value)])
    return found


def test_every_benchmark_of_the_suite_keeps_its_family(monkeypatch):
    benchmarks = suite_benchmarks(monkeypatch)
    families = {name: family_of(name, bench) for name, bench in benchmarks.items()}
    before = {name: _family_before(name, bench) for name, bench in benchmarks.items()}
    before["bench_engine.PathThroughput.track_ns_per_pixel_step"] = "timing"  # was pixel-steps/s: now time per unit
    assert families == before
    # every family but the plain track, throughput (the suite records times per unit of work instead) and the
    # machine reference (recorded by older commits only: the verdict never used it as evidence)
    assert set(families.values()) == set(FAMILY_ORDER) - {"track", "throughput", "reference"}
    assert families["bench_determinism.CompiledHashes.track_cases_changed"] == "hash count"
    assert families["bench_determinism.CompiledHashes.track_fingerprint"] == "fingerprint"
    assert families["bench_determinism.track_fingerprint_a01_cubic_mosflm_center"] == "fingerprint"
    assert families["bench_determinism.track_machine_class"] == "machine class"
    assert families["bench_engine.PathThroughput.track_ns_per_pixel_step"] == "timing"


def test_families_follow_name_prefix_and_unit_without_module_names():
    assert family_of("other.Cls.time_x", {"type": "time", "unit": "seconds"}) == "timing"
    assert family_of("other.peakmem_x", {}) == "memory"  # the prefix stands in for a missing type
    assert family_of("other.track_rate", {"type": "track", "unit": "frames/s"}) == "throughput"
    assert family_of("other.track_count", {"type": "track", "unit": "cases"}) == "track"
    assert family_of("other.track_cost", {"type": "track", "unit": "ns/pixel-step"}) == "timing"
    assert family_of("other.track_parity_a01", {"type": "track", "unit": "1 - r"}) == "parity"
    # a track in a unit of memory is a peak memory (a target's command's own, reported by the suite for targets)
    assert family_of("bench_target.Case.track_peak_memory", {"type": "track", "unit": "MB"}) == "memory"
    assert family_of("other.track_rss", {"type": "track", "unit": "bytes"}) == "memory"


def test_case_and_threshold_come_from_the_benchmark_and_the_config():
    assert case_of({"pretty_name": "parity 1 - r: o01_polar_0.9"}) == "o01_polar_0.9"
    assert case_of({"pretty_name": "bench_engine.Throughput.track_x"}) is None
    thresholds = {r"bench_engine\.": 0.25, r"bench_engine\.EngineSweep\.": 0.5}
    assert threshold_for("bench_engine.EngineSweep.time_simulate", thresholds) == 0.5  # the largest match
    assert threshold_for("bench_cli.DetsimCommand.time_detsim_command", thresholds) == DEFAULT_THRESHOLD


def test_parameter_labels_are_in_asvs_order():
    bench = {"params": [[128, 256], ["'float64'"]], "param_names": ["pixels", "dtype"]}
    assert param_labels(bench) == ["(pixels=128, dtype='float64')", "(pixels=256, dtype='float64')"]
    assert param_labels({}) == [""]


def test_a_point_is_measured_only_with_a_finite_value():
    assert Point("c", 1.0).measured
    assert not Point("c", None).measured and not Point("c", math.nan).measured
    series = Series(env="e", name="n", params="(a=1)", family="timing", unit="seconds")
    assert series.label == "n(a=1)" and series.points == ()
    with pytest.raises(AttributeError):
        series.points = ()  # frozen: a series is built once


def test_parameter_labels_read_back_into_values_and_a_case_parameter_names_the_golden_case():
    from detsim.track.judge.benchmarks import param_values

    assert param_values("(axis='threads', case='o01_polar_0.9')") == {"axis": "threads", "case": "o01_polar_0.9"}
    assert param_values("(pixels=128, dtype='float64')") == {"pixels": "128", "dtype": "float64"}
    assert param_values("") == {}
