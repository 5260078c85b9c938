"""detsim-track diverge: named computations, exit codes, the evidence bundle, runs traced here or in their own
processes."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import torch

from detsim.track import cli
from detsim.track.commands import diverge as cmd_diverge

DATA = Path(__file__).resolve().parents[2] / "data"
TINY = "-cell 30 32 34 90 90 90 -default_F 50 -N 3 -misset 10 20 30 -mosaic 1 -mosaic_dom 2 -detpixels 6 " \
       "-pixel 4 -distance 40 -oversample 2"


def test_cli_names_the_culprit_and_writes_a_bundle(tmp_path, capsys):
    out = tmp_path / "bundle"
    code = cli.main(["diverge", "--call", f"{DATA / 'planted_ops.py'}:unseeded_noise", "--out", str(out)])
    assert code == 1
    text = capsys.readouterr().out
    assert "CULPRIT: #1 op aten.rand.default" in text and "VICTIM: #2 op aten.mul.Tensor" in text
    assert {p.name for p in out.iterdir()} == {"run_A.json", "run_B.json", "report.txt", "report.json",
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


def test_bad_computations_and_existing_bundles_exit_2(tmp_path, capsys):
    assert cli.main(["diverge", "--case", "no_such_case"]) == 2
    assert "not a golden case" in capsys.readouterr().err
    assert cli.main(["diverge", "--call", "torch:zeros", "--out", str(tmp_path)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err


@pytest.mark.parametrize("argv, why", [
    (["--script", "/nonexistent.py"], "--script /nonexistent.py: missing"),
    (["--script", "/"], "--script /: a directory, not a file"),
    pytest.param(["--case", "a01", "--device", "cuda"], "--device cuda: no CUDA device on this machine",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")),
    (["--case", "a01", "--device", "gpu"], "--device gpu: not a torch device ("),
])
@pytest.mark.parametrize("processes", [[], ["--processes"]], ids=["in-process", "own-process"])
def test_a_computation_or_device_that_cannot_run_is_refused_before_any_run(tmp_path, capsys, monkeypatch, argv, why,
                                                                     processes):
    monkeypatch.setattr(cmd_diverge, "trace_run", lambda *a, **k: pytest.fail("nothing may run"))
    monkeypatch.setattr(cmd_diverge, "_trace_in_process", lambda *a, **k: pytest.fail("nothing may run"))
    out = tmp_path / "bundle"
    assert cli.main(["diverge", *argv, *processes, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"diverge: {why}") and captured.err.count("\n") == 1
    assert captured.out == "" and not out.exists()


@pytest.mark.parametrize("argv", [["--chunk-pixels", "0"], ["--threads", "1", "0"], ["--max-items", "-1"]])
def test_counts_are_refused_when_the_options_are_read(capsys, argv):
    with pytest.raises(SystemExit) as stopped:
        cli.main(["diverge", "--case", "a01", *argv])
    assert stopped.value.code == 2
    assert f"argument {argv[0]}: " in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--case", "--nanobragg", "--call", "-m", "--script"])
def test_an_empty_name_is_refused_when_the_options_are_read(capsys, flag):
    with pytest.raises(SystemExit) as stopped:
        cli.main(["diverge", flag, ""])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(f"argument {flag}: must not be empty")


def test_a_script_that_exits_non_zero_is_unmeasured(tmp_path, capsys):
    script = tmp_path / "fails.py"
    script.write_text("import sys\nsys.exit(3)\n")
    assert cli.main(["diverge", "--script", str(script)]) == 2
    text = capsys.readouterr().out
    assert "ERROR    run A raised: RuntimeError: " in text and "exited with status 3" in text
    assert "but a run raised" in text


# in its own process in the slow job; its twins: the in-process run below, and an in-process trace_at whose job
# ends the process (tests/track/compare/test_compare_runs.py's
# test_trace_at_hands_its_job_to_a_fresh_interpreter_and_loads_the_log)
@pytest.mark.parametrize("processes", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["in-process", "own-process"])
def test_a_script_that_ends_the_process_could_not_be_traced(tmp_path, capsys, processes):
    """os._exit ends the process at once: that is no verdict, but exit 2 and one line saying so."""
    script = tmp_path / "quits.py"
    script.write_text("import os, torch\n"
                      "x = torch.ones(3) * 2\n"
                      "try:\n"
                      "    os._exit(0)\n"
                      "except Exception:\n"
                      "    pass\n"
                      "print('survived os._exit')\n")
    code = cli.main(["diverge", "--script", str(script), *(["--processes"] if processes else [])])
    captured = capsys.readouterr()
    assert code == 2, captured
    (line,) = captured.err.strip().splitlines()
    assert line.startswith(f"diverge: {script}: run A ended without a log") and "os._exit(0)" in line
    assert "survived" not in captured.out and "VERDICT" not in captured.out


def test_a_callable_returning_no_tensor_and_recording_nothing_has_nothing_to_compare(tmp_path, capsys):
    target = tmp_path / "plain.py"
    target.write_text("def f():\n    return 3\n")
    code = cli.main(["diverge", "--call", f"{target}:f"])
    text = capsys.readouterr().out
    assert code == 2
    assert "VERDICT  NOTHING TO COMPARE: the computation produced no tensor output and recorded no events" in text
    assert "NO DIVERGENCE" not in text


@pytest.mark.parametrize("function, verdict", [
    ("padded_scratch", "NO DIVERGENCE"),
    ("garbage_accumulator", "DIVERGED at #3: op aten.add_.Tensor reads uninitialized memory (`self`)"),
    ("running_mean_update", "DIVERGED at #2: state written by run A at "),
    ("branch_on_call_count", "DIVERGED at #1: the runs took different paths (A at "),
    ("rotating_terms", "DIVERGED at #7: the runs passed different tensors to op aten.add.Tensor (`self`)"),
    ("stamped_by_counter", "DIVERGED at #0: culprit op aten.lift_fresh.default (`out`)"),
])
def test_cli_verdicts_and_exit_codes_of_the_planted_cases(capsys, function, verdict):
    code = cli.main(["diverge", "--call", f"{DATA / 'planted_divergence.py'}:{function}"])
    text = capsys.readouterr().out
    assert code == (0 if verdict.startswith("NO") else 1), text
    assert f"VERDICT  {verdict}" in text


def test_diverge_argv_spells_out_the_arguments_and_parses_back():
    def parse(*argv: str):
        return cli.build_parser({"diverge": cmd_diverge}).parse_args(["diverge", *argv])

    args = parse("--case", "c02", "--threads", "1", "2", "--grad", "detector.distance_mm", "--layers", "ops")
    argv = cmd_diverge.diverge_argv(args, out=Path("bundle"))
    assert argv[:2] == ["--case", "c02"] and argv[argv.index("--out") + 1] == "bundle"
    again = parse(*argv)
    assert {k: v for k, v in vars(again).items() if k != "out"} == {k: v for k, v in vars(args).items() if k != "out"}
    script = parse("--script", "s.py", "--", "-x", "1")
    assert cmd_diverge.diverge_argv(script)[-3:] == ["--", "-x", "1"]


def test_no_module_of_the_area_imports_the_dispatcher():
    """No import cycle: only the console entry point imports detsim.track.cli."""
    for path in Path(cmd_diverge.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
        assert "detsim.track.cli" not in imported, path.name


@pytest.mark.slow
def test_runs_traced_in_their_own_processes_agree(capsys):
    code = cli.main(["diverge", "--call", f"{DATA / 'planted_ops.py'}:deterministic", "--processes"])
    assert code == 0 and "NO DIVERGENCE" in capsys.readouterr().out


@pytest.mark.slow
def test_never_written_padding_traced_in_their_own_processes_agrees(capsys):
    """Each process fills never-written memory with its run's value: padding still does not diverge."""
    code = cli.main(["diverge", "--call", f"{DATA / 'planted_divergence.py'}:padded_scratch", "--processes"])
    assert code == 0 and "NO DIVERGENCE" in capsys.readouterr().out
