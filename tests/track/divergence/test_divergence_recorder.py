"""divergence.recorder: the recorder's lifecycle, and record() around one call."""

from __future__ import annotations

import pytest
import torch

from detsim.track.divergence.recorder import Recorder, record


def test_record_fingerprints_inputs_and_nested_results(dtype):
    def step(x, *, scale):
        return {"image": x * scale, "parts": [x.sum(), (x + 1).max()]}

    x = torch.arange(3, dtype=dtype)
    rec = record(step, x, scale=torch.tensor(2.0, dtype=dtype), label="step")
    assert rec.label == "step" and rec.error is None and rec.threads == torch.get_num_threads()
    assert [t.name for t in rec.inputs] == ["arg0", "scale"]
    assert [t.name for t in rec.results] == ["result.image", "result.parts[0]", "result.parts[1]"]
    assert [e.name for e in rec.events] == ["aten.mul.Tensor", "aten.sum.default", "aten.add.Tensor",
                                            "aten.max.default"]
    assert [e.index for e in rec.events] == [0, 1, 2, 3]
    assert rec.settings == {"ops": True, "kernels": True, "fill": 0,
                            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled()}


def test_an_exception_is_kept_in_the_record():
    def fails():
        torch.ones(2).sum()
        raise ValueError("planted")

    rec = record(fails)
    assert rec.error.rstrip().endswith("ValueError: planted") and len(rec.events) == 2 and rec.results == []


def test_layers_that_are_off_record_nothing():
    rec = record(lambda: torch.ones(2) * 2, ops=False, kernels=False)
    assert rec.events == [] and len(rec.results) == 1


def test_paused_ops_are_not_recorded_and_only_one_recorder_runs_at_a_time():
    recorder = Recorder("outer")
    with recorder:
        torch.ones(1)
        with recorder.paused():
            assert recorder.is_paused
            torch.zeros(1)
        assert not recorder.is_paused
        with pytest.raises(RuntimeError, match="already active"):
            with Recorder("inner"):
                pass
    assert [e.name for e in recorder.record.events] == ["aten.ones.default"]
    with Recorder("next", kernels=False):  # the first one let go
        pass


def test_exit_undoes_what_was_registered_last_first():
    undone = []
    with Recorder("r", ops=False, kernels=False) as recorder:
        recorder.on_exit(lambda: undone.append("first"))
        recorder.on_exit(lambda: undone.append("second"))
    assert undone == ["second", "first"]
    event = recorder.add(kind="op", name="x", where="", inputs=[], outputs=[])
    assert event.index == 0 and recorder.record.events == [event]
