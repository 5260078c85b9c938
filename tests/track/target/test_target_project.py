"""detsim.track.target.project: a target's asv project (its config names the target, the suite for targets and
the thresholds table's rows), and where each image departs stored and read back by commit and case (asv's
suite for targets turning an outcome into tracks: tests/track/asvsuite/; the recording through asv itself:
tests/track/commands/test_commands_record.py, slow)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from detsim.track.judge.results_files import TARGET_SPEC
from detsim.track.judge.thresholds import TARGET_COST, TARGET_MEMORY, TARGET_PARITY, TARGET_TIMING
from detsim.track.target.departure import departure, stored
from detsim.track.target.project import SUITE_DIR, Project
from detsim.track.target.spec import load_spec
from planted_port import CASE, make_port

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
ENV = "existing-py_x_bin_python"



def test_the_project_names_the_target_the_suite_and_the_tables_thresholds(tmp_path):
    port = make_port(tmp_path, GOLDEN, render="copy")
    spec = load_spec(port.root)
    project = Project.of(spec, tmp_path / "detsim")
    project.write(spec, tmp_path / "detsim", "m1")
    conf = json.loads(project.config.read_text())
    assert project.folder == (tmp_path / "detsim" / "results" / "targets" / "port").resolve()
    assert (conf["repo"], conf["benchmark_dir"], conf["environment_type"], conf["branches"]) == (
        str(port.root.resolve()), str(SUITE_DIR), "existing", ["main"])
    assert conf["regressions_thresholds"] == {r"bench_target\.Case\.track_parity_": TARGET_PARITY.value - 1,
                                              r"bench_target\.Case\.track_peak_memory": TARGET_MEMORY.value,
                                              r"bench_target\.Timing\.": TARGET_TIMING.value,
                                              r"bench_target\.Cost\.": TARGET_COST.value}
    assert conf[TARGET_SPEC] is None  # the repository's own spec: bisect finds it without --spec
    suite = json.loads((project.folder / "suite.json").read_text())
    assert suite["target"] == str(port.root.resolve()) and suite["spec"] == str(port.root / "detsim-target.toml")
    assert suite["outcomes"] == str(project.folder / "outcomes" / "m1")
    elsewhere = tmp_path / "specs" / "port.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text((port.root / "detsim-target.toml").read_text())
    project.write(load_spec(port.root, elsewhere), tmp_path / "detsim", "m1")
    assert json.loads(project.config.read_text())[TARGET_SPEC] == str(elsewhere.resolve())



def test_a_departing_image_is_stored_and_read_back_by_commit_and_case(tmp_path):
    reference = 1.0 + np.random.default_rng(1).random((32, 32))
    image = reference.copy()
    image[:2, :] *= 1.5
    record = departure(image, reference)
    folder = Project(tmp_path).outcomes("m1")
    folder.mkdir(parents=True)
    (folder / f"{'c' * 40}.json").write_text(json.dumps({"commit": "c" * 40, "cases": {
        CASE: {"status": "image", "departure": record}, "other": {"status": "crashed"}}}))
    assert stored(tmp_path, "c" * 40, CASE) == record and stored(tmp_path, "cccccccc", CASE)["where"] == "edges"
    assert stored(tmp_path, "c" * 40, "other") is None and stored(tmp_path, "d" * 40, CASE) is None
    (folder / f"{'e' * 40}.json").write_text("{")
    with pytest.raises(ValueError, match="not a readable row"):
        stored(tmp_path, "e" * 40, CASE)



