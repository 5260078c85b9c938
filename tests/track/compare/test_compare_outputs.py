"""compare.outputs: the one comparer pairs two records' named outputs and lists every difference, the first first."""

from __future__ import annotations

from detsim.track.compare.outputs import Difference, OutputDiff, compare_outputs


def test_outputs_pair_by_name_in_run_a_order_then_what_run_b_alone_holds():
    a = {"x": 1, "gone": 2, "y": 3, "z": 4}
    b = {"new": 9, "z": 4, "y": 5, "x": 1, "later": 7}
    found = compare_outputs(a, b)
    assert found.compared == 3  # x, y, z
    assert found.differences == (Difference("gone", 2, None, only="A"), Difference("y", 3, 5, True),
                                 Difference("new", None, 9, only="B"), Difference("later", None, 7, only="B"))


def test_the_test_decides_what_differs_and_its_answer_is_kept():
    within = compare_outputs({"v": 1.0, "w": 2.0}, {"v": 1.05, "w": 3.0},
                             lambda x, y: None if abs(x - y) <= 0.1 else ("values", abs(x - y)))
    assert [(d.name, d.detail) for d in within.differences] == [("w", ("values", 1.0))]
    assert within.compared == 2


def test_identical_records_have_no_difference():
    same = compare_outputs({"image": "ab12"}, {"image": "ab12"})
    assert same == OutputDiff(1)
    assert compare_outputs({}, {}) == OutputDiff(0)
