"""The side jobs, run in this interpreter on a tiny workload."""

from __future__ import annotations

import json

import numpy as np
import pytest

from detsim.track.base.golden import GoldenError, golden_dir
from detsim.track.explain.side_job import config_of, run


def _job(kind: str, out, **more) -> dict:
    return {"job": kind, "workload": "P1@8", "out": str(out), "golden_dir": None, **more}


def test_workloads_are_reduced_reference_workloads_or_golden_cases():
    assert config_of("P1@16", None).detector.fpixels == 16
    assert config_of("c02", golden_dir()).detector.fpixels == 128
    with pytest.raises(GoldenError, match="P9@16"):  # not a reference workload: looked up as a case
        config_of("P9@16", golden_dir())


def test_the_image_job_saves_the_float64_image(tmp_path):
    assert run(_job("image", tmp_path / "i.npy")) == {"out": str(tmp_path / "i.npy")}
    image = np.load(tmp_path / "i.npy")
    assert image.shape == (8, 8) and image.dtype == np.float64 and image.sum() > 0


def test_the_ops_job_counts_one_render_per_op_and_call_site(tmp_path):
    run(_job("ops", tmp_path / "o.json"))
    rows = json.loads((tmp_path / "o.json").read_text())
    assert rows and all(set(r) == {"op", "site", "calls", "elements"} for r in rows)
    assert any(r["site"].startswith("detsim/") for r in rows)


def test_the_trace_job_writes_trace_lines_of_the_pixel(tmp_path):
    run(_job("trace", tmp_path / "t.log", pixel=[2, 3]))
    text = (tmp_path / "t.log").read_text()
    assert text.startswith("TRACE_PY: pixel 2 3")
    assert "TRACE_PY: pixel_value" in text


def test_an_unknown_job_names_the_known_ones(tmp_path):
    with pytest.raises(ValueError, match="no side job 'nope' .*image, ops, trace"):
        run(_job("nope", tmp_path / "x"))
