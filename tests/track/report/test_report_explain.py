"""explain's jobs (bisection, measures, answers), one explanation per cause, the bundle, a target's departure."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from detsim.track.base.git import resolve
from detsim.track.evidence.manifest import check_bundle
from detsim.track.report import explain
from detsim.track.base.bisection import bisect
from detsim.track.report.explain import NAMED, ExplainJob, also_text, answer_text, explain_job, \
    is_bad, one_per_cause, render_cost, short, with_others, write_bundle
from detsim.track.report.sides import Side

from explain_history import git


# ---- explain jobs: the bisection's predicates over synthetic histories, and one explanation's flow on a tiny history with measurements faked:

def test_two_unrecorded_commits_deep():
    history = {"good": 10, "a": 10, "b": 10, "c": 13}  # a, b unrecorded; c the recorded first bad; b still good
    assert bisect(list(history), history.__getitem__, is_bad("cost", 10)).first_bad == "c"
    history = {"good": 10, "a": 10, "b": 13, "c": 13}
    assert bisect(list(history), history.__getitem__, is_bad("cost", 10)).first_bad == "b"


def test_predicates_per_kind():
    assert not is_bad("cost", 1000)(1020) and is_bad("cost", 1000)(1021)  # 2 % threshold
    assert is_bad("parity", 1e-9)(2e-9) and not is_bad("parity", 1e-9)(1e-9)
    assert is_bad("hash", "aa")("ab") and not is_bad("hash", "aa")("aa")


@pytest.fixture
def history(tmp_path, monkeypatch):
    """good, u1, u2 (the real first bad), u3 (the recorded first bad): counts 100, 100, 150, 150."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    shas = []
    for name in ("good", "u1", "u2 planted", "u3"):
        (repo / "f.txt").write_text(name)
        git(repo, "add", "f.txt")
        git(repo, "commit", "-q", "-m", name)
        shas.append(git(repo, "rev-parse", "HEAD"))
    values = dict(zip(shas, (100, 100, 150, 150)))
    measured = []

    def measure(job, side, golden, folder):
        measured.append(side.commit)
        return values[side.commit], {}

    monkeypatch.setattr(explain, "prepare_side", lambda root, commit, dest: Side(resolve(root, commit), dest, "python"))
    monkeypatch.setattr(explain, "_measure", measure)
    monkeypatch.setattr(explain, "_explain_cost", lambda *a: ({"profile": ["x"]}, "+0.05 M Ir (100% of the change) in k"))
    return repo, shas, values, measured


def test_unrecorded_commits_are_bisected_and_the_pair_is_the_first_bad_and_its_parent(history, tmp_path):
    repo, shas, _, measured = history
    record = explain_job(ExplainJob("cost", shas[0], shas[3], "P1@64"), repo, tmp_path, tmp_path / "out")
    assert record["changed"] and record["bisection"]["first_bad"] == shas[2]
    assert record["pair"] == {"old": shas[1], "new": shas[2], "subject": "u2 planted"}
    assert sorted(measured) == sorted(shas)  # good, recorded bad, the probes; each once
    assert record["answer"].startswith(f"bisected over 3 commits in 2 measurement(s): the instruction count of "
                                       f"P1@64 changes at {shas[2][:8]} (\"u2 planted\", parent {shas[1][:8]}): "
                                       "100 -> 150 (+50.0%). +0.05 M Ir")


def test_without_bisection_the_given_pair_is_explained(history, tmp_path):
    repo, shas, _, _ = history
    record = explain_job(ExplainJob("cost", shas[1], shas[2], "P1@64"), repo, tmp_path, tmp_path / "out", bisecting=False)
    assert record["bisection"] is None and record["pair"]["new"] == shas[2]


def test_no_change_between_the_commits_is_said_and_not_explained(history, tmp_path):
    repo, shas, values, _ = history
    record = explain_job(ExplainJob("cost", shas[2], shas[3], "P1@64"), repo, tmp_path, tmp_path / "out")
    assert record["changed"] is False and "does not change" in record["answer"]


# ---- explain grouping: One explanation per cause: jobs of one kind between the same commits (or along one axis at one commit) are

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
GOOD, BAD = "1" * 40, "2" * 40


def test_the_cost_of_a_workload_is_its_pixel_steps():
    assert render_cost("P1@64", GOLDEN) == 64 * 64 and render_cost("P2@32", GOLDEN) == 32 * 32 * 200
    assert render_cost("c02", GOLDEN) == 128 * 128 and render_cost("k01_mosaic_10dom", GOLDEN) > render_cost("a01", GOLDEN)
    assert render_cost("zz_not_a_case", GOLDEN) == math.inf


def test_findings_of_one_cause_become_one_job_on_the_cheapest_case():
    hashes = [ExplainJob("hash", GOOD, BAD, case, f"bench_determinism.track_hash_changed_{case}")
              for case in ("k01_mosaic_10dom", "a01_cubic_mosflm_center", "c02_xds_xbeam_quirk")]
    later = ExplainJob("hash", BAD, "3" * 40, "a01_cubic_mosflm_center")  # another change: its own explanation
    parity = ExplainJob("parity", GOOD, BAD, "k01_mosaic_10dom")  # another kind: its own explanation
    jobs, notes = one_per_cause([*hashes, later, parity], GOLDEN)
    assert jobs == [ExplainJob("hash", GOOD, BAD, "c02_xds_xbeam_quirk", hashes[2].origin,
                        also=("k01_mosaic_10dom", "a01_cubic_mosflm_center")), later, parity]
    assert notes == ["3 hash findings between 11111111 and 22222222: one cause, explained once, on c02_xds_xbeam_quirk "
                     "(the cheapest to render); its answer names the others"]


def test_timings_that_map_to_one_counted_workload_are_one_job_naming_their_benchmarks():
    timings = [ExplainJob("cost", GOOD, BAD, "P2@32", "bench_engine.NanoBraggWorkloads.time_simulate(workload='P2')"),
               ExplainJob("cost", GOOD, BAD, "P1@64", "bench_engine.EngineSweep.time_simulate(pixels=128)"),
               ExplainJob("cost", GOOD, BAD, "P1@64", "bench_engine.EngineSweep.time_simulate(pixels=256)")]
    [job], _ = one_per_cause(timings, GOLDEN)
    assert (job.workload, job.origin) == ("P1@64", timings[1].origin)
    assert job.also == (timings[0].origin, timings[2].origin)


def test_images_that_do_not_reproduce_group_by_axis_and_commit_whatever_their_last_good():
    runs = [ExplainJob("nondeterministic", GOOD, BAD, "k01_mosaic_10dom", axis="process"),
            ExplainJob("nondeterministic", BAD, BAD, "s01_noise_intfile_scale", axis="process"),
            ExplainJob("nondeterministic", GOOD, BAD, "a01_cubic_mosflm_center", axis="threads")]
    jobs, notes = one_per_cause(runs, GOLDEN)
    assert [(j.workload, j.axis, j.also) for j in jobs] == [
        ("s01_noise_intfile_scale", "process", ("k01_mosaic_10dom",)), ("a01_cubic_mosflm_center", "threads", ())]
    assert notes == ["2 nondeterministic findings at 22222222 along process: one cause, explained once, on "
                     "s01_noise_intfile_scale (the cheapest to render); its answer names the others"]


def test_the_answer_names_the_others_and_a_job_alone_keeps_its_answer():
    others = tuple(f"{letter}01_case" for letter in "bcdefghij")
    assert also_text(others) == f"Also explains: b01, c01, d01, e01, f01, ... ({len(others) - NAMED} more)."
    assert also_text(("k01_mosaic_10dom", "bench_engine.X.time_y(n=1)")) == \
        "Also explains: k01, bench_engine.X.time_y(n=1)."
    assert short("o01_polar_0.9") == "o01" and short("P1@64") == "P1@64" and short("my_case") == "my_case"
    record = {"job": {"kind": "hash", "workload": "c02"}, "answer": "It changed."}
    assert with_others(record, ExplainJob("hash", GOOD, BAD, "c02")) is record
    grouped = with_others(record, ExplainJob("hash", GOOD, BAD, "c02", also=("a01_x",)))
    assert grouped["answer"] == "It changed. Also explains: a01." and grouped["job"]["also"] == ["a01_x"]
    assert record == {"job": {"kind": "hash", "workload": "c02"}, "answer": "It changed."}  # not changed in place


def test_a_flagged_count_is_kept_over_a_cheaper_stand_in_and_a_stand_in_only_where_nothing_else():
    count = ExplainJob("cost", GOOD, BAD, "g01_hkl_nointerp", "bench_cost.InstructionCounts.track_instructions")
    memory = ExplainJob("cost", GOOD, BAD, "P1@64", "bench_engine.LargeDetectorMemory.peakmem_simulate_4096", stand_in=True)
    assert render_cost("P1@64", GOLDEN) < render_cost("g01_hkl_nointerp", GOLDEN)
    [kept], [note] = one_per_cause([memory, count], GOLDEN)
    assert kept == ExplainJob("cost", GOOD, BAD, "g01_hkl_nointerp", count.origin, also=(memory.origin,))
    assert "on g01_hkl_nointerp (the cheapest flagged count)" in note
    timing = ExplainJob("cost", GOOD, BAD, "P2@32", "bench_engine.PathThroughput.track_ns_per_pixel_step", stand_in=True)
    [kept], _ = one_per_cause([timing, memory], GOLDEN)  # stand-ins alone: the cheapest of them
    assert kept.workload == "P1@64" and kept.stand_in


# ---- explain bundle: The bundle's shared files: the answer, the commands, the environment and a manifest that checks out.

RECORD = {"job": {"kind": "cost", "workload": "P1@64", "last_good": "a" * 40, "first_bad": "b" * 40,
                  "origin": "command line"},
          "commits_between": ["c" * 40, "b" * 40], "answer": "The count rises at cccccccc.", "changed": True}


def test_the_answer_has_one_paragraph_per_explanation():
    text = answer_text([RECORD])
    assert "## cost of P1@64 (aaaaaaaa..bbbbbbbb, from command line)" in text
    assert "The count rises at cccccccc." in text


def test_finish_writes_every_file_and_a_manifest_of_them(tmp_path):
    (tmp_path / "cost-P1@64").mkdir()
    (tmp_path / "cost-P1@64" / "explanation.txt").write_text("x\n")
    write_bundle(tmp_path, [RECORD], ["explain", "a", "b"], tmp_path)
    assert json.loads((tmp_path / "explain.json").read_text())["explanations"][0]["answer"].startswith("The count")
    commands = (tmp_path / "commands.txt").read_text()
    assert "detsim-track explain a b" in commands and f"# commit {'c' * 40}" in commands
    assert check_bundle(tmp_path) == []
    listed = (tmp_path / "sha256.txt").read_text()
    assert "cost-P1@64/explanation.txt" in listed and "answer.md" in listed
