"""detsim-track determinism: arguments, exit codes, and the evidence bundle whose command reproduces it."""

from __future__ import annotations

import argparse
import ast
import json
import shlex
from pathlib import Path

import pytest

from detsim.track import cli
from detsim.track.commands import determinism as cmd_determinism

DATA = Path(__file__).resolve().parents[2] / "data"
PLANTED = DATA / "planted_ops.py"
# 8x8 pixels that still exercise subpixels, two sources, phi steps, mosaic domains and water.
TINY = ("-cell 30 32 34 90 90 90 -default_F 50 -N 3 -misset 10 20 30 -mosaic 1 -mosaic_dom 2 -water 0.5 "
        "-hdivrange 4 -hdivsteps 2 -detpixels 8 -pixel 4 -distance 40 -oversample 2 -phisteps 2 -osc 2")


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cmd_determinism.add_arguments(parser)
    return parser.parse_args(argv)


def test_cli_writes_a_bundle_whose_command_reproduces_the_hashes(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = Path("reports") / "{stamp}" / "determinism"
    args = ["determinism", "--nanobragg", TINY, "--call", f"{PLANTED}:thread_dependent_sum", "--modes", "eager",
            "--devices", "cpu", "--grad", "detector.distance_mm", "--out", str(out)]
    assert cli.main(args) == 2
    assert "--grad applies to simulation cases only" in capsys.readouterr().err
    args = [a for a in args if a not in ("--grad", "detector.distance_mm")]
    assert cli.main(args) == 0
    printed = capsys.readouterr().out
    (bundle,) = list((tmp_path / "reports").glob("*/determinism"))
    assert bundle.parent.name.endswith("Z") and f"evidence: {bundle.relative_to(tmp_path)}" in printed
    files = {p.name for p in bundle.iterdir()}
    assert {"summary.md", "matrix.json", "matrix.txt", "runs.tsv", "env.json", "commands.txt"} <= files
    summary = (bundle / "summary.md").read_text()
    assert "**Verdict:** DETERMINISTIC" in summary and "threads 2 vs 1" in summary
    env = json.loads((bundle / "env.json").read_text())
    assert {"commit", "dirty", "python", "torch", "triton", "cpu", "torch_threads", "cuda", "env"} <= set(env)
    data = json.loads((bundle / "matrix.json").read_text())
    assert data["exit_code"] == 0 and len(data["runs"]) == 16 and [f["kind"] for f in data["findings"]] == [
        "threads", "threads"]
    rows = (bundle / "runs.tsv").read_text().splitlines()
    assert len(rows) == 1 + 16 and all(len(r.split("\t")[-1]) == 64 for r in rows[1:])

    command = (bundle / "commands.txt").read_text().splitlines()[1]
    argv = shlex.split(command)
    assert argv[:2] == ["detsim-track", "determinism"] and argv[argv.index("--out") + 1] == str(bundle.relative_to(tmp_path))
    assert cli.main(argv[1:]) == 2  # refuses to overwrite the bundle
    argv[argv.index("--out") + 1] = "again"
    assert cli.main(argv[1:]) == 0
    again = (tmp_path / "again" / "runs.tsv").read_text().splitlines()

    def hashes(lines):
        return [line.split("\t")[:6] + line.split("\t")[-2:] for line in lines]

    assert hashes(again) == hashes(rows)


def test_cli_rejects_unknown_cases_with_exit_2(capsys):
    assert cli.main(["determinism", "no_such_case"]) == 2
    assert "not a golden case" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--repeats", "0"], ["--threads", "1", "0"], ["--chunk-pixels", "0"],
                                  ["--chunk-pixels", "-64"]])
def test_cli_rejects_counts_below_one_when_the_options_are_read(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.setattr(cmd_determinism, "run_matrix", lambda *a, **k: pytest.fail("nothing may run"))
    with pytest.raises(SystemExit) as stopped:
        cli.main(["determinism", "a01", *argv, "--out", str(tmp_path / "bundle")])
    assert stopped.value.code == 2
    assert f"argument {argv[0]}: must be 1 or more, got {argv[-1]}" in capsys.readouterr().err
    assert not (tmp_path / "bundle").exists()


def test_list_cases_prints_the_manifest_ids(capsys):
    from detsim.track.base.golden import case_ids

    assert cli.main(["determinism", "--list-cases"]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == case_ids() and set(cmd_determinism.DEFAULT_CASES) <= set(printed)


def test_a_bare_out_is_a_stamped_folder_under_reports():
    from detsim.track.base.output import report_folder

    folder = report_folder(parse("--out"), cmd_determinism.AREA, base=Path())
    assert folder.parts[0] == "reports" and folder.parts[2] == "determinism" and folder.parts[1].endswith("Z")
    assert report_folder(parse(), cmd_determinism.AREA) is None
    assert report_folder(parse("--out", "x/{stamp}"), cmd_determinism.AREA).parent == Path("x")


def test_the_named_computations_default_to_two_golden_cases_and_refuse_grads_of_callables():
    from detsim.track.base.computations import ComputationError

    given = parse()
    defaults = cmd_determinism.with_defaults(given)
    named = cmd_determinism.named_computations(defaults)
    assert [(n.kind, n.name) for n in named] == [("golden", case) for case in cmd_determinism.DEFAULT_CASES]
    assert [n.computation().name for n in named] == list(cmd_determinism.DEFAULT_CASES)
    assert not given.cases and not given.modes  # the caller's arguments are left as they were
    assert defaults.devices[0] == "cpu" and defaults.modes[0] == "eager"
    with pytest.raises(ComputationError, match="--grad applies to simulation cases only"):
        cmd_determinism.named_computations(cmd_determinism.with_defaults(
            parse("--call", f"{PLANTED}:drifting", "--grad", "detector.distance_mm")))


def test_command_line_spells_out_every_axis():
    args = parse("c02", "--threads", "1", "--dtypes", "float32", "--devices", "cpu", "--modes", "eager", "--strict")
    argv = shlex.split(cmd_determinism.command_line(args, out=Path("here")))
    assert argv[:3] == ["detsim-track", "determinism", "c02"]
    assert argv[argv.index("--repeats") + 1] == "2" and argv[argv.index("--out") + 1] == "here"
    assert "--strict" in argv and "--isolate" not in argv
    assert vars(parse(*argv[2:]))["threads"] == [1]  # the command parses back


def test_the_command_never_imports_the_dispatcher():
    """No import cycle: only the console entry point imports detsim.track.cli."""
    folder = Path(cmd_determinism.__file__).parent
    for path in folder.glob("*.py"):
        imported = {node.module for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.ImportFrom)}
        imported |= {alias.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Import)
                     for alias in node.names}
        assert "detsim.track.cli" not in imported, path.name


@pytest.mark.parametrize("option", ["--out", "--out-root"])
def test_a_report_place_that_cannot_be_written_is_refused_before_any_run(tmp_path, capsys, monkeypatch, option):
    monkeypatch.setattr(cmd_determinism, "run_matrix", lambda *a, **k: pytest.fail("nothing may run"))
    (tmp_path / "a_file").write_text("x")
    for place in (tmp_path / "a_file" / "r", Path("/sys/detsim-track-determinism")):
        assert cli.main(["determinism", "--nanobragg", TINY, option, str(place)]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and f"{option} {place}" in err
