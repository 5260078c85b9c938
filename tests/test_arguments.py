"""Tests for detsim.arguments: the raw-argument record and C's number readers (spec §2.0)."""

from detsim.arguments import Arguments, c_atof, c_atoi
from detsim.config import Convention, Pivot


def test_c_number_parsing_helpers():
    assert c_atof("12abc") == 12.0
    assert c_atof("-cell") == 0.0
    assert c_atof("1e-3x") == 1e-3
    assert c_atoi("7.9") == 7
    assert c_atoi("x") == 0


def test_a_fresh_record_holds_nanobraggs_defaults_and_shares_no_lists():
    a, b = Arguments(), Arguments()
    assert a.convention is Convention.MOSFLM and a.pivot is Pivot.BEAM and a.cell == []
    a.cell.append(100.0)
    assert b.cell == []  # each record has its own lists
