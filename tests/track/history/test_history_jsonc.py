"""Reading asv.conf.json (JSON with // comments) and the stored JSON files; the project's own config.

The project's asv.conf.json gives every benchmark of the suite its regression threshold and direction.
A benchmark that no ``regressions_thresholds`` entry matches falls back to asv's 5%, which the noise of
a shared runner exceeds on every run; a throughput benchmark (larger is better) left to asv's own
detection is flagged in the wrong direction. Names are read from the benchmark files' syntax, so the
check needs neither asv nor an import of the suite (which pins torch's thread count).
"""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path

import pytest

from detsim.track.history import jsonc
from detsim.track.history.jsonc import ResultsError, load_config, read_json

ROOT = Path(__file__).resolve().parents[3]
PREFIXES = ("time_", "peakmem_", "track_", "mem_")


def test_comments_are_stripped_outside_strings_only():
    text = '{"url": "https://example.invalid/a//b", // a comment\n "x": "\\"//"}'
    assert json.loads(jsonc.strip_comments(text)) == {"url": "https://example.invalid/a//b", "x": '"//'}


def test_whole_line_comments_and_a_comment_at_the_end_leave_plain_json():
    text = '// header\n{\n    // one\n    "a": [1, 2], // two\n    "b": "\\\\" // a backslash ends the string\n}\n// end'
    assert json.loads(jsonc.strip_comments(text)) == {"a": [1, 2], "b": "\\"}
    assert jsonc.strip_comments('{"a": 1}') == '{"a": 1}'


def test_trailing_commas_are_not_accepted(tmp_path):
    (tmp_path / "asv.conf.json").write_text('// c\n{"version": 1, "results_dir": "results",}\n')
    with pytest.raises(ResultsError, match="asv.conf.json: corrupt JSON"):
        load_config(tmp_path)


def test_unusable_files_are_named(tmp_path):
    with pytest.raises(ResultsError, match=r"missing\.json: missing"):
        read_json(tmp_path / "missing.json")
    (tmp_path / "asv.conf.json").write_text("[1, 2] // a list")
    with pytest.raises(ResultsError, match="asv.conf.json: not a JSON object"):
        load_config(tmp_path)
    (tmp_path / "cut.json").write_text('{"a": ')
    with pytest.raises(ResultsError, match=r"cut\.json: corrupt JSON"):
        read_json(tmp_path / "cut.json")
    (tmp_path / "skips.json").write_text('{"a": NaN}')  # asv writes NaN for skips
    assert math.isnan(read_json(tmp_path / "skips.json")["a"])


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
