"""The bundle's shared files: the answer, the commands, the environment and a manifest that checks out."""

from __future__ import annotations

import json

from detsim.track.compare.manifest import check_bundle
from detsim.track.explain.bundle import answer_text, finish

RECORD = {"job": {"kind": "cost", "workload": "P1@64", "last_good": "a" * 40, "first_bad": "b" * 40,
                  "origin": "command line"},
          "commits_between": ["c" * 40, "b" * 40], "answer": "The count rises at cccccccc.", "changed": True}


def test_the_answer_has_one_paragraph_per_explanation():
    text = answer_text([RECORD])
    assert "## cost of P1@64 (aaaaaaaa..bbbbbbbb, from command line)" in text
    assert "The count rises at cccccccc." in text


def test_finish_writes_every_file_and_a_manifest_of_them(tmp_path):
    (tmp_path / "cost-P1@64").mkdir()
    (tmp_path / "cost-P1@64" / "explanation.txt").write_text("x\n")
    finish(tmp_path, [RECORD], ["explain", "a", "b"], tmp_path)
    assert json.loads((tmp_path / "explain.json").read_text())["explanations"][0]["answer"].startswith("The count")
    commands = (tmp_path / "commands.txt").read_text()
    assert "detsim-track explain a b" in commands and f"# commit {'c' * 40}" in commands
    assert check_bundle(tmp_path) == []
    listed = (tmp_path / "sha256.txt").read_text()
    assert "cost-P1@64/explanation.txt" in listed and "answer.md" in listed
