"""``detsim-track explain``: bad input refused in one line, findings mapped to explanations, and (slow) the
planted regressions of a throwaway history explained end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from detsim.track.base.exitcodes import ExitCode
from detsim.track.base.output import json_text
from detsim.track.cli import main
from detsim.track.commands.explain import _job_for
from detsim.track.judge.finding import Finding
from detsim.track.judge.verdict import Judgement, Report

import explain_history
from explain_history import EXTRA_WORK, PHYSICS, REORDER, commit_change, make_history

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("argv, message", [
    (["HEAD"], "give LAST_GOOD FIRST_BAD (two commits) or none, got 1"),
    (["HEAD~1", "HEAD", "--kind", "parity"], "--kind parity needs --case"),
    (["HEAD~1", "HEAD", "--kind", "hash", "--case", "zz_nope"], "'zz_nope' is not a golden case"),
    (["HEAD~1", "HEAD", "--kind", "nondeterministic", "--case", "a01"],
     "--kind nondeterministic takes one COMMIT and --case (a golden case id)"),
    (["HEAD~1", "HEAD", "--case", "a01", "--axis", "threads"], "--axis goes with --kind nondeterministic"),
    (["HEAD~1", "HEAD", "--target-results", "port"], "--target-results goes with parity explanations (--case)"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(argv, message, tmp_path, capsys):
    out = tmp_path / "bundle"
    assert main(["explain", *argv, "--root", str(ROOT), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"explain: {message}" or (err.startswith("explain: ") and message in err and "\n" not in err)
    assert not out.exists()


def test_a_negative_top_is_refused_when_the_options_are_read(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["explain", "HEAD~1", "HEAD", "--top", "-1", "--root", str(ROOT), "--out", str(tmp_path / "b")])
    assert stopped.value.code == 2 and "argument --top: must be 0 or more, got -1" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


def test_an_existing_out_folder_is_refused_and_left_alone(tmp_path, capsys):
    out = tmp_path / "bundle"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    assert main(["explain", "HEAD~1", "HEAD", "--root", str(ROOT), "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["mine.txt"]


def test_an_unknown_commit_leaves_no_bundle(tmp_path, capsys):
    out = tmp_path / "bundle"
    assert main(["explain", "nope0000", "HEAD", "--kind", "parity", "--case", "c02", "--root", str(ROOT),
                 "--out", str(out)]) == 2
    assert "nope0000: not a commit" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.iterdir())


def test_no_recorded_history_is_exit_2(tmp_path, capsys):
    assert main(["explain", "--root", str(tmp_path), "--out", str(tmp_path / "b")]) == 2
    assert capsys.readouterr().err.startswith("explain: ")


@pytest.mark.parametrize("record, expected", [
    ({"family": "cost", "params": "(workload='P2@32')", "case": None}, ("cost", "P2@32")),
    ({"family": "cost", "params": "(workload='g01_hkl_nointerp')"}, ("cost", "g01_hkl_nointerp")),
    ({"family": "timing", "params": "(workload='P2@256', dtype='float64')"}, ("cost", "P2@32")),
    ({"family": "parity", "params": "", "case": "c02_xds_xbeam_quirk"}, ("parity", "c02_xds_xbeam_quirk")),
    ({"family": "determinism", "params": "", "case": "c02_xds_xbeam_quirk"}, ("hash", "c02_xds_xbeam_quirk")),
    ({"family": "hash count", "params": ""}, None),
])
def test_each_finding_maps_to_its_explanation(record, expected):
    job = _job_for({"last_good": "a", "first_bad": "b", **record}, "origin")
    assert (job and (job.kind, job.workload)) == expected or (job is None and expected is None)


def test_the_tutorials_history_command_refuses_a_folder_that_exists(tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    assert explain_history.main([str(tmp_path / "mine")]) == 2
    assert capsys.readouterr().err == f"explain_history: {tmp_path / 'mine'} exists; give a new folder\n"
    assert list((tmp_path / "mine").iterdir()) == []


# ---- slow: planted changes in a throwaway history -------------------------------------------------

@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """base; u1 planted extra work in the render; u2, u3 harmless; p a changed physical term; r a reordered
    float sum."""
    repo = tmp_path_factory.mktemp("history") / "repo"
    shas = {"base": make_history(repo)}
    shas["u1"] = commit_change(repo, "render: planted extra work", EXTRA_WORK)
    shas["u2"] = commit_change(repo, "a note")
    shas["u3"] = commit_change(repo, "another note")
    shas["p"] = commit_change(repo, "physics: planted polarization change", PHYSICS)
    shas["r"] = commit_change(repo, "geometry: planted reordering of the position sum", REORDER)
    return repo, shas


def _explain(repo, tmp_path, *argv):
    out = tmp_path / "bundle"
    code = main(["explain", *argv, "--root", str(repo), "--out", str(out)])
    records = json.loads((out / "explain.json").read_text())["explanations"]
    from detsim.track.evidence.manifest import check_bundle
    assert check_bundle(out) == []
    return code, records[0], out


@pytest.mark.slow
def test_planted_extra_work_tops_the_profile_diff(planted, tmp_path):
    repo, shas = planted
    code, record, out = _explain(repo, tmp_path, shas["base"], shas["u1"], "--kind", "cost", "--no-bisect")
    assert code == 1 and record["pair"]["new"] == shas["u1"]
    assert any(k in record["details"]["top_function"] for k in ("linspace_kernel", "dExp", "exp_kernel"))
    top_op = record["details"]["top_op"]
    assert top_op["op"] in ("aten.exp.default", "aten.linspace.default")
    assert top_op["site"].startswith("detsim/rendering/engine.py:") and top_op["site"].endswith(" in _render")
    assert (out / "cost-P1@64" / "profile_diff.svg").read_text().startswith("<svg")


@pytest.mark.slow
def test_a_regression_two_unrecorded_commits_deep_is_bisected(planted, tmp_path):
    repo, shas = planted
    code, record, _ = _explain(repo, tmp_path, shas["base"], shas["u3"], "--kind", "cost")
    assert code == 1
    assert record["bisection"]["first_bad"] == shas["u1"]
    assert record["pair"] == {"old": shas["base"], "new": shas["u1"], "subject": "render: planted extra work"}
    assert record["answer"].startswith("bisected over 3 commits")


@pytest.mark.slow
def test_a_changed_physical_term_is_explained_by_the_first_traced_quantity(planted, tmp_path):
    repo, shas = planted
    code, record, _ = _explain(repo, tmp_path, shas["u3"], shas["p"], "--kind", "parity", "--case", "o01")
    assert code == 1
    assert record["details"]["first_change"]["name"] == "polar"
    assert f"the parity change at {shas['p'][:8]} starts at `polar`" in record["answer"].lower()


@pytest.mark.slow
def test_a_reordered_float_sum_is_explained_by_the_op_that_reordered_it(planted, tmp_path):
    repo, shas = planted
    code, record, _ = _explain(repo, tmp_path, shas["p"], shas["r"], "--kind", "hash", "--case", "h01")
    assert code == 1
    first = record["details"]["first"]
    assert (first["role"], first["name"]) == ("operands", "aten.add.Tensor")
    assert first["where"] == "geometry.py in pixel_positions"
    assert "the commits pass different tensors to it" in record["answer"]


def _record_jobs(monkeypatch, answer, **extra) -> list:
    """explain's jobs replaced by one that records each job and answers ``answer(job)``: the jobs seen."""
    from detsim.track.commands import explain as cmd_explain

    seen = []

    def fake_job(job, root, golden, folder, **kw):
        seen.append(job)
        folder.mkdir(parents=True)
        return {"job": {"kind": job.kind, "workload": job.workload, "last_good": "a" * 40, "first_bad": "b" * 40,
                        "origin": job.origin}, "commits_between": ["b" * 40], "changed": True,
                "answer": answer(job), **extra}

    monkeypatch.setattr(cmd_explain, "explain_job", fake_job)
    return seen


def _Finding(record, detail=None) -> Finding:
    """A finding as verdict.json stores it: flagged unless its timing step was not confirmed."""
    detail = {"confirmation": "confirmed", **(detail or {})} if record["family"] == "timing" else detail or {}
    return Finding.from_record({"env": "e", "unit": "", "old": 1.0, "new": 2.0, **record, **detail})


def _verdict(tmp_path: Path, findings: list[Finding], **fields) -> str:
    """A stored verdict of one machine holding ``findings``: its path."""
    path = tmp_path / "judged" / "verdict.json"
    path.parent.mkdir()
    report = Report(generated_at="t", machine="m", envs=("e",), commits=("HEAD",), latest="HEAD", subjects={},
                    regressions=tuple(findings), unmeasured=(), skipped=0, built=True, notes=(),
                    exit=ExitCode.REGRESSED, **fields)
    path.write_text(json_text(Judgement({"m": report}, {}, (), (), ExitCode.REGRESSED).as_json()))
    return str(path)


def test_a_bare_explain_explains_every_finding_of_the_latest_verdict(tmp_path, monkeypatch, capsys):
    findings = [_Finding({"family": "cost", "benchmark": "bench_cost.InstructionCounts.track_instructions",
                          "params": "(workload='P1@64')", "last_good": "HEAD~1", "first_bad": "HEAD"}),
                _Finding({"family": "parity", "benchmark": "track_parity_c02", "params": "", "case": "c02",
                          "last_good": None, "first_bad": "HEAD"}),
                _Finding({"family": "timing", "benchmark": "bench_engine.EngineSweep.time_simulate", "params": "",
                          "last_good": "HEAD~1", "first_bad": "HEAD"}, {"confirmation": "noise"})]
    verdict = _verdict(tmp_path, findings)
    seen = _record_jobs(monkeypatch, lambda job: "it rose at bbbbbbbb.", details={"profile": ["+1 Ir"], "ops": []})
    out = tmp_path / "bundle"
    assert main(["explain", "--root", str(ROOT), "--verdict", verdict, "--out", str(out)]) == 1
    assert [(j.kind, j.workload, j.last_good, j.first_bad) for j in seen] == [("cost", "P1@64", "HEAD~1", "HEAD")]
    captured = capsys.readouterr()
    assert "never good in the recorded history" in captured.err
    assert "EngineSweep.time_simulate: a timing step not confirmed (noise), nothing to explain" in captured.err
    assert "it rose at bbbbbbbb." in captured.out
    assert "from bench_cost.InstructionCounts.track_instructions(workload='P1@64')" in (out / "answer.md").read_text()


def test_nothing_to_explain_is_exit_0_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """Only an unconfirmed timing step: nothing regressed, so nothing to explain, which is not a failure."""
    noise = _Finding({"family": "timing", "benchmark": "bench_engine.EngineSweep.time_simulate", "params": "",
                      "last_good": "HEAD~1", "first_bad": "HEAD"}, {"confirmation": "noise"})
    verdict = _verdict(tmp_path, [noise])
    out = tmp_path / "bundle"
    assert main(["explain", "--root", str(ROOT), "--verdict", verdict, "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == "explain: nothing to explain (see the notes above)"
    assert "a timing step not confirmed (noise), nothing to explain" in captured.err
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["judged"]


def test_images_that_do_not_reproduce_are_explained_once_per_axis_and_commit(tmp_path, monkeypatch, capsys):
    from detsim.track.commands import explain as cmd_explain

    def runs_differ(case, axis, last_good="HEAD~1"):
        return _Finding({"family": "reproducibility", "benchmark": "bench_reproducibility.Reproducibility."
                         "track_runs_differ", "params": f"(axis='{axis}', case='{case}')", "case": case,
                         "axis": axis, "last_good": last_good, "first_bad": "HEAD"})

    findings = [runs_differ("k01", "process"), runs_differ("s01", "process"), runs_differ("s01", "threads", None)]
    verdict = _verdict(tmp_path, findings)
    seen = []

    def fake_job(job, root, golden, folder, **kw):
        seen.append(job)
        folder.mkdir(parents=True)
        return {"job": {"kind": job.kind, "workload": job.workload, "last_good": None, "first_bad": "b" * 40,
                        "origin": job.origin, "axis": job.axis}, "changed": True, "answer": "they differ."}

    monkeypatch.setattr(cmd_explain, "explain_job", fake_job)
    out = tmp_path / "bundle"
    assert main(["explain", "--root", str(ROOT), "--verdict", verdict, "--out", str(out)]) == 1
    # s01 (256x256, one step a pixel) renders faster than k01 (10 mosaic domains)
    assert [(j.kind, j.workload, j.axis, j.first_bad) for j in seen] == [
        ("nondeterministic", "s01", "process", "HEAD"), ("nondeterministic", "s01", "threads", "HEAD")]
    assert ("2 nondeterministic findings at HEAD along process: one cause, explained once, on s01 (the cheapest to "
            "render)") in capsys.readouterr().err
    answers = (out / "answer.md").read_text()
    assert "## nondeterministic of s01 (at bbbbbbbb, process" in answers and "they differ. Also explains: k01." in answers
    assert "they differ.\n" in answers  # the threads axis stood for one finding: its answer as it was


def test_one_commit_that_changed_every_image_is_explained_once_naming_the_others(tmp_path, monkeypatch, capsys):
    from detsim.track.base.golden import load_cases

    cases = [c.id for c in load_cases(ROOT / "tests" / "golden")]
    findings = [_Finding({"family": "determinism", "benchmark": f"bench_determinism.track_hash_changed_{case}",
                          "params": "", "case": case, "last_good": "HEAD~1", "first_bad": "HEAD"}) for case in cases]
    findings.append(_Finding({"family": "parity", "benchmark": "track_parity_o01", "params": "", "case": "o01_polar_0.9",
                              "last_good": "HEAD~1", "first_bad": "HEAD"}))
    verdict = _verdict(tmp_path, findings)
    seen = _record_jobs(monkeypatch, lambda job: f"the image of {job.workload} changes at bbbbbbbb.")
    out = tmp_path / "bundle"
    assert main(["explain", "--root", str(ROOT), "--verdict", verdict, "--out", str(out)]) == 1
    # one explanation per cause: the hashes on the cheapest case (c02, 128x128 at one step a pixel), parity alone
    assert [(j.kind, j.workload) for j in seen] == [("hash", "c02_xds_xbeam_quirk"), ("parity", "o01_polar_0.9")]
    captured = capsys.readouterr()
    assert f"explain: {len(cases)} hash findings between HEAD~1 and HEAD: one cause, explained once, on " \
           "c02_xds_xbeam_quirk (the cheapest to render)" in captured.err
    assert (f"the image of c02_xds_xbeam_quirk changes at bbbbbbbb. Also explains: a01, b01, c01, d01, d02, ... "
            f"({len(cases) - 6} more).") in captured.out
    assert "the image of o01_polar_0.9 changes at bbbbbbbb.\n" in captured.out  # alone: as it always was
    [hashes, parity] = json.loads((out / "explain.json").read_text())["explanations"]
    assert hashes["job"]["also"] == [c for c in cases if c != "c02_xds_xbeam_quirk"] and "also" not in parity["job"]


def _cost_rise_and_its_memory(case="g01_hkl_nointerp") -> list[dict]:
    """What a commit adding ~2.6 % to one golden case's instruction count flags: that count, and (a side effect)
    the 4096² peak memory; the counted P1@64 rose 1.2 %, under the 2 % line, so the verdict does not flag it."""
    return [_Finding({"family": "cost", "benchmark": "bench_cost.InstructionCounts.track_instructions",
                      "params": f"(workload='{case}')", "last_good": "HEAD~1", "first_bad": "HEAD"}),
            _Finding({"family": "memory", "benchmark": "bench_engine.LargeDetectorMemory.peakmem_simulate_4096",
                      "params": "", "last_good": "HEAD~1", "first_bad": "HEAD"})]


def test_a_flagged_count_is_explained_itself_never_through_a_cheaper_stand_in(tmp_path, monkeypatch, capsys):
    verdict = _verdict(tmp_path, _cost_rise_and_its_memory())
    seen = _record_jobs(monkeypatch, lambda job: f"{job.workload} rose 2.6 %.")
    assert main(["explain", "--root", str(ROOT), "--verdict", verdict, "--out", str(tmp_path / "b")]) == 1
    assert [(j.kind, j.workload) for j in seen] == [("cost", "g01_hkl_nointerp")]  # not the stand-in P1@64
    captured = capsys.readouterr()
    assert "2 cost findings between HEAD~1 and HEAD: one cause, explained once, on g01_hkl_nointerp (the cheapest " \
           "flagged count)" in captured.err
    assert "g01_hkl_nointerp rose 2.6 %. Also explains: bench_engine.LargeDetectorMemory.peakmem_simulate_4096." \
        in captured.out


def test_a_stand_in_that_does_not_show_the_change_gives_way_to_the_flagged_workload(tmp_path, monkeypatch, capsys):
    from detsim.track.commands import explain as cmd_explain

    memory = _Finding({"family": "memory", "benchmark": "bench_memory.peakmem_simulate",
                       "params": "(workload='P2@256')", "last_good": "HEAD~1", "first_bad": "HEAD"})
    verdict = _verdict(tmp_path, [memory])
    seen = []

    def fake_job(job, root, golden, folder, **kw):  # the stand-in P2@32 barely moves; P2@256 itself rose
        seen.append(job)
        folder.mkdir(parents=True)
        changed = job.workload == "P2@256"
        return {"job": {"kind": job.kind, "workload": job.workload, "last_good": "a" * 40, "first_bad": "b" * 40,
                        "origin": job.origin}, "commits_between": ["b" * 40], "changed": changed,
                "answer": f"{job.workload} {'rose' if changed else 'does not change: nothing to explain here'}."}

    monkeypatch.setattr(cmd_explain, "explain_job", fake_job)
    out = tmp_path / "b"
    assert main(["explain", "--root", str(ROOT), "--verdict", verdict, "--out", str(out)]) == 1
    assert [j.workload for j in seen] == ["P2@32", "P2@256"]
    captured = capsys.readouterr()
    assert "P2@32, counted for bench_memory.peakmem_simulate(workload='P2@256'), does not change" in captured.err
    assert captured.out.splitlines()[-2:] == ["P2@256 rose.", f"evidence: {out}"]
    [record] = json.loads((out / "explain.json").read_text())["explanations"]
    assert record["job"]["workload"] == "P2@256" and record["stand_in"]["workload"] == "P2@32"


def test_a_targets_parity_finding_is_explained_by_where_its_image_departs(tmp_path, monkeypatch, capsys):
    from publish_assets import edge_departure, store_departure, stored_in

    monkeypatch.setattr("detsim.track.target.departure.stored", stored_in, raising=False)
    case, bad = "a01_cubic_mosflm_center", "b" * 40
    findings = [_Finding({"family": "parity", "benchmark": "target.parity", "params": f"(case='{case}')", "case": case,
                          "last_good": "a" * 40, "first_bad": bad}),
                _Finding({"family": "timing", "benchmark": "target.seconds", "params": f"(case='{case}')",
                          "last_good": "a" * 40, "first_bad": bad})]
    verdict = Path(_verdict(tmp_path, findings, target_results=str(tmp_path / "target")))
    out = tmp_path / "bundle"
    assert main(["explain", "--root", str(ROOT), "--verdict", str(verdict), "--out", str(out)]) == 2  # none stored
    assert f"no departure of its image stored in {tmp_path / 'target'} at bbbbbbbbbb" in capsys.readouterr().err
    assert not out.exists()
    store_departure(tmp_path / "target", bad, case, edge_departure())
    assert main(["explain", "--root", str(ROOT), "--verdict", str(verdict), "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert "target.seconds(case='a01_cubic_mosflm_center'): a target's timing finding; explain measures detsim's" \
        in captured.err
    lines = captured.out.splitlines()
    assert lines[:2] == ["+" + "-" * 16 + "+", "|" + "#" * 16 + "|"]  # the map: the edge band
    assert "full frame r = 0.89331296 (fails); central region rows 16-48, cols 16-48 r = 1.00000000 (passes); the " \
           "difference sits: edges" in lines
    assert "  (s=2, f=2): 0.901496 against 0.100166 (ratio 9)" in lines
    assert lines[-2].startswith(f"the image of {case} at bbbbbbbb departs from the reference: the images part at the "
                                "edges") and "the central region passes" in lines[-2]
    [record] = json.loads((out / "explain.json").read_text())["explanations"]
    assert record["details"]["departure"]["where"] == "edges" and record["job"]["first_bad"] == bad


def test_a_launch_finding_is_explained_by_counting_its_path_again():
    job = _job_for({"family": "cost", "unit": "copies", "params": "(mode='compiled')", "last_good": "a",
                    "first_bad": "b"}, "origin")
    assert (job.kind, job.workload, job.mode, job.measure) == ("launches", "P2@16", "compiled", "copies")
    assert job.name == "launches-P2@16-compiled"


def test_a_fused_kernel_finding_is_explained_by_compiling_the_kernel_again():
    job = _job_for({"family": "cost", "unit": "local bytes", "params": "(dtype='float64')", "last_good": "a",
                    "first_bad": "b"}, "origin")
    assert (job.kind, job.workload, job.dtype, job.measure) == ("kernel", "fused-kernel", "float64", "local bytes")
    assert job.name == "kernel-fused-kernel-float64"


def test_a_spill_is_named_with_the_fields_that_changed(tmp_path):
    from detsim.track.report.explain import ExplainJob, _answer, _explain_kernel, is_bad

    class Side:
        def __init__(self, short):
            self.short = short

    old = {"target": "cuda sm_90", "registers": 56, "local_bytes": 0, "instructions_per_step": 120.0,
           "calls": [], "atomics": [], "problems": []}
    new = {**old, "registers": 255, "local_bytes": 24,
           "problems": ["24 bytes of local memory per thread (spills or a call's stack)"]}
    job = ExplainJob("kernel", "a" * 40, "b" * 40, "fused-kernel", dtype="float32", measure="local bytes")
    details, finding = _explain_kernel(job, Side("aaaa"), Side("bbbb"), {"report": old}, {"report": new}, None,
                                       tmp_path, 10)
    assert details["lines"] == ["registers: 56 -> 255", "local_bytes: 0 -> 24"]
    assert finding == ("registers: 56 -> 255; local_bytes: 0 -> 24; new: 24 bytes of local memory per thread "
                       "(spills or a call's stack)")
    assert is_bad("kernel", 0)(24) and not is_bad("kernel", 120.0)(125.0) and is_bad("kernel", 120.0)(127.0)
    record = {"pair": {"old": "a" * 40, "new": "b" * 40, "subject": "a bigger block"}}
    answer = _answer(job, record, finding, 0, 24, None, 1)
    assert answer.startswith("the fused kernel's local bytes (float32, compiled for sm_90) changes at bbbbbbbb")
    assert "0 -> 24." in answer


def test_the_launches_that_grew_are_named_with_their_op(tmp_path):
    from detsim.track.report.explain import ExplainJob, _answer, _explain_launches

    class Side:
        def __init__(self, short):
            self.short = short

    old = {"launches": 131, "copies": 0, "syncs": 0, "triton_launches": 8, "compiled_calls": 0,
           "by_op": {"aten::mul": 50, "aten::add": 16}}
    new = {**old, "launches": 931, "by_op": {"aten::mul": 850, "aten::add": 16}}
    job = ExplainJob("launches", "a" * 40, "b" * 40, "P2@16", mode="triton")
    details, finding = _explain_launches(job, Side("aaaa"), Side("bbbb"), {"counts": old}, {"counts": new},
                                         None, tmp_path, 10)
    assert details["lines"] == ["aten::mul: 50 -> 850 (+800)"]
    assert finding == "the kernel launched most more often is aten::mul (50 -> 850)"
    record = {"pair": {"old": "a" * 40, "new": "b" * 40, "subject": "chunks again"}}
    answer = _answer(job, record, finding, 131, 931, None, 1)
    assert answer.startswith("the number of launches of one P2@16 render on the triton path changes at bbbbbbbb")
    assert "131 -> 931 (x7.11)" in answer
    assert (tmp_path / "explanation.txt").read_text().splitlines()[1] == "aten::mul: 50 -> 850 (+800)"


LAUNCH_PLANT = ("detsim/rendering/engine.py", "        return paths.chunk_values(chunk)\n",
                "        for _ in range(100):  # planted: a kernel per step again\n"
                "            torch.ones(1).add_(1.0)\n"
                "        return paths.chunk_values(chunk)\n")


@pytest.mark.slow
def test_planted_launches_are_bisected_to_their_commit_and_named(tmp_path_factory, tmp_path):
    repo = tmp_path_factory.mktemp("launches") / "repo"
    base = make_history(repo)
    planted_at = commit_change(repo, "render: a kernel per step", LAUNCH_PLANT)
    commit_change(repo, "a note")
    code, record, out = _explain(repo, tmp_path, base, "HEAD", "--kind", "launches", "--mode", "eager")
    assert code == 1 and record["changed"] and record["pair"]["new"] == planted_at
    top = record["details"]["top_op"]
    # the plant launches 100 add_ kernels per chunk the render computes (one or more chunks a render)
    assert top["op"] == "aten::add_" and top["new"] > top["old"] and (top["new"] - top["old"]) % 100 == 0
    assert "The kernel launched most more often is aten::add_ (" in record["answer"]
    assert (out / "launches-P2@16-eager" / "explanation.txt").is_file()
