"""detsim.track.target.outcome: a render's outcome, typed, summarised in one line and stored as JSON."""

from __future__ import annotations

import json

from detsim.track.target.outcome import CaseOutcome, Ending

PARITY = {"r": 0.999, "max_rel": 0.25, "sum_ratio": 1.01, "shape": [4, 4]}


def test_an_image_knows_its_parity_and_whether_a_second_process_reproduced_it():
    once = CaseOutcome("a01", Ending.IMAGE, seconds=1.5, sha256="a" * 64, hashes=("a" * 64,), parity=PARITY)
    twice = CaseOutcome("a01", Ending.IMAGE, seconds=1.5, sha256="a" * 64, hashes=("a" * 64, "b" * 64), parity=PARITY)
    assert once.reproduced is None and twice.reproduced is False
    assert abs(once.one_minus_r - 0.001) < 1e-12 and not once.at_parity
    assert "NOT reproduced" in twice.summary() and "1 - r = 0.001" in once.summary()


def test_a_failure_is_its_own_kind_and_never_at_parity():
    crash = CaseOutcome("a01", Ending.CRASHED, "exited 1: boom", stderr_tail=("Traceback", "boom"))
    assert crash.status.is_failure and not crash.at_parity and crash.reproduced is None and crash.r is None
    assert crash.summary() == "crashed: exited 1: boom"
    assert not Ending.IMAGE.is_failure and all(s.is_failure for s in Ending if s is not Ending.IMAGE)


def test_the_record_is_strict_json_and_reads_back_the_same():
    for outcome in (CaseOutcome("a01", Ending.IMAGE, seconds=2.0, peak_mb=300.0, sha256="c" * 64,
                                hashes=("c" * 64, "c" * 64), parity=PARITY),
                    CaseOutcome("b01", Ending.WRONG_SIZE, "wrote 4 bytes", seconds=1.0)):
        record = json.loads(json.dumps(outcome.record(), allow_nan=False))
        again = CaseOutcome.from_record(record)
        assert again == outcome and again.parity == outcome.parity
        assert record["status"] == outcome.status.value and record["reproduced"] == outcome.reproduced
