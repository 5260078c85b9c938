"""A side of a cross-commit comparison: prepared, its jobs in a fresh interpreter, a parity change's first traced
quantity."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from detsim.track.base.fresh import PINNED, pinned_env, run
from detsim.track.base.golden import GoldenError, find_case, golden_dir
from detsim.track.report import sides
from detsim.track.report.sides import SideError, SideJob, commits_between, config_of, do_job, first_change, one_minus_r, \
    prepare_side, run_side_job, subject, trace_sentence, worst_pixel

from explain_history import git


# ---- explain sides: A side: a commit's core with this checkout's suite over it, run in a fresh interpreter; measuring there:

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def tiny_repo(tmp_path: Path) -> tuple[Path, list[str]]:
    """Three commits whose detsim/__init__.py say which they are (and an old detsim/track of their own)."""
    repo = tmp_path / "repo"
    (repo / "detsim" / "track").mkdir(parents=True)
    git(tmp_path, "init", "-q", str(repo))
    shas = []
    for tag in ("first", "second", "third"):
        (repo / "detsim" / "__init__.py").write_text(f"WHICH = {tag!r}\n")
        (repo / "detsim" / "track" / "__init__.py").write_text("OLD_SUITE = True\n")
        git(repo, "add", "detsim")
        git(repo, "commit", "-q", "-m", f"commit {tag}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return repo, shas


def test_a_side_runs_the_commits_core_with_this_checkouts_suite(tiny_repo, tmp_path):
    repo, shas = tiny_repo
    side = prepare_side(repo, shas[0], tmp_path / "side", python=sys.executable)
    assert side.commit == shas[0]
    code = ("import detsim, detsim.track, detsim.track.report.sides as s; "
            "print(detsim.WHICH, hasattr(detsim.track, 'OLD_SUITE'), s.__file__)")
    done = run([side.python, "-P", "-c", code], env=pinned_env(side.package_dir), cwd=tmp_path).check("python")
    which, old_suite, where = done.stdout.split()
    assert (which, old_suite) == ("first", "False")
    assert Path(where).resolve().is_relative_to((tmp_path / "side").resolve())


def test_a_side_job_is_pinned_and_a_failing_one_is_one_line_naming_the_commit(tiny_repo, tmp_path, monkeypatch):
    repo, shas = tiny_repo
    side = prepare_side(repo, shas[1], tmp_path / "side", python=sys.executable)
    with pytest.raises(SideError, match=f"^{shas[1][:8]}: image P1@8 exited 1: [A-Za-z]*Error: "):
        run_side_job(side, "image", "P1@8", None, tmp_path / "i.npy", cwd=tmp_path)
    asked = {}
    monkeypatch.setattr(sides, "run_job", lambda entry, job, **how: asked.update(how, entry=entry, job=job))
    assert run_side_job(side, "trace", "c02", ROOT, tmp_path / "t.log", cwd=tmp_path, timeout=5, pixel=[1, 2]) == \
        tmp_path / "t.log"
    assert asked["job"] == SideJob("trace", "c02", str(tmp_path / "t.log"), str(ROOT), pixel=[1, 2])
    assert SideJob.from_json(asked["job"].to_json()).pixel == (1, 2)  # read back as the job's type says
    assert asked["entry"] == sides.SIDE_JOB and asked["path"] == (side.package_dir,) and asked["env"] == PINNED
    assert (asked["python"], asked["cwd"], asked["timeout"]) == (sys.executable, tmp_path, 5)


def test_commits_between_are_oldest_first_and_end_at_the_first_bad(tiny_repo):
    repo, shas = tiny_repo
    assert commits_between(repo, shas[0], shas[2]) == shas[1:]
    assert commits_between(repo, shas[1], shas[2]) == shas[2:]
    assert subject(repo, shas[2]) == "commit third"
    with pytest.raises(SideError, match="not a descendant"):
        commits_between(repo, shas[2], shas[0])


def test_one_minus_r_is_zero_for_nanobraggs_own_image_and_rises_with_a_change():
    golden = golden_dir(ROOT)
    reference = find_case("c02", golden).reference().astype(np.float64)
    assert abs(one_minus_r(reference, "c02", golden)) < 1e-12
    changed = reference.copy()
    changed[0, 0] += reference.max()
    assert one_minus_r(changed, "c02", golden) > 1e-6


# In the slow job; its twins: the image job run here (test_the_image_job_saves_the_float64_image), a side's own
# interpreter importing the commit's core (test_a_side_runs_the_commits_core_with_this_checkouts_suite) and a
# side job run there that fails (test_a_side_job_is_pinned_and_a_failing_one_is_one_line_naming_the_commit)
@pytest.mark.slow
def test_a_side_renders_in_its_own_process(tmp_path):
    side = prepare_side(ROOT, "HEAD", tmp_path / "side", python=sys.executable)
    image = np.load(run_side_job(side, "image", "P1@8", golden_dir(ROOT), tmp_path / "i.npy", cwd=tmp_path))
    assert image.shape == (8, 8) and (tmp_path / "i.npy").is_file()


# ---- explain side job: The side jobs, run in this interpreter on a tiny workload.

def _job(kind: str, out, **more) -> SideJob:
    return SideJob(kind, "P1@8", str(out), **more)


def test_workloads_are_reduced_reference_workloads_or_golden_cases():
    assert config_of("P1@16", None).detector.fpixels == 16
    assert config_of("c02", golden_dir()).detector.fpixels == 128
    with pytest.raises(GoldenError, match="P9@16"):  # not a reference workload: looked up as a case
        config_of("P9@16", golden_dir())


def test_the_image_job_saves_the_float64_image(tmp_path):
    assert do_job(_job("image", tmp_path / "i.npy")) == {"out": str(tmp_path / "i.npy")}
    image = np.load(tmp_path / "i.npy")
    assert image.shape == (8, 8) and image.dtype == np.float64 and image.sum() > 0


def test_the_ops_job_counts_one_render_per_op_and_call_site(tmp_path):
    do_job(_job("ops", tmp_path / "o.json"))
    rows = json.loads((tmp_path / "o.json").read_text())
    assert rows and all(set(r) == {"op", "site", "calls", "elements"} for r in rows)
    assert any(r["site"].startswith("detsim/") for r in rows)


def test_the_trace_job_writes_trace_lines_of_the_pixel(tmp_path):
    do_job(_job("trace", tmp_path / "t.log", pixel=(2, 3)))
    text = (tmp_path / "t.log").read_text()
    assert text.startswith("TRACE_PY: pixel 2 3")
    assert "TRACE_PY: pixel_value" in text


def test_an_unknown_job_names_the_known_ones(tmp_path):
    with pytest.raises(ValueError, match="no side job 'nope' .*image, ops, trace"):
        do_job(_job("nope", tmp_path / "x"))


# ---- explain parity trace: The worst pixel and the first traced quantity that changed, on synthetic images and traces.

OLD = """TRACE_PY: pixel 3 4
TRACE_PY: rendered 1
TRACE_PY: omega_pixel 1.5e-06
TRACE_PY: polar layer=0 subS=0 subF=0 source=0 0.98
TRACE_PY: I_term 100
TRACE_PY: pixel_value 12.5
"""
NEW = OLD.replace("0.98", "0.93").replace("12.5", "11.9")


def test_the_worst_pixel_changed_most_else_is_furthest_from_nanobragg():
    old = np.zeros((4, 5))
    new = old.copy()
    new[2, 3] = 1e-9
    assert worst_pixel(old, new) == (2, 3)
    reference = old.copy()
    reference[1, 4] = 5.0
    assert worst_pixel(old, old, reference) == (1, 4)


def test_the_first_quantity_that_differs_is_named_with_both_values():
    change = first_change(OLD, NEW)
    assert change["name"] == "polar" and change["labels"] == "layer=0 subS=0 subF=0 source=0"
    assert (change["old"], change["new"]) == ("0.97999999999999998", "0.93000000000000005")
    assert change["differing"] == ["polar", "pixel_value"]
    said = trace_sentence("abcdef0123456789", change, (3, 4))
    assert said.startswith("the parity change at abcdef01 starts at `polar` [layer=0 subS=0 subF=0 source=0]")
    assert "0.93" in said


def test_agreeing_traces_say_so():
    assert first_change(OLD, OLD) is None
    assert "agree at both commits" in trace_sentence("abcdef0123", None, (3, 4))


def test_the_launches_job_counts_one_render_of_the_path(tmp_path):
    out = tmp_path / "launches.json"
    do_job(SideJob("launches", "P2@8", str(out), mode="eager"))
    counts = json.loads(out.read_text())
    assert counts["launches"] == sum(counts["by_op"].values()) > 50 and (counts["copies"], counts["syncs"]) == (0, 0)


def test_the_kernel_job_writes_the_commits_kernel_report_without_a_configuration(tmp_path, monkeypatch):
    import types

    fake = types.ModuleType("detsim.track.gpu.kernel_report")
    fake.fused_kernel_report = lambda dtype: types.SimpleNamespace(to_dict=lambda: {"dtype": dtype, "registers": 56})
    monkeypatch.setitem(sys.modules, "detsim.track.gpu.kernel_report", fake)
    out = tmp_path / "kernel.json"
    do_job(SideJob("kernel", "fused-kernel", str(out), dtype="float64"))
    assert json.loads(out.read_text()) == {"dtype": "float64", "registers": 56}
