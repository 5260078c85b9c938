"""detsim-track diverge: targets, exit codes, the evidence bundle and the record worker."""

from __future__ import annotations

import ast
import json
import shlex
from pathlib import Path

import pytest

from detsim.track import cli
from detsim.track.divergence import cmd_diverge
from detsim.track.divergence.records import Record

DATA = Path(__file__).resolve().parents[2] / "data"
TINY = "-cell 30 32 34 90 90 90 -default_F 50 -N 3 -misset 10 20 30 -mosaic 1 -mosaic_dom 2 -detpixels 6 " \
       "-pixel 4 -distance 40 -oversample 2"


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


def test_bad_targets_and_existing_bundles_exit_2(tmp_path, capsys):
    assert cli.main(["diverge", "--case", "no_such_case"]) == 2
    assert "not a golden case" in capsys.readouterr().err
    assert cli.main(["diverge", "--call", "torch:zeros", "--out", str(tmp_path)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err


def test_a_script_that_exits_non_zero_is_unmeasured(tmp_path, capsys):
    script = tmp_path / "fails.py"
    script.write_text("import sys\nsys.exit(3)\n")
    assert cli.main(["diverge", "--script", str(script)]) == 2
    text = capsys.readouterr().out
    assert "ERROR    run A raised: RuntimeError: " in text and "exited with status 3" in text
    assert "but a run raised" in text


def test_diverge_argv_spells_out_the_arguments_and_parses_back():
    args = cmd_diverge._parser().parse_args(["--case", "c02", "--threads", "1", "2", "--grad", "detector.distance_mm",
                                             "--layers", "ops"])
    argv = cmd_diverge.diverge_argv(args, out=Path("bundle"))
    assert argv[:2] == ["--case", "c02"] and argv[argv.index("--out") + 1] == "bundle"
    again = cmd_diverge._parser().parse_args(argv)
    assert {k: v for k, v in vars(again).items() if k != "out"} == {k: v for k, v in vars(args).items() if k != "out"}
    script = cmd_diverge._parser().parse_args(["--script", "s.py", "--", "-x", "1"])
    assert cmd_diverge.diverge_argv(script)[-3:] == ["--", "-x", "1"]


def test_the_record_worker_writes_one_run_as_json(tmp_path):
    path = tmp_path / "record_A.json"
    argv = shlex.split(f"--call {DATA / 'planted_ops.py'}:deterministic --dtype float32")
    assert cmd_diverge._record_worker(str(path), "1", argv) == 0
    rec = Record.load(path)
    assert rec.threads == 1 and rec.label.endswith(":deterministic") and rec.counts()["op"] > 10
    assert {t.dtype for t in rec.results} == {"float32"}


def test_no_module_of_the_area_imports_the_dispatcher():
    """No import cycle: only the console entry point imports detsim.track.cli."""
    for path in Path(cmd_diverge.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
        assert "detsim.track.cli" not in imported, path.name


@pytest.mark.slow
def test_runs_recorded_in_their_own_processes_agree(capsys):
    code = cli.main(["diverge", "--call", f"{DATA / 'planted_ops.py'}:deterministic", "--processes"])
    assert code == 0 and "NO DIVERGENCE" in capsys.readouterr().out
