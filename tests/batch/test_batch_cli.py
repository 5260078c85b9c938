"""``detsim batch`` as a command: reached from ``detsim``, bad input refused in one line with exit 2 before
any render (no cluster started, nothing written), and dask never imported by ``detsim`` without ``batch``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from detsim.entry import main

LINE = "-detpixels 16 -nonoise -nopgm"


@pytest.mark.parametrize("files, argv, message", [
    ({"lines.txt": f"{LINE}\n{LINE} -bogus\n"}, ["lines.txt"], "lines.txt:2: unknown flag -bogus"),
    ({"lines.txt": f"{LINE} -floatfile /tmp/f.bin\n"}, ["lines.txt"], "lines.txt:1: -floatfile /tmp/f.bin: a batch"),
    ({"v.csv": "-distance\n90\n80,1\n"}, ["--base", LINE, "--sweep", "v.csv"], "v.csv:3: 2 values for 1 columns"),
    ({}, ["missing.txt"], "missing.txt: cannot be read"),
    ({"lines.txt": LINE}, ["lines.txt", "--sweep", "v.csv"], "give a lines file or --base with --sweep, not both"),
    ({"v.csv": "-distance\n90\n"}, ["--sweep", "v.csv"], "give a file of command lines, or --base LINE with --sweep"),
    ({"lines.txt": LINE}, ["lines.txt", "--workers", "0"], "--workers 0: give at least 1"),
    ({"lines.txt": LINE, "batch-out/line0001/floatimage.bin": "x"}, ["lines.txt"],
     "lines.txt:1: -floatfile "),
])
def test_bad_input_is_one_line_exit_2_and_nothing_is_rendered(files, argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_text(text)
    before = sorted(p for p in tmp_path.rglob("*"))
    monkeypatch.setattr("detsim.batch.cli._render", lambda *a: pytest.fail("rendered bad input"))
    assert main(["batch", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"detsim batch: error: {message}") and err.count("\n") == 1, err
    assert sorted(p for p in tmp_path.rglob("*")) == before


def test_a_usage_error_exits_2_and_help_0(capsys):
    assert main(["batch", "--workers"]) == 2
    assert main(["batch", "-h"]) == 0
    assert "--scheduler ADDRESS" in capsys.readouterr().out


def test_detsim_without_batch_never_imports_dask():
    code = ("import sys; from detsim.entry import main; import detsim.batch.cli, detsim.batch.worker; "
            "main(['-bogus']); main(['-h']); "
            "assert not [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')], 'dask imported'")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
