"""detsim-track diverge: the finder names planted culprits and their victims exactly, and nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from detsim.track import cli
from detsim.track.divergence.cmd_diverge import find_divergence
from detsim.track.divergence.firstdiff import compare_records
from detsim.track.divergence.recorder import Record, record

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
import planted_ops  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TINY = "-cell 30 32 34 90 90 90 -default_F 50 -N 3 -misset 10 20 30 -mosaic 1 -mosaic_dom 2 -detpixels 6 " \
       "-pixel 4 -distance 40 -oversample 2"


def marked_line(path: Path, function: str, marker: str) -> str:
    """``file:line in function`` of the line carrying ``# marker`` inside ``function``."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {function}("))
    number = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith(f"# {marker}")) + 1
    return f"{path.name}:{number} in {function}"


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


def test_uninitialised_and_overwritten_buffers_are_recorded_but_not_compared():
    rec = record(planted_ops.deterministic)
    by_name = {}
    for event in rec.events:
        by_name.setdefault(event.name, event)
    assert by_name["aten.empty.memory_format"].outputs[0].compare is False
    copy = by_name["aten.copy_.default"]
    assert [(t.name, t.compare) for t in copy.inputs] == [("self", False), ("src", True)]
    assert any(e.where.startswith("backward ") for e in rec.events)
    out_op = by_name["aten.mul.out"]
    assert "out" not in {t.name for t in out_op.inputs}


def test_thread_dependent_split_is_found_across_thread_counts():
    report = find_divergence(planted_ops.thread_dependent_sum, threads=(1, 2))
    assert report.threads == (1, 2)
    assert report.first.role == "culprit" and report.first.name == "aten.slice.Tensor"
    assert report.first.scalars["end"] == ["32768", "16384"]


def test_records_survive_json_and_compare_the_same():
    a, b = record(planted_ops.hidden_counter, label="x"), record(planted_ops.hidden_counter, label="x")
    reloaded = [Record.from_dict(json.loads(r.to_json())) for r in (a, b)]
    assert compare_records(*reloaded).to_dict() == compare_records(a, b).to_dict()


def test_cli_names_the_culprit_and_writes_a_bundle(tmp_path, capsys):
    out = tmp_path / "bundle"
    code = cli.main(["diverge", "--call", f"{DATA / 'planted_ops.py'}:unseeded_noise", "--out", str(out)])
    assert code == 1
    text = capsys.readouterr().out
    assert "CULPRIT: #1 op aten.rand.default" in text and "VICTIM: #2 op aten.mul.Tensor" in text
    assert {p.name for p in out.iterdir()} == {"record_A.json", "record_B.json", "report.txt", "report.json",
                                                "env.json", "commands.txt", "summary.md"}
    report = json.loads((out / "report.json").read_text())
    assert report["first"]["name"] == "aten.rand.default" and report["diverged"] is True
    assert "detsim-track diverge --call" in (out / "commands.txt").read_text()


def test_cli_engine_is_deterministic_across_thread_counts(capsys):
    code = cli.main(["diverge", "--nanobragg", TINY, "--threads", "1", "2", "--grad", "detector.distance_mm"])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "NO DIVERGENCE" in text and "RESULTS  identical (2 tensor(s))" in text


def test_cli_runs_a_script_like_python(tmp_path, capsys):
    script = tmp_path / "noisy.py"
    script.write_text("import sys, torch\n"
                      "n = int(sys.argv[1])\n"
                      "x = torch.rand(n)\n"
                      "print(float((x * 2).sum()))\n")
    code = cli.main(["diverge", "--script", str(script), "--", "8"])
    text = capsys.readouterr().out
    assert code == 1
    assert "CULPRIT: #0 op aten.rand.default at" in text and "noisy.py:3 in <module>" in text
    assert "argument `size`" not in text  # the same size in both runs


@pytest.fixture(scope="module")
def triton_reports():
    pytest.importorskip("triton")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, str(DATA / "triton_scenarios.py")], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_triton_kernel_reading_a_changing_value_is_the_culprit(triton_reports):
    report = triton_reports["stale_read"]
    culprit = report["first"]
    assert (culprit["role"], culprit["kind"], culprit["name"]) == ("culprit", "kernel", "stale_read_kernel")
    assert culprit["tensor"] == "out_ptr" and culprit["grid_a"] == culprit["grid_b"] == [1, 1, 1]
    assert culprit["where"].endswith(marked_line(DATA / "planted_triton.py", "stale_read", "culprit"))
    kernel_victim, op_victim = report["victims"][:2]
    assert (kernel_victim["kind"], kernel_victim["name"], kernel_victim["tensor"]) == ("kernel", "scale_kernel", "x_ptr")
    assert kernel_victim["producer"]["index"] == culprit["index"]
    assert kernel_victim["where"].endswith(marked_line(DATA / "planted_triton.py", "stale_read", "victim"))
    assert op_victim["name"] == "aten.sqrt.default" and op_victim["root"]["name"] == "stale_read_kernel"
    assert report["culprit_count"] == 1


def test_triton_grid_change_is_reported_as_autotuning(triton_reports):
    culprit = triton_reports["retuned_sum"]["first"]
    assert (culprit["role"], culprit["name"]) == ("culprit", "block_sum_kernel")
    assert culprit["grid_a"] == [4, 1, 1] and culprit["grid_b"] == [16, 1, 1]
    assert culprit["config_a"] == {"BLOCK": "64"} and culprit["config_b"] == {"BLOCK": "16"}
    assert "autotuning" in culprit["reason"] and "pin the configuration" in culprit["fix"]


def test_deterministic_triton_kernels_have_no_divergence(triton_reports):
    report = triton_reports["steady"]
    assert report["first"] is None and report["diverged"] is False and report["counts"]["kernel"] == 1
    engine = triton_reports["detsim_triton"]
    if engine is None:
        pytest.skip("detsim.engine has no triton mode")
    assert engine["diverged"] is False and engine["counts"]["kernel"] >= 1


def _inductor_stand_in(block: int, scale: float):
    """A stand-in for Inductor's CachingAutotuner (the GPU path cannot run here)."""
    from types import SimpleNamespace

    config = SimpleNamespace(kwargs={"XBLOCK": block}, num_warps=2, num_stages=1)
    tuner = SimpleNamespace(fn=SimpleNamespace(__name__="triton_red_fused_sum_0"),
                            triton_meta={"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32",
                                                       "XBLOCK": "constexpr"}},
                            configs=[config], launchers=[SimpleNamespace(config=config)],
                            _interpret_args_grid=lambda args, cfg: (args, (8 // cfg.kwargs["XBLOCK"], 1, 1)))

    def original(tuner, x, out, n, *, stream, benchmark_run):
        out.copy_(x.sum() * scale)

    return tuner, original


def test_gpu_launch_wrappers_with_stand_ins():
    """JITFunction.run and CachingAutotuner.run wrappers: names, grids, configs and the knobs they lead to."""
    from types import SimpleNamespace

    from detsim.track.divergence.recorder import Recorder, _inductor_launch, _jit_launch

    fn = SimpleNamespace(__name__="double_kernel", arg_names=["x_ptr", "out_ptr", "n", "BLOCK"],
                         params=[SimpleNamespace(name=n, is_constexpr=n == "BLOCK")
                                 for n in ("x_ptr", "out_ptr", "n", "BLOCK")])

    def launch(fn, x, out, n, *, grid, warmup, BLOCK):
        out.copy_(x * 2)

    x = torch.arange(8, dtype=torch.float32)
    recorder = Recorder("gpu", ops=False, kernels=False)
    _jit_launch(recorder, launch, fn, x, torch.empty(8), 8, grid=lambda meta: (8 // meta["BLOCK"],), warmup=False,
                BLOCK=4)
    (event,) = recorder.record.events
    assert (event.kind, event.name, event.grid, event.config, event.scalars) == (
        "kernel", "double_kernel", [2, 1, 1], {"BLOCK": "4"}, {"n": "8"})
    assert [(t.name, t.compare) for t in event.inputs] == [("x_ptr", True), ("out_ptr", False)]
    assert [(t.name, t.written) for t in event.outputs] == [("x_ptr", False), ("out_ptr", True)]

    records = []
    for block, scale in ((4, 1.0), (2, 1.0 + 2**-20)):
        recorder = Recorder("inductor", ops=False, kernels=False)
        tuner, original = _inductor_stand_in(block, scale)
        _inductor_launch(recorder, original, tuner, x.clone(), torch.empty(1), 8, stream=0)
        records.append(recorder.record)
    event = records[1].events[0]
    assert [t.name for t in event.inputs] == ["in_ptr0", "out_ptr0"] and event.scalars == {"xnumel": "8"}
    assert event.config == {"XBLOCK": "2", "num_warps": 2, "num_stages": 1} and event.grid == [4, 1, 1]
    culprit = compare_records(*records).first
    assert (culprit.role, culprit.name, culprit.tensor) == ("culprit", "triton_red_fused_sum_0", "out_ptr0")
    assert culprit.grid_a == [2, 1, 1] and "torch._inductor.config.deterministic = True" in culprit.fix
    records[1].events[0].grid, records[1].events[0].config = records[0].events[0].grid, records[0].events[0].config
    culprit = compare_records(*records).first
    assert "force_filter_reduction_configs" in culprit.fix and "reduction" in culprit.reason
