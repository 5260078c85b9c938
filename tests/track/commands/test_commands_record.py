"""``detsim-track record --target``: bad input refused in one line with exit 2 before any build, and (slow)
a planted target's window recorded: every fault at its commit, a second run measuring nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from detsim.track.cli import main
from detsim.track.target.spec import FILE
from planted_port import make_port

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden"


def test_a_target_without_a_spec_a_foreign_json_or_a_bad_range_is_one_line(tmp_path, capsys):
    assert main(["record", "--target", str(tmp_path), "--root", str(ROOT)]) == 2
    assert capsys.readouterr().err.strip() == (f"record: {tmp_path / FILE}: no target spec "
                                               "(write one: docs/targets.md)")
    (tmp_path / FILE).write_text('command = "nanoBragg"\ncases = ["c02"]\n')
    foreign = tmp_path / "mine.json"
    foreign.write_text('{"report": "record", "target": "another"}')
    assert main(["record", "--target", str(tmp_path), "--root", str(ROOT), "--json", str(foreign)]) == 2
    assert "not a record of" in capsys.readouterr().err and json.loads(foreign.read_text())["target"] == "another"
    assert main(["record", "HEAD~3..HEAD", "--target", str(tmp_path), "--root", str(ROOT),
                 "--json", str(tmp_path / "new.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("record: HEAD~3..HEAD: not a range of") and not (tmp_path / "new.json").exists()


@pytest.mark.slow
def test_a_planted_window_is_recorded_every_fault_at_its_commit(tmp_path, capsys):
    port = make_port(tmp_path, GOLDEN, render="copy")
    out = tmp_path / "record.json"
    argv = ["record", "--target", str(port.root), "--recent", "15", "--root", str(ROOT), "--json", str(out)]
    assert main(argv) == 1
    names = {sha: name for name, sha in port.commits.items()}
    record = json.loads(out.read_text())
    assert [(t["kind"], names[t["commit"]]) for t in record["turns"]] == [
        ("parity", "edge"), ("broken", "shrink"), ("broken", "crash"), ("irreproducible", "varies")]
    assert record["builds"] == 6 and record["reused"] == 9  # docs commits and steady (edge's twin) by their sources
    printed = capsys.readouterr().out
    assert "15 commits: 6 built" in printed and printed.count("\n") >= 16
    assert main(argv) == 1
    again = json.loads(out.read_text())
    assert (again["builds"], again["already_recorded"], again["rows"]) == (0, 15, record["rows"])


def test_slices_from_two_machines_merge_into_one_record(tmp_path, capsys):
    port = make_port(tmp_path, GOLDEN, render="copy")
    c = port.commits
    row = {"date": "", "subject": "", "build_error": None, "reused_from": None, "reused_by": None, "keys": []}
    image = {"case": "c02", "status": "image", "seconds": 1.0, "sha256": "a" * 64, "hashes": ["a" * 64] * 2,
             "parity": {"r": 1.0}}
    wrong = {"case": "c02", "status": "wrong size", "detail": "wrote 4 bytes"}
    slices = []
    for machine, rows in (("m1", [(c["base"], image)]), ("m2", [(c["docs1"], image), (c["shrink"], wrong)])):
        path = tmp_path / f"{machine}.json"
        path.write_text(json.dumps({"report": "record", "target": "port", "rows": [
            {**row, "commit": commit, "machine": machine, "cases": {"c02_xds_xbeam_quirk": o}} for commit, o in rows]}))
        slices.append(str(path))
    out = tmp_path / "merged.json"
    argv = ["record", "--target", str(port.root), "--root", str(ROOT), "--json", str(out), "--merge", *slices]
    assert main(argv) == 1
    merged = json.loads(out.read_text())
    assert [r["machine"] for r in merged["rows"]] == ["m1", "m2", "m2"]
    assert [(t["kind"], t["commit"]) for t in merged["turns"]] == [("broken", c["shrink"])]
    printed = capsys.readouterr().out
    assert "3 commits: 0 built" in printed and printed.count("skipped for a target: instruction counts") == 1
    assert main(["record", "HEAD~1..HEAD", "--target", str(port.root), "--root", str(ROOT), "--json", str(out),
                 "--merge", slices[0]]) == 2
    assert "--merge takes no RANGE" in capsys.readouterr().err
