"""detsim.track.judge.family: one enum of the verdict's families, each member equal to the word the stored
verdicts and tables use."""

from __future__ import annotations

import json

from detsim.track.judge.family import FAMILY_ORDER, Family
from detsim.track.judge.benchmarks import family_of


def test_a_member_is_its_word_in_text_json_and_lookups():
    assert Family.IMAGE_CHANGED == "determinism" and f"{Family.RUNS_DIFFER}" == "reproducibility"
    assert json.dumps({Family.CASES_CHANGED: Family.COUNTED_COST}) == '{"hash count": "cost"}'
    assert {"parity": 1}[Family.PARITY] == 1 and Family("machine class") is Family.MACHINE_CLASS
    assert FAMILY_ORDER.index("timing") == 0 and len(set(FAMILY_ORDER)) == len(FAMILY_ORDER) == 12


def test_family_of_names_members():
    assert family_of("bench_parity.track_parity_a01", {}) is Family.PARITY
    assert family_of("b.Reproducibility.track_runs_differ", {}) is Family.RUNS_DIFFER
    assert family_of("b.time_x", {}) is Family.TIMING
    assert family_of("b.track_count", {"unit": "instructions"}) is Family.COUNTED_COST
    assert family_of("b.track_rate", {"unit": "Mpixel-steps/s"}) is Family.THROUGHPUT
    assert family_of("b.track_other", {"unit": "things"}) is Family.OTHER_TRACK
