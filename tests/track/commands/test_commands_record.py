"""``detsim-track record``: detsim's own commits recorded by the recorder (a target's options refused, one run at a
time per clone; the recording itself: tests/test_ci_track.py); ``--target``: bad input refused in one line with
exit 2 before any build, and (slow)
a planted target's history recorded with asv and judged by ``detsim-track regressions``: every fault found by
the verdict at its commit, a second run measuring nothing, slices of two machines merged."""

from __future__ import annotations

import fcntl
import json
import shutil
from pathlib import Path

import pytest

from detsim.track.cli import main
from detsim.track.target.spec import FILE
from planted_history import git
from planted_port import CASE, make_port

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden"


def test_a_target_without_a_spec_a_foreign_json_or_a_bad_range_is_one_line(tmp_path, capsys):
    assert main(["record", "--target", str(tmp_path), "--root", str(ROOT)]) == 2
    assert capsys.readouterr().err.strip() == (f"record: {tmp_path / FILE}: no target spec "
                                               "(write one: docs/targets.md)")
    (tmp_path / FILE).write_text('command = "nanoBragg"\ncases = ["c02"]\n')
    foreign = tmp_path / "mine.json"
    foreign.write_text('{"report": "bisect"}')
    assert main(["record", "--target", str(tmp_path), "--root", str(tmp_path), "--json", str(foreign)]) == 2
    assert "refusing to replace it" in capsys.readouterr().err and json.loads(foreign.read_text()) == {"report": "bisect"}
    assert main(["record", "HEAD~3..HEAD", "--target", str(tmp_path), "--root", str(tmp_path),
                 "--json", str(tmp_path / "new.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("record: HEAD~3..HEAD: not a range of") and not (tmp_path / "new.json").exists()
    assert not (tmp_path / "results").exists()  # nothing written before the input was checked


def test_a_window_where_no_commit_could_be_measured_exits_2_naming_why(tmp_path, capsys, monkeypatch):
    from detsim.track.commands import record
    from detsim.track.recorder.window import Window

    port = make_port(tmp_path, GOLDEN, count=False)
    failed = "asv recorded nothing (exit 1: No benchmarks selected)"
    monkeypatch.setattr(record, "record_window", lambda spec, commits, *args: Window(
        spec.name, rows=[{"commit": c, "build_error": failed, "reused_from": None, "cases": {}, "keys": []}
                         for c in commits]))
    monkeypatch.setattr(record, "_print", lambda *args: None)
    assert main(["record", "--target", str(port.root), "--root", str(tmp_path), "--recent", "2", "--no-judge"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"record: nothing of port's window could be measured ({failed})"


@pytest.mark.parametrize("option, said", [(["--merge", "x"], "--merge is a target's option"),
                                          (["--scheduler", "not an address!"], "not a scheduler address"),
                                          (["--machine", "../evil"], "'../evil' refused")])
def test_detsims_own_recording_refuses_a_targets_options_before_anything_is_written(tmp_path, capsys, option, said):
    assert main(["record", "--root", str(tmp_path), *option]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option, passed", [([], ()), (["--workers", "3"], ("--workers", "3")),
                                            (["--scheduler", "tcp://10.0.0.7:8786"],
                                             ("--scheduler", "tcp://10.0.0.7:8786"))])
def test_detsims_own_recording_takes_a_cluster_for_its_exact_families(tmp_path, monkeypatch, option, passed):
    from detsim.track.commands import record

    made = []
    monkeypatch.setattr(record, "OwnRecording", lambda root, machine, cluster=(): made.append(cluster) or
                        type("Recording", (), {"record": lambda self, recent, rev_range: None})())
    assert main(["record", "--root", str(tmp_path), "--machine", "m", "--no-judge", *option]) == 0
    assert made == [passed]


def test_detsims_own_recording_is_refused_while_a_tracking_run_holds_the_clone(tmp_path, capsys):
    (tmp_path / ".asv").mkdir()
    with open(tmp_path / ".asv" / "track.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert main(["record", "--root", str(tmp_path), "--machine", "m"]) == 2
    assert "another tracking run is under way in this clone" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / ".asv").iterdir()) == ["track.lock"]


def _verdict(root: Path) -> dict:
    [report] = json.loads((root / "results" / "targets" / "port" / "reports" / "latest" / "verdict.json").read_text()
                          )["machines"].values()
    return report


def _found(root: Path, names: dict) -> set:
    """The verdict's findings (timing suspects left out: whole-process seconds under a shared load step by chance,
    and a suspect is no verdict)."""
    return {(f["family"], names.get(f["first_bad"], f["first_bad"])) for f in _verdict(root)["regressions"]
            if f["family"] != "timing"}


@pytest.mark.slow
def test_a_planted_history_recorded_with_asv_is_judged_by_the_verdict_every_fault_at_its_commit(tmp_path, capsys):
    port = make_port(tmp_path, GOLDEN, render="copy")
    names = {sha: name for name, sha in port.commits.items()}
    root = tmp_path / "detsim"  # where the recording goes: results/targets/port/ (the golden cases are detsim's)
    root.mkdir()

    def record_at(name: str, recent: int) -> tuple[int, str]:
        git(port.root, "checkout", "-q", port.commits[name])
        code = main(["record", "--target", str(port.root), "--recent", str(recent), "--root", str(root),
                     "--machine", "m1", "--json", str(tmp_path / "record.json")])
        return code, capsys.readouterr().out

    code, out = record_at("edge", 3)  # base, docs1, edge
    assert code == 1 and _found(root, names) == {("parity", "edge"), ("determinism", "edge")}
    assert "3 commits: 2 built" in out and "1 reused" in out  # docs1 takes base's results
    assert f" {CASE} ok:" not in out  # a case that rendered is not listed with the failures
    code, out = record_at("shrink", 3)  # docs2, docs3 take edge's results (recorded before); shrink writes 127x127
    assert code == 2 and f"bench_target.Case.track_parity_one_minus_r(case='{CASE}')" in _verdict(root)["unmeasured"]
    assert "wrong size: wrote 64516 bytes" in out and "3 commits: 1 built, 1 renders, 2 reused" in out
    code, out = record_at("crash", 3)  # unshrink, docs4, crash
    assert code == 2 and "RuntimeError: planted crash" in out  # the last lines of its stderr, printed
    code, out = record_at("varies", 2)  # uncrash, varies: a second process does not reproduce the image
    assert code == 1 and ("reproducibility", "varies") in _found(root, names)
    record = json.loads((tmp_path / "record.json").read_text())
    assert [(t["kind"], names[t["commit"]]) for t in record["turns"]] == [("irreproducible", "varies")]
    code, out = record_at("docs6", 15)  # the whole history: nothing measured again but steady..docs6
    assert "15 commits: 1 built" in out and "11 recorded before" in out  # steady by its sources: edge's twin
    assert ("parity", "edge") in _found(root, names)  # the edge fault stays to the tip
    assert _verdict(root)["families"]["timing"]["measured"] == 1  # the whole process timed by asv at the tip
    code, again = record_at("docs6", 15)
    assert "0 built" in again and "15 recorded before" in again


@pytest.mark.slow
def test_slices_from_two_machines_merge_into_one_history(tmp_path, capsys):
    port = make_port(tmp_path, GOLDEN, render="copy")
    roots = [tmp_path / "a", tmp_path / "b"]
    git(port.root, "checkout", "-q", port.commits["docs1"])
    assert main(["record", "--target", str(port.root), "--recent", "2", "--root", str(roots[0]), "--machine", "m1",
                 "--no-judge"]) == 0
    git(port.root, "checkout", "-q", port.commits["edge"])
    assert main(["record", "HEAD^..HEAD", "--target", str(port.root), "--root", str(roots[1]), "--machine", "m1",
                 "--no-judge"]) == 0
    capsys.readouterr()
    slice_b = roots[1] / "results" / "targets" / "port"
    assert main(["record", "--target", str(port.root), "--root", str(roots[0]), "--machine", "m1",
                 "--merge", str(slice_b)]) == 1
    printed = capsys.readouterr().out
    assert "3 commits: 0 built" in printed and printed.count("skipped for a target: ") == 1
    # judged across the seam: base and docs1 recorded here, edge in the other slice
    assert _found(roots[0], {}) == {("parity", port.commits["edge"]), ("determinism", port.commits["edge"])}
    assert main(["record", "HEAD~1..HEAD", "--target", str(port.root), "--root", str(roots[0]),
                 "--merge", str(slice_b)]) == 2
    assert "--merge takes no RANGE" in capsys.readouterr().err
    shutil.rmtree(slice_b / "results")
    assert main(["record", "--target", str(port.root), "--root", str(roots[0]), "--merge", str(slice_b)]) == 2
    assert "not a target's recording" in capsys.readouterr().err
