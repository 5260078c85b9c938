"""One explanation per cause: jobs of one kind between the same commits (or along one axis at one commit) are
one job, on the cheapest workload, naming the others; a job alone is unchanged."""

from __future__ import annotations

import math
from pathlib import Path

from detsim.track.explain.grouping import NAMED, also_text, cost, one_per_cause, short, with_others
from detsim.track.explain.jobs import Job

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
GOOD, BAD = "1" * 40, "2" * 40


def test_the_cost_of_a_workload_is_its_pixel_steps():
    assert cost("P1@64", GOLDEN) == 64 * 64 and cost("P2@32", GOLDEN) == 32 * 32 * 200
    assert cost("c02", GOLDEN) == 128 * 128 and cost("k01_mosaic_10dom", GOLDEN) > cost("a01", GOLDEN)
    assert cost("zz_not_a_case", GOLDEN) == math.inf


def test_findings_of_one_cause_become_one_job_on_the_cheapest_case():
    hashes = [Job("hash", GOOD, BAD, case, f"bench_determinism.track_hash_changed_{case}")
              for case in ("k01_mosaic_10dom", "a01_cubic_mosflm_center", "c02_xds_xbeam_quirk")]
    later = Job("hash", BAD, "3" * 40, "a01_cubic_mosflm_center")  # another change: its own explanation
    parity = Job("parity", GOOD, BAD, "k01_mosaic_10dom")  # another kind: its own explanation
    jobs, notes = one_per_cause([*hashes, later, parity], GOLDEN)
    assert jobs == [Job("hash", GOOD, BAD, "c02_xds_xbeam_quirk", hashes[2].origin,
                        also=("k01_mosaic_10dom", "a01_cubic_mosflm_center")), later, parity]
    assert notes == ["3 hash findings between 11111111 and 22222222: one cause, explained once, on c02_xds_xbeam_quirk "
                     "(the cheapest to render); its answer names the others"]


def test_timings_that_map_to_one_counted_workload_are_one_job_naming_their_benchmarks():
    timings = [Job("cost", GOOD, BAD, "P2@32", "bench_engine.NanoBraggWorkloads.time_simulate(workload='P2')"),
               Job("cost", GOOD, BAD, "P1@64", "bench_engine.EngineSweep.time_simulate(pixels=128)"),
               Job("cost", GOOD, BAD, "P1@64", "bench_engine.EngineSweep.time_simulate(pixels=256)")]
    [job], _ = one_per_cause(timings, GOLDEN)
    assert (job.workload, job.origin) == ("P1@64", timings[1].origin)
    assert job.also == (timings[0].origin, timings[2].origin)


def test_images_that_do_not_reproduce_group_by_axis_and_commit_whatever_their_last_good():
    runs = [Job("nondeterministic", GOOD, BAD, "k01_mosaic_10dom", axis="process"),
            Job("nondeterministic", BAD, BAD, "s01_noise_intfile_scale", axis="process"),
            Job("nondeterministic", GOOD, BAD, "a01_cubic_mosflm_center", axis="threads")]
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
    assert with_others(record, Job("hash", GOOD, BAD, "c02")) is record
    grouped = with_others(record, Job("hash", GOOD, BAD, "c02", also=("a01_x",)))
    assert grouped["answer"] == "It changed. Also explains: a01." and grouped["job"]["also"] == ["a01_x"]
    assert record == {"job": {"kind": "hash", "workload": "c02"}, "answer": "It changed."}  # not changed in place


def test_a_flagged_count_is_kept_over_a_cheaper_stand_in_and_a_stand_in_only_where_nothing_else():
    count = Job("cost", GOOD, BAD, "g01_hkl_nointerp", "bench_cost.InstructionCounts.track_instructions")
    memory = Job("cost", GOOD, BAD, "P1@64", "bench_engine.LargeDetectorMemory.peakmem_simulate_4096", stand_in=True)
    assert cost("P1@64", GOLDEN) < cost("g01_hkl_nointerp", GOLDEN)
    [kept], [note] = one_per_cause([memory, count], GOLDEN)
    assert kept == Job("cost", GOOD, BAD, "g01_hkl_nointerp", count.origin, also=(memory.origin,))
    assert "on g01_hkl_nointerp (the cheapest flagged count)" in note
    timing = Job("cost", GOOD, BAD, "P2@32", "bench_engine.PathThroughput.track_ns_per_pixel_step", stand_in=True)
    [kept], _ = one_per_cause([timing, memory], GOLDEN)  # stand-ins alone: the cheapest of them
    assert kept.workload == "P1@64" and kept.stand_in
