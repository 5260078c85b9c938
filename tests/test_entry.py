"""detsim.entry: the ``detsim`` command sends ``batch`` to detsim.batch and everything else to nanoBragg's
command line, so that detsim.commandline never imports detsim.batch (which imports it)."""

from __future__ import annotations

import ast
from pathlib import Path

from detsim.entry import main

COMMANDLINE = Path(__file__).resolve().parents[1] / "detsim" / "commandline"


def test_batch_goes_to_the_batch_command_and_flags_to_nanobraggs(capsys):
    assert main(["batch", "-h"]) == 0
    assert "--scheduler ADDRESS" in capsys.readouterr().out
    assert main(["-h"]) == 0
    shown = capsys.readouterr().out
    assert "-cell" in shown and "--scheduler" not in shown


def test_the_command_line_package_never_imports_batch():
    for path in COMMANDLINE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [n for n in names if n.startswith("detsim.batch")], path.name
