"""determinism.isolated_run: the job of an isolated run, run here."""

from __future__ import annotations

from pathlib import Path

import torch

from detsim.track.determinism.isolated_run import job_target, run
from detsim.track.determinism.matrix import RunConfig
from detsim.track.determinism.runs import ISOLATED_RUN, run_once
from detsim.track.runtime.targets import resolve_callable

PLANTED = Path(__file__).resolve().parents[2] / "data" / "planted_ops.py"


def test_the_job_saves_what_an_in_process_run_hashes(tmp_path):
    job = {"grads": [], "chunk_pixels": None, "golden_dir": None, "kind": "callable",
           "spec": f"{PLANTED}:crashes_in_float32", "device": "cpu", "dtype": "float64", "mode": "eager",
           "threads": 1, "deterministic": False, "out": str(tmp_path / "out.pt")}
    assert job_target(job).name == job["spec"]
    assert run(job) == {"saved": ["out"]}
    saved = torch.load(tmp_path / "out.pt", weights_only=True)
    here = run_once(resolve_callable(job["spec"]), RunConfig(job["spec"], "cpu", "float64", "eager", 1), 0, False)
    assert here.status == "ok" and list(saved) == ["out"] and torch.equal(saved["out"], here.outputs["out"])
    golden = job_target({**job, "kind": "golden", "spec": "c02"})
    assert (golden.kind, golden.name) == ("golden", "c02_xds_xbeam_quirk")


def test_the_matrix_names_this_module_as_its_job():
    module, function = ISOLATED_RUN.split(":")
    assert module == run.__module__ and function == run.__name__
