"""The family rows from a synthetic verdict: colours, words, the commits named and the graph links."""

from __future__ import annotations

from detsim.track.base.exitcodes import ExitCode
from detsim.track.judge.finding import Finding
from detsim.track.judge.history import Point, Series
from detsim.track.judge.verdict import Report
from detsim.track.judge.verdict import families_at
from detsim.track.publish.rows import AMBER, GREEN, GREY, RED, ROWS, family_rows, presence

C1, C2, C3 = "1" * 40, "2" * 40, "3" * 40
SWEEP = "bench_engine.EngineSweep.time_simulate"
BENCHMARKS = {SWEEP: {"param_names": ["pixels"], "params": [["128", "256"]]},
              "bench_parity.track_parity_w01": {"params": []}, "bench_determinism.track_hash_changed_w03": {"params": []}}


def _series(name, family, values, params="", case=None, unit="seconds"):
    return Series(env="e", name=name, params=params, family=family, unit=unit, case=case,
                  points=tuple(Point(c, v) for c, v in zip((C1, C2, C3), values)))


SLOW = _series(SWEEP, "timing", [1.0, 1.0, 2.0], "(pixels=256)")
FAST = _series(SWEEP, "timing", [1.0, 1.0, 1.0], "(pixels=128)")
PARITY = _series("bench_parity.track_parity_w01", "parity", [0.0, 0.0, 0.9], case="w01", unit="1 - r")
HASH = _series("bench_determinism.track_hash_changed_w03", "determinism", [0.0, 0.0, 1.0], case="w03", unit="changed (0/1)")
MEMORY = _series("bench_engine.EngineMemory.peakmem_simulate", "memory", [1e8, 1e8, None], unit="bytes")
REFERENCE = _series("bench_engine.MachineReference.time_reference", "reference", [1.0, 1.0, 1.0])


def _report(findings, unmeasured=()) -> dict:
    return Report(generated_at="20260101T000000Z", machine="m", envs=("e",), commits=(C1, C2, C3), latest=C3,
                  subjects={C1: "one", C2: "two", C3: "three"}, regressions=tuple(findings), unmeasured=tuple(unmeasured),
                  skipped=0, built=True, notes=(), exit=ExitCode.REGRESSED).as_json()


FINDINGS = [Finding(SLOW, C2, C3, 1.0, 2.0, {"rank_test_p": 1e-6}), Finding(PARITY, C2, C3, 0.0, 0.9),
            Finding(HASH, C2, C3, 0.0, 1.0, {"old_sha256": "a" * 64, "new_sha256": "b" * 64})]


def test_presence_counts_the_latest_point_and_merges_families():
    throughput = _series("bench_engine.Throughput.track_pixel_steps_per_second", "throughput", [5, 5, float("nan")],
                         unit="Mpixel-steps/s")
    here = presence(families_at([SLOW, FAST, MEMORY, REFERENCE, throughput], C3))
    assert set(here) == {"timing", "memory"}  # the reference has no row; throughput joins timing
    assert (here["timing"].measured, here["timing"].skipped) == (2, 1)
    assert here["memory"].failed == ["bench_engine.EngineMemory.peakmem_simulate"]


def test_rows_from_a_regressed_report():
    rows = family_rows(_report(FINDINGS, [MEMORY.label]), presence(families_at([SLOW, FAST, PARITY, HASH, MEMORY], C3)), BENCHMARKS)
    by = {r.family: r for r in rows}
    assert [r.family for r in rows] == list(ROWS)
    assert {f: r.status for f, r in by.items()} == {"timing": RED, "memory": AMBER, "cost": GREY, "parity": RED,
                                                    "determinism": RED}
    [slow] = by["timing"].items
    assert slow.text == f"{SWEEP}(pixels=256): 1 -> 2 seconds (x2.00)" and slow.commit == C3
    assert slow.href == f"index.html#{SWEEP}?p-pixels=256&commits=22222222-33333333"
    assert by["parity"].items[0].text == "w01: r 1.000000000 -> 0.100000000"
    assert by["determinism"].items[0].text == f"w03: image sha256 {'a' * 12} -> {'b' * 12}"
    assert by["memory"].verdict == "not measured" and by["memory"].summary == "1 failed at the latest commit"
    assert by["memory"].items[0].href == "index.html#bench_engine.EngineMemory.peakmem_simulate"
    assert by["cost"].summary == "no benchmark of this family recorded"


def test_confirmations_are_shown_and_undecided_or_noise_neither_make_a_row_red_nor_amber():
    undecided = Finding(SLOW, C2, C3, 1.0, 2.0, {"confirmation": "undecided", "decide_command": "detsim-track regressions --machine m"})
    noise = Finding(SLOW, C2, C3, 1.0, 2.0, {"confirmation": "noise"})
    confirmed = Finding(SLOW, C2, C3, 1.0, 2.0, {"confirmation": "confirmed", "confirmation_evidence": "x2.0, p=0.001"})
    here = presence(families_at([SLOW, FAST], C3))
    [row] = [r for r in family_rows(_report([undecided]), here, BENCHMARKS) if r.family == "timing"]
    assert (row.status, row.verdict) == (GREY, "undecided") and row.items[0].text.endswith("[undecided]")
    assert "`detsim-track regressions --machine m` decides" in row.summary
    [row] = [r for r in family_rows(_report([noise]), here, BENCHMARKS) if r.family == "timing"]
    assert row.status == GREEN and "1 dismissed as noise" in row.summary
    [row] = [r for r in family_rows(_report([confirmed]), here, BENCHMARKS) if r.family == "timing"]
    assert row.status == RED and row.items[0].text.endswith("[confirmed]") and row.items[0].evidence == "x2.0, p=0.001"


def test_hashes_skipped_on_another_machine_class_are_not_comparable():
    skipped = _series("bench_determinism.track_hash_changed_w03", "determinism", [0.0, 0.0, float("nan")], case="w03")
    rows = family_rows(_report([]), presence(families_at([FAST, skipped], C3)), BENCHMARKS, "image hashes not compared: ...")
    [row] = [r for r in rows if r.family == "determinism"]
    assert (row.status, row.verdict, row.summary) == (AMBER, "not comparable", "image hashes not compared: ...")
    assert [r.status for r in rows if r.family == "timing"] == [GREEN]


def test_a_family_outside_the_five_gets_its_own_row():
    other = _series("bench_x.track_something", "track", [1, 1, 1], unit="things")
    rows = family_rows(_report([]), presence(families_at([other], C3)), BENCHMARKS)
    assert [r.family for r in rows] == [*ROWS, "track"] and rows[-1].status == GREEN


def test_fingerprints_count_for_determinism_and_the_machine_class_has_no_row():
    prints = _series("bench_determinism.track_fingerprint_w03", "fingerprint", [7.0, 7.0, 7.0], case="w03")
    klass = _series("bench_determinism.track_machine_class", "machine class", [1.0, 1.0, 1.0])
    skipped = _series("bench_determinism.track_hash_changed_w03", "determinism", [0.0, 0.0, float("nan")], case="w03")
    rows = family_rows(_report([]), presence(families_at([prints, klass, skipped], C3)), BENCHMARKS)
    assert [r.family for r in rows] == list(ROWS)
    [row] = [r for r in rows if r.family == "determinism"]
    assert row.status == GREEN and row.summary == "1 measured, none regressed (1 skipped)"


def test_the_determinism_row_says_not_reproducible_before_changed():
    runs = _series("bench_reproducibility.Reproducibility.track_runs_differ", "reproducibility", [0.0, 0.0, 1.0],
                   "(axis='threads', case='w03')", case="w03", unit="runs differ (0/1)")
    irreproducible = Finding(runs, C2, C3, 0.0, 1.0, {"axis": "threads", "runs": "2 threads against 1"})
    both = {r.family: r for r in family_rows(_report([irreproducible, FINDINGS[2]]), presence(families_at([HASH, runs], C3)),
                                             BENCHMARKS)}
    row = both["determinism"]
    assert (row.status, row.verdict, row.summary) == (RED, "not reproducible", "1 not reproducible, 1 changed")
    assert row.items[0].text == "w03: two runs differ (threads)" and row.items[0].commit == C3
    changed = {r.family: r for r in family_rows(_report(FINDINGS[2:]), presence(families_at([HASH], C3)), BENCHMARKS)}
    assert (changed["determinism"].verdict, changed["determinism"].summary) == ("changed", "1 changed")
