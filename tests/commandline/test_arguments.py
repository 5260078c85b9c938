"""Tests for detsim.commandline.arguments: the raw-argument record (spec §2.0)."""

from detsim.commandline.arguments import Arguments
from detsim.model.config import Convention, Pivot


def test_a_fresh_record_holds_nanobraggs_defaults_and_shares_no_lists():
    a, b = Arguments(), Arguments()
    assert a.convention is Convention.MOSFLM and a.pivot is Pivot.BEAM and a.cell == []
    a.cell.append(100.0)
    assert b.cell == []  # each record has its own lists
