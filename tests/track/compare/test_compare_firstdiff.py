"""compare.firstdiff: records compared event by event; find_divergence names planted culprits and their
victims exactly, and nothing else; records of two commits compared without line numbers."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from detsim.track.base.exitcodes import ExitCode
from detsim.track.compare.firstdiff import compare_logs, compare_results, find_divergence, without_lines
from detsim.track.compare.run_log import Event, RunLog, TensorInfo
from detsim.track.compare.tracer import trace

DATA = Path(__file__).resolve().parents[2] / "data"
PLANTED = DATA / "planted_divergence.py"
sys.path.insert(0, str(DATA))
import planted_divergence  # noqa: E402
import planted_ops  # noqa: E402
from markers import marked_line  # noqa: E402


def info(name: str, content: str, **kw) -> TensorInfo:
    return TensorInfo(name, content * 64, [4], "float64", "cpu", **kw)


def op(index: int, name: str, inputs, outputs, **kw) -> Event:
    return Event(index, "op", name, f"model.py:{10 + index} in step", inputs, outputs, **kw)


def records(events_a, events_b, results_a=(), results_b=(), threads=(1, 1)) -> tuple[RunLog, RunLog]:
    return (RunLog("run", events=list(events_a), results=list(results_a), threads=threads[0]),
            RunLog("run", events=list(events_b), results=list(results_b), threads=threads[1]))


def test_the_first_op_with_equal_inputs_and_different_outputs_is_the_culprit_and_its_consumer_a_victim():
    a, b = records(
        [op(0, "aten.exp.default", [info("self", "a")], [info("out", "b")]),
         op(1, "aten.add.Tensor", [info("self", "b")], [info("out", "c")])],
        [op(0, "aten.exp.default", [info("self", "a")], [info("out", "d")]),
         op(1, "aten.add.Tensor", [info("self", "d")], [info("out", "e")])],
        [info("result", "c")], [info("result", "e")])
    report = compare_logs(a, b)
    culprit, (victim,) = report.first, report.victims
    assert (culprit.role, culprit.index, culprit.tensor) == ("culprit", 0, "out")
    assert (victim.role, victim.index, victim.producer["index"]) == ("victim", 1, 0)
    assert report.result_differences == [{"name": "result", "hash_a": "c" * 64, "hash_b": "e" * 64}]
    assert report.exit_code() is ExitCode.REGRESSED
    assert "FIRST DIVERGENCE" in report.render() and report.to_dict()["diverged"] is True


def test_a_different_sequence_is_a_path_divergence():
    same = op(0, "aten.exp.default", [info("self", "a")], [info("out", "b")])
    a, b = records([same, op(1, "aten.sin.default", [], [])], [same, op(1, "aten.cos.default", [], [])])
    first = compare_logs(a, b).first
    assert (first.role, first.index, first.name) == ("path", 1, "aten.cos.default")
    a, b = records([same], [same, op(1, "aten.cos.default", [], [])])
    first = compare_logs(a, b).first
    assert first.role == "path" and "run B goes on with 1 more event(s)" in first.reason


def test_different_inputs_are_named_before_any_event():
    a, b = records([], [])
    a.inputs, b.inputs = [info("arg0", "a")], [info("arg0", "b")]
    report = compare_logs(a, b)
    assert report.first.role == "inputs" and report.verdict().startswith("DIVERGED before the first event")
    assert any("no op or kernel was recorded" in note for note in report.notes)


def test_identical_records_do_not_diverge_and_errors_make_them_unmeasured():
    event = op(0, "aten.exp.default", [info("self", "a")], [info("out", "b")])
    a, b = records([event], [event], [info("r", "b")], [info("r", "b")])
    report = compare_logs(a, b)
    assert report.first is None and report.exit_code() is ExitCode.OK
    assert report.verdict() == ("NO DIVERGENCE: 1 events (1 ops, 0 kernels) with identical inputs and outputs; "
                                "1 result tensor(s) identical")
    b.error = "Traceback ...\nValueError: boom"
    report = compare_logs(a, b)
    assert report.exit_code() is ExitCode.UNMEASURED and "ERROR    run B raised: ValueError: boom" in report.render()


def test_uncompared_outputs_and_launch_changes_with_equal_outputs_are_not_culprits():
    a, b = records([op(0, "aten.empty.memory_format", [], [info("out", "a", compare=False)])],
                   [op(0, "aten.empty.memory_format", [], [info("out", "b", compare=False)])])
    assert compare_logs(a, b).first is None
    kernel_a = Event(0, "kernel", "k", "", [], [info("out", "a")], grid=[1, 1, 1])
    kernel_b = Event(0, "kernel", "k", "", [], [info("out", "a")], grid=[2, 1, 1])
    report = compare_logs(*records([kernel_a], [kernel_b]))
    assert report.first is None and "launch configuration differs" in report.notes[0]


def test_a_branch_running_the_same_op_on_another_line_is_a_path_divergence():
    a, b = records([op(0, "aten.mul.Tensor", [info("self", "a")], [info("out", "b")], scalars={"other": "2"})],
                   [Event(0, "op", "aten.mul.Tensor", "model.py:30 in step", [info("self", "a")], [info("out", "c")],
                          scalars={"other": "3"})])
    report = compare_logs(a, b)
    path = report.first
    assert (path.role, path.where_a, path.where) == ("path", "model.py:10 in step", "model.py:30 in step")
    assert "both runs executed op aten.mul.Tensor, but run A at model.py:10 in step and run B at model.py:30" \
        in path.reason
    assert report.verdict() == ("DIVERGED at #0: the runs took different paths (A at model.py:10 in step, "
                                "B at model.py:30 in step)")


def test_call_sites_are_compared_without_their_folders():
    a, b = records([Event(0, "op", "aten.exp.default", "/home/a/model.py:10 in step", [info("self", "a")],
                          [info("out", "b")])],
                   [Event(0, "op", "aten.exp.default", "/srv/b/model.py:10 in step", [info("self", "a")],
                          [info("out", "b")])])
    assert compare_logs(a, b).first is None


def _filled(events_a, events_b, results_a=(), results_b=()):
    """Records whose runs filled never-written memory differently (as find_divergence records them)."""
    a, b = records(events_a, events_b, results_a, results_b)
    a.settings, b.settings = {"fill": 0}, {"fill": 1}
    return a, b


def test_a_read_of_never_written_elements_is_a_finding_only_when_it_reaches_a_result():
    garbage = info("self", "g", unwritten=2, note="2 never-written element(s) (allocated by #0)")
    read_a = op(0, "aten.sum.default", [garbage], [info("out", "s")])
    read_b = op(0, "aten.sum.default", [garbage], [info("out", "t")])
    report = compare_logs(*_filled([read_a], [read_b], [info("result", "s")], [info("result", "t")]))
    assert (report.first.role, report.first.reads["count"]) == ("uninitialized", 2)
    assert report.verdict() == "DIVERGED at #0: op aten.sum.default reads uninitialized memory (`self`)"
    report = compare_logs(*_filled([read_a], [read_b], [info("result", "r")], [info("result", "r")]))
    assert report.first is None and report.exit_code() == 0 and "not a divergence" in report.notes[0]
    a, b = records([read_a], [read_b], [info("result", "s")], [info("result", "t")])
    a.settings = b.settings = {"fill": 0}  # one fill for both runs: the never-written part cannot explain it
    assert compare_logs(a, b).first.role == "culprit"


def test_a_kernel_that_leaves_a_padded_input_alone_does_not_read_it():
    padded = info("x_ptr", "p", unwritten=16)
    kernel = Event(0, "kernel", "masked_kernel", "m.py:3 in f", [padded, info("out_ptr", "o", compare=False)],
                   [info("x_ptr", "p", unwritten=16, written=False), info("out_ptr", "q")], grid=[1, 1, 1])
    report = compare_logs(*_filled([kernel], [kernel], [info("r", "q")], [info("r", "q")]))
    assert report.first is None and report.notes == []
    copy = op(0, "aten.clone.default", [padded], [info("out", "p", unwritten=16)])  # carries them on: a read
    report = compare_logs(*_filled([copy], [copy], [info("r", "q")], [info("r", "q")]))
    assert report.first is None and "aten.clone.default" in report.notes[0] and "not a divergence" in report.notes[0]


def test_an_input_run_a_wrote_in_place_and_run_b_never_made_is_a_leak():
    a, b = records([op(0, "aten.sub.Tensor", [info("other", "0")], [info("out", "1")]),
                    op(1, "aten.add_.Tensor", [info("self", "0")], [info("out", "2")])],
                   [op(0, "aten.sub.Tensor", [info("other", "2")], [info("out", "3")]),
                    op(1, "aten.add_.Tensor", [info("self", "2")], [info("out", "4")])])
    report = compare_logs(a, b)
    leak = report.first
    assert (leak.role, leak.index, leak.producer_a["index"]) == ("leak", 0, 1)
    assert report.verdict() == ("DIVERGED at #0: state written by run A at model.py:11 in step is read by run B "
                                "at model.py:10 in step")
    assert report.victims[0].index == 1 and report.victims[0].root["role"] == "leak" and report.culprit_count == 1


def test_different_operands_each_made_in_both_runs_are_named_with_their_sources():
    made = [op(0, "aten.exp.default", [info("self", "a")], [info("out", "p")]),
            op(1, "aten.sin.default", [info("self", "a")], [info("out", "q")])]
    a, b = records(made + [op(2, "aten.add.Tensor", [info("self", "p"), info("other", "q")], [info("out", "r")])],
                   made + [op(2, "aten.add.Tensor", [info("self", "q"), info("other", "p")], [info("out", "s")])])
    first = compare_logs(a, b).first
    assert (first.role, first.tensor, first.producer_a["index"], first.producer["index"]) == ("operands", "self", 0, 1)
    assert "run A passed #0 op aten.exp.default" in "\n".join(first.lines())


def test_a_tensor_made_from_python_values_is_the_culprit_not_a_victim():
    a, b = records([op(0, "aten.lift_fresh.default", [info("self", "1")], [info("out", "1")])],
                   [op(0, "aten.lift_fresh.default", [info("self", "2")], [info("out", "2")])])
    first = compare_logs(a, b).first
    assert (first.role, first.tensor) == ("culprit", "out") and "Python value" in first.reason


def test_a_result_holding_never_written_elements_diverges():
    a, b = _filled([], [], [info("result", "r", unwritten=3)], [info("result", "r", unwritten=3)])
    report = compare_logs(a, b)
    assert report.exit_code() == 1 and report.verdict().startswith("DIVERGED: a result holds memory that was never")


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
    assert "Python value" in culprit.reason and "trace the layer" not in culprit.fix
    assert report.verdict() == "DIVERGED at #0: culprit op aten.lift_fresh.default (`out`)"
    assert report.exit_code() == 1


def test_without_lines_keeps_file_and_function_and_drops_views():
    def fn(x):
        return (x.unsqueeze(0) * 2).sum()

    rec = trace(fn, torch.ones(3))
    computing = without_lines(rec)
    assert [e.name for e in computing.events] == [e.name for e in rec.events if e.name != "aten.unsqueeze.default"]
    assert all(":" not in e.where.split(" in ")[0] for e in computing.events)
    assert "aten.unsqueeze.default" in [e.name for e in rec.events]
    assert [e.index for e in computing.events] == list(range(len(computing.events)))
    assert rec.events[0].where and ":" in rec.events[0].where  # the original is left alone


def test_results_differ_by_digest_shape_or_dtype_or_never_written_elements_and_pair_by_name():
    def run(*results):
        return RunLog("x", results=list(results))

    image = TensorInfo("image", "h1", [2, 3], "float64", "cpu")
    same_bytes_other_shape = TensorInfo("image", "h1", [3, 2], "float64", "cpu")
    holed = TensorInfo("total", "h2", [], "float64", "cpu", unwritten=1)
    found = compare_results(run(image, holed, TensorInfo("extra", "h3", [1], "int64", "cpu")),
                            run(TensorInfo("total", "h2", [], "float64", "cpu"), same_bytes_other_shape))
    assert [(d.name, d.only) for d in found.differences] == [("image", None), ("total", None), ("extra", "A")]
    assert found.compared == 2
    assert compare_results(run(image), run(image)).differences == ()
