"""divergence.finder: find_divergence names planted culprits and their victims exactly, and nothing else."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from detsim.track.divergence.finder import find_divergence

DATA = Path(__file__).resolve().parents[2] / "data"
sys.path.insert(0, str(DATA))
import planted_divergence  # noqa: E402
import planted_ops  # noqa: E402
from markers import marked_line  # noqa: E402


def test_unseeded_randomness_is_the_culprit_and_its_consumer_a_victim():
    report = find_divergence(planted_ops.unseeded_noise)
    culprit = report.first
    assert culprit.role == "culprit" and culprit.kind == "op" and culprit.name == "aten.rand.default"
    assert culprit.where.endswith(marked_line(DATA / "planted_ops.py", "unseeded_noise", "culprit"))
    assert culprit.tensor == "out" and culprit.hash_a != culprit.hash_b and len(culprit.hash_a) == 64
    assert "manual_seed" in culprit.fix
    victim = report.victims[0]
    assert victim.name == "aten.mul.Tensor" and victim.tensor == "self"
    assert victim.where.endswith(marked_line(DATA / "planted_ops.py", "unseeded_noise", "victim"))
    assert victim.producer["index"] == culprit.index and victim.producer["role"] == "culprit"
    assert (victim.hash_a, victim.hash_b) == (culprit.hash_a, culprit.hash_b)
    assert report.culprit_count == 1 and report.exit_code() == 1
    assert report.verdict() == "DIVERGED at #1: culprit op aten.rand.default (`out`)"


def test_a_custom_op_with_a_hidden_counter_is_the_culprit():
    report = find_divergence(planted_ops.hidden_counter)
    culprit = report.first
    assert (culprit.role, culprit.name) == ("culprit", "planted.drift.default")
    assert culprit.where.endswith(marked_line(DATA / "planted_ops.py", "hidden_counter", "culprit"))
    assert "custom op" in culprit.reason and "hidden state" in culprit.reason
    first, second = report.victims[:2]
    assert (first.name, first.tensor, first.producer["index"]) == ("aten.sin.default", "self", culprit.index)
    assert first.where.endswith(marked_line(DATA / "planted_ops.py", "hidden_counter", "victim"))
    assert second.name == "aten.sum.default" and second.producer["name"] == "aten.sin.default"
    assert second.root["index"] == culprit.index
    assert report.result_differences and report.culprit_count == 1


def test_a_deterministic_computation_has_no_divergence():
    report = find_divergence(planted_ops.deterministic)
    assert report.first is None and not report.victims and not report.result_differences
    assert report.exit_code() == 0 and report.verdict().startswith("NO DIVERGENCE")
    assert report.results_compared == 2 and report.events_a == report.events_b > 10


def test_thread_dependent_split_is_found_across_thread_counts():
    report = find_divergence(planted_ops.thread_dependent_sum, threads=(1, 2))
    assert report.threads == (1, 2)
    assert report.first.role == "culprit" and report.first.name == "aten.slice.Tensor"
    assert report.first.scalars["end"] == ["32768", "16384"]


def test_each_run_gets_fresh_clones_of_the_tensor_arguments(dtype):
    """An in-place update of an argument must not leak from run A into run B."""
    x = torch.ones(4, dtype=dtype, requires_grad=False)

    def bump(t, *, by):
        t.add_(by)
        return t * 2

    report = find_divergence(bump, x, by=1.0, label="bump")
    assert report.first is None and report.label == "bump" and report.results_compared == 1
    assert torch.equal(x, torch.ones(4, dtype=dtype))  # the caller's tensor is untouched


def test_the_command_module_re_exports_the_api():
    from detsim.track.commands import diverge as cmd_diverge

    assert cmd_diverge.find_divergence is find_divergence


# --- planted cases of the kinds the finder once got wrong (tests/data/planted_divergence.py) ---

PLANTED = DATA / "planted_divergence.py"


def _line(function: str, marker: str) -> str:
    return marked_line(PLANTED, function, marker)


def test_never_written_padding_that_reaches_no_result_is_no_divergence():
    report = find_divergence(planted_divergence.padded_scratch)
    assert report.first is None and not report.victims and report.exit_code() == 0
    assert report.verdict().startswith("NO DIVERGENCE") and report.results_compared == 1
    (note,) = [n for n in report.notes if "aten.gt.Scalar" in n]
    assert "read never-written memory" in note and "not a divergence" in note and "allocated by #0" in note


def test_a_read_of_never_written_memory_that_reaches_the_result_is_its_own_finding():
    report = find_divergence(planted_divergence.garbage_accumulator)
    first = report.first
    assert (first.role, first.name) == ("uninitialized", "aten.add_.Tensor")
    assert first.where.endswith(_line("garbage_accumulator", "reads garbage"))
    assert first.reads["name"] == "self" and first.reads["count"] == planted_divergence.WIDTH
    assert _line("garbage_accumulator", "allocated").split(" in ")[0] in first.reads["note"]
    assert report.verdict() == "DIVERGED at #3: op aten.add_.Tensor reads uninitialized memory (`self`)"
    assert "fill_uninitialized_memory" in first.fix and report.exit_code() == 1
    assert all(v.root["index"] == first.index for v in report.victims) and report.culprit_count == 1


def test_module_state_updated_in_place_is_named_as_written_by_run_a_and_read_by_run_b():
    report = find_divergence(planted_divergence.running_mean_update)
    leak = report.first
    reader, writer = _line("running_mean_update", "reader"), _line("running_mean_update", "writer")
    assert (leak.role, leak.name, leak.tensor) == ("leak", "aten.sub.Tensor", "other")
    assert leak.where.endswith(reader) and leak.producer_a["where"].endswith(writer)
    assert leak.producer_a["name"] == "aten.lerp_.Scalar"
    assert report.verdict() == (f"DIVERGED at #{leak.index}: state written by run A at {leak.producer_a['where']} "
                                f"is read by run B at {leak.where}")
    assert report.culprit_count == 1 and report.exit_code() == 1  # the in-place op reading it again is a victim
    assert "unrecorded producer" not in report.render()


def test_a_lazily_built_cache_mutated_in_place_is_a_leak_not_just_a_path():
    report = find_divergence(planted_divergence.cached_table)
    leak = report.first
    assert (leak.role, leak.name) == ("leak", "aten.sum.default")
    assert leak.where.endswith(_line("cached_table", "reader"))
    assert leak.producer_a["where"].endswith(_line("cached_table", "writer"))
    assert leak.producer_a["name"] == "aten.div_.Tensor" and report.exit_code() == 1
    assert any(n.startswith("the runs also took different paths from #0") for n in report.notes)


def test_the_same_op_on_another_line_is_a_path_divergence_showing_both_lines():
    report = find_divergence(planted_divergence.branch_on_call_count)
    path = report.first
    a_line, b_line = _line("branch_on_call_count", "branch-a"), _line("branch_on_call_count", "branch-b")
    assert (path.role, path.name) == ("path", "aten.mul.Tensor")
    assert {path.where_a.split("/")[-1], path.where.split("/")[-1]} == {a_line, b_line}
    assert not path.scalars and "argument" not in report.render()
    assert "the runs took different paths (A at " in report.verdict() and report.exit_code() == 1


def test_operands_picked_in_another_order_are_named_with_where_each_came_from():
    report = find_divergence(planted_divergence.rotating_terms)
    first = report.first
    assert (first.role, first.name, first.tensor) == ("operands", "aten.add.Tensor", "self")
    assert first.where.endswith(_line("rotating_terms", "summed"))
    made = _line("rotating_terms", "made")
    assert first.producer_a["where"].endswith(made) and first.producer["where"].endswith(made)
    assert first.producer_a["index"] != first.producer["index"]
    assert "outside the recorded events" not in report.render()
    assert report.verdict() == (f"DIVERGED at #{first.index}: the runs passed different tensors to "
                                "op aten.add.Tensor (`self`)")
    assert report.exit_code() == 1


def test_a_tensor_made_from_a_python_counter_is_the_culprit():
    report = find_divergence(planted_divergence.stamped_by_counter)
    culprit = report.first
    assert (culprit.role, culprit.index, culprit.name) == ("culprit", 0, "aten.lift_fresh.default")
    assert culprit.where.endswith(_line("stamped_by_counter", "made"))
    assert "Python value" in culprit.reason and "record" not in culprit.fix
    assert report.verdict() == "DIVERGED at #0: culprit op aten.lift_fresh.default (`out`)"
    assert report.exit_code() == 1
