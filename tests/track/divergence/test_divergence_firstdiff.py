"""divergence.firstdiff: culprits, victims, paths and results, on hand-made records."""

from __future__ import annotations

from detsim.track.base.exitcodes import ExitCode
from detsim.track.divergence.firstdiff import compare_records
from detsim.track.divergence.events import Event, Record, TensorInfo


def info(name: str, content: str, **kw) -> TensorInfo:
    return TensorInfo(name, content * 64, [4], "float64", "cpu", **kw)


def op(index: int, name: str, inputs, outputs, **kw) -> Event:
    return Event(index, "op", name, f"model.py:{10 + index} in step", inputs, outputs, **kw)


def records(events_a, events_b, results_a=(), results_b=(), threads=(1, 1)) -> tuple[Record, Record]:
    return (Record("run", events=list(events_a), results=list(results_a), threads=threads[0]),
            Record("run", events=list(events_b), results=list(results_b), threads=threads[1]))


def test_the_first_op_with_equal_inputs_and_different_outputs_is_the_culprit_and_its_consumer_a_victim():
    a, b = records(
        [op(0, "aten.exp.default", [info("self", "a")], [info("out", "b")]),
         op(1, "aten.add.Tensor", [info("self", "b")], [info("out", "c")])],
        [op(0, "aten.exp.default", [info("self", "a")], [info("out", "d")]),
         op(1, "aten.add.Tensor", [info("self", "d")], [info("out", "e")])],
        [info("result", "c")], [info("result", "e")])
    report = compare_records(a, b)
    culprit, (victim,) = report.first, report.victims
    assert (culprit.role, culprit.index, culprit.tensor) == ("culprit", 0, "out")
    assert (victim.role, victim.index, victim.producer["index"]) == ("victim", 1, 0)
    assert report.result_differences == [{"name": "result", "hash_a": "c" * 64, "hash_b": "e" * 64}]
    assert report.exit_code() is ExitCode.REGRESSED
    assert "FIRST DIVERGENCE" in report.render() and report.to_dict()["diverged"] is True


def test_a_different_sequence_is_a_path_divergence():
    same = op(0, "aten.exp.default", [info("self", "a")], [info("out", "b")])
    a, b = records([same, op(1, "aten.sin.default", [], [])], [same, op(1, "aten.cos.default", [], [])])
    first = compare_records(a, b).first
    assert (first.role, first.index, first.name) == ("path", 1, "aten.cos.default")
    a, b = records([same], [same, op(1, "aten.cos.default", [], [])])
    first = compare_records(a, b).first
    assert first.role == "path" and "run B goes on with 1 more event(s)" in first.reason


def test_different_inputs_are_named_before_any_event():
    a, b = records([], [])
    a.inputs, b.inputs = [info("arg0", "a")], [info("arg0", "b")]
    report = compare_records(a, b)
    assert report.first.role == "inputs" and report.verdict().startswith("DIVERGED before the first event")
    assert any("no op or kernel was recorded" in note for note in report.notes)


def test_identical_records_do_not_diverge_and_errors_make_them_unmeasured():
    event = op(0, "aten.exp.default", [info("self", "a")], [info("out", "b")])
    a, b = records([event], [event], [info("r", "b")], [info("r", "b")])
    report = compare_records(a, b)
    assert report.first is None and report.exit_code() is ExitCode.OK
    assert report.verdict() == ("NO DIVERGENCE: 1 events (1 ops, 0 kernels) with identical inputs and outputs; "
                                "1 result tensor(s) identical")
    b.error = "Traceback ...\nValueError: boom"
    report = compare_records(a, b)
    assert report.exit_code() is ExitCode.UNMEASURED and "ERROR    run B raised: ValueError: boom" in report.render()


def test_uncompared_outputs_and_launch_changes_with_equal_outputs_are_not_culprits():
    a, b = records([op(0, "aten.empty.memory_format", [], [info("out", "a", compare=False)])],
                   [op(0, "aten.empty.memory_format", [], [info("out", "b", compare=False)])])
    assert compare_records(a, b).first is None
    kernel_a = Event(0, "kernel", "k", "", [], [info("out", "a")], grid=[1, 1, 1])
    kernel_b = Event(0, "kernel", "k", "", [], [info("out", "a")], grid=[2, 1, 1])
    report = compare_records(*records([kernel_a], [kernel_b]))
    assert report.first is None and "launch configuration differs" in report.notes[0]


def test_a_branch_running_the_same_op_on_another_line_is_a_path_divergence():
    a, b = records([op(0, "aten.mul.Tensor", [info("self", "a")], [info("out", "b")], scalars={"other": "2"})],
                   [Event(0, "op", "aten.mul.Tensor", "model.py:30 in step", [info("self", "a")], [info("out", "c")],
                          scalars={"other": "3"})])
    report = compare_records(a, b)
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
    assert compare_records(a, b).first is None


def _filled(events_a, events_b, results_a=(), results_b=()):
    """Records whose runs filled never-written memory differently (as find_divergence records them)."""
    a, b = records(events_a, events_b, results_a, results_b)
    a.settings, b.settings = {"fill": 0}, {"fill": 1}
    return a, b


def test_a_read_of_never_written_elements_is_a_finding_only_when_it_reaches_a_result():
    garbage = info("self", "g", unwritten=2, note="2 never-written element(s) (allocated by #0)")
    read_a = op(0, "aten.sum.default", [garbage], [info("out", "s")])
    read_b = op(0, "aten.sum.default", [garbage], [info("out", "t")])
    report = compare_records(*_filled([read_a], [read_b], [info("result", "s")], [info("result", "t")]))
    assert (report.first.role, report.first.reads["count"]) == ("uninitialized", 2)
    assert report.verdict() == "DIVERGED at #0: op aten.sum.default reads uninitialized memory (`self`)"
    report = compare_records(*_filled([read_a], [read_b], [info("result", "r")], [info("result", "r")]))
    assert report.first is None and report.exit_code() == 0 and "not a divergence" in report.notes[0]
    a, b = records([read_a], [read_b], [info("result", "s")], [info("result", "t")])
    a.settings = b.settings = {"fill": 0}  # one fill for both runs: the never-written part cannot explain it
    assert compare_records(a, b).first.role == "culprit"


def test_a_kernel_that_leaves_a_padded_input_alone_does_not_read_it():
    padded = info("x_ptr", "p", unwritten=16)
    kernel = Event(0, "kernel", "masked_kernel", "m.py:3 in f", [padded, info("out_ptr", "o", compare=False)],
                   [info("x_ptr", "p", unwritten=16, written=False), info("out_ptr", "q")], grid=[1, 1, 1])
    report = compare_records(*_filled([kernel], [kernel], [info("r", "q")], [info("r", "q")]))
    assert report.first is None and report.notes == []
    copy = op(0, "aten.clone.default", [padded], [info("out", "p", unwritten=16)])  # carries them on: a read
    report = compare_records(*_filled([copy], [copy], [info("r", "q")], [info("r", "q")]))
    assert report.first is None and "aten.clone.default" in report.notes[0] and "not a divergence" in report.notes[0]


def test_an_input_run_a_wrote_in_place_and_run_b_never_made_is_a_leak():
    a, b = records([op(0, "aten.sub.Tensor", [info("other", "0")], [info("out", "1")]),
                    op(1, "aten.add_.Tensor", [info("self", "0")], [info("out", "2")])],
                   [op(0, "aten.sub.Tensor", [info("other", "2")], [info("out", "3")]),
                    op(1, "aten.add_.Tensor", [info("self", "2")], [info("out", "4")])])
    report = compare_records(a, b)
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
    first = compare_records(a, b).first
    assert (first.role, first.tensor, first.producer_a["index"], first.producer["index"]) == ("operands", "self", 0, 1)
    assert "run A passed #0 op aten.exp.default" in "\n".join(first.lines())


def test_a_tensor_made_from_python_values_is_the_culprit_not_a_victim():
    a, b = records([op(0, "aten.lift_fresh.default", [info("self", "1")], [info("out", "1")])],
                   [op(0, "aten.lift_fresh.default", [info("self", "2")], [info("out", "2")])])
    first = compare_records(a, b).first
    assert (first.role, first.tensor) == ("culprit", "out") and "Python value" in first.reason


def test_a_result_holding_never_written_elements_diverges():
    a, b = _filled([], [], [info("result", "r", unwritten=3)], [info("result", "r", unwritten=3)])
    report = compare_records(a, b)
    assert report.exit_code() == 1 and report.verdict().startswith("DIVERGED: a result holds memory that was never")
