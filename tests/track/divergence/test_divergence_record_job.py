"""divergence.record_job: targets made calls, runs recorded, and the job of a fresh process, run here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from detsim.track.runtime.targets import TargetError
from detsim.track.divergence.events import Record
from detsim.track.divergence.record_job import EndedWithoutRecord, build_call, record_run, run, set_interpreter

DATA = Path(__file__).resolve().parents[2] / "data"


def test_the_job_writes_one_run_as_json(tmp_path):
    out = tmp_path / "record_B.json"
    job = {"target": {"call": f"{DATA / 'planted_ops.py'}:deterministic", "dtype": "float32"},
           "layers": ["ops", "kernels"], "interpret": "auto", "threads": 1, "run": "B", "out": str(out)}
    assert run(job) == {"label": f"{DATA / 'planted_ops.py'}:deterministic"}
    rec = Record.load(out)
    assert rec.threads == 1 and rec.label.endswith(":deterministic") and rec.counts()["op"] > 10
    assert rec.settings["fill"] == 1  # run B's fill of never-written memory
    assert {t.dtype for t in rec.results} == {"float32"}


def test_a_run_that_ends_the_process_is_an_answer_and_no_record(tmp_path):
    script = tmp_path / "quits.py"
    script.write_text("import os\nos._exit(0)\n")
    out = tmp_path / "record_A.json"
    job = {"target": {"script": str(script)}, "layers": ["ops"], "interpret": "off", "threads": 1, "run": "A",
           "out": str(out)}
    answer = run(job)
    assert answer["ended"].startswith(f"{script}: run A ended without a record") and not out.exists()
    with pytest.raises(EndedWithoutRecord):
        record_run(*build_call({"script": str(script)}), 1, ("ops",))


def test_targets_are_labelled_and_scripts_get_their_arguments(tmp_path):
    script = tmp_path / "argv.py"
    script.write_text("import sys\nassert sys.argv[1:] == ['-x', '1'], sys.argv\n")
    call, label = build_call({"script": str(script), "argv": ["-x", "1"]})
    assert label == str(script) and call() is None
    assert build_call({"module": "json.tool"})[1] == "-m json.tool"
    assert build_call({"nanobragg": "-cell 30 30 30 90 90 90 -default_F 1 -detpixels 4"})[1]
    with pytest.raises(TargetError):
        build_call({"case": "no_such_case"})
    failing = tmp_path / "fails.py"
    failing.write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(RuntimeError, match="exited with status 3"):
        build_call({"script": str(failing)})[0]()


def test_the_interpreter_switch_is_set_and_cleared(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    set_interpreter("on")
    assert os.environ["TRITON_INTERPRET"] == "1"
    set_interpreter("off")
    assert "TRITON_INTERPRET" not in os.environ
