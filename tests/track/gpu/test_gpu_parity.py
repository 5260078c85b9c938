"""The parity job: golden cases against nanoBragg.c on one path."""

from pathlib import Path

from detsim.track.base.golden import golden_dir
from detsim.track.gpu.parity import judge, parity_job, summarize

from detsim.track.base.status import Status

ROOT = Path(__file__).resolve().parents[3]
CASE = "c02_xds_xbeam_quirk"  # the smallest case


def test_a_case_is_scored_by_r_and_hashed_and_the_determinism_workload_rendered():
    data = parity_job({"path": ["eager", "float32"], "device": "cpu", "golden_dir": str(golden_dir(ROOT)),
                       "cases": [CASE], "hash_workload": "P1@8", "threads": 1, "deadline_s": 60})
    case = data["cases"][CASE]
    assert case["r"] > 0.9995 and len(case["sha256"]) == 64 and data["worst_case"] == CASE
    assert data["hash"]["workload"] == "P1@8" and len(data["hash"]["sha256"]) == 64
    assert judge(data) == (Status.OK, "")


def test_a_compiled_path_leaves_a_case_it_cannot_fuse_to_the_eager_code():
    data = parity_job({"path": ["compiled", "float32"], "device": "cpu", "golden_dir": str(golden_dir(ROOT)),
                       "cases": ["g03_hkl_autointerp_N2"], "hash_workload": None, "threads": 1, "deadline_s": 60})
    assert data["cases"] == {"g03_hkl_autointerp_N2": {"eager_code": True}} and data["eager_code"] == 1
    assert judge(data)[0] is Status.OK


def test_a_case_under_the_line_or_broken_fails_the_step():
    cases = {"a": {"r": 0.99999, "sha256": "x"}, "b": {"r": 0.9, "sha256": "y"}, "c": {"r": None, "sha256": "z"},
             "d": {"error": "ValueError: no"}}
    summary = summarize(cases)
    assert summary["min_r"] == 0.9 and summary["worst_case"] == "b"
    assert summary["below_line"] == ["b", "c"] and summary["errors"] == ["d"] and summary["rendered"] == 3
    status, reason = judge({**summary, "cases": cases, "not_run": []})
    assert status is Status.FAILED and "2 case(s)" in reason and "did not render" in reason
