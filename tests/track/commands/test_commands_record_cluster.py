"""``detsim-track record --workers``: a planted target's window recorded through pip and asv with one Dask
worker process and with two gives the same rows and asv results (times masked); the record says where the
timings and the rest were measured, and so does the verdict, from the rows; --workers and --scheduler are
refused together, a bad address before anything is written. Slow: each recording builds and times three
commits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from detsim.track.cli import main
from planted_history import git
from planted_port import make_port

pytest.importorskip("distributed")
ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden"
TIMES = ("seconds", "cpu_s", "peak_mb", "build_s", "baseline_s", "baseline_cpu_s",  # what a load moves
         "dask_worker", "dask_run")  # and the worker and recording that measured a case


def test_workers_and_a_scheduler_together_or_a_bad_address_are_one_line(tmp_path, capsys):
    port = make_port(tmp_path, GOLDEN, render="copy")
    base = ["record", "--target", str(port.root), "--root", str(tmp_path / "d")]
    with pytest.raises(SystemExit) as ended:
        main([*base, "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"])
    assert ended.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    assert main([*base, "--scheduler", "tcp://a b"]) == 2
    assert capsys.readouterr().err == ("record: --scheduler 'tcp://a b': not a scheduler address "
                                       "(e.g. tcp://127.0.0.1:8786)\n")
    assert not (tmp_path / "d").exists()


def _masked(value):
    if isinstance(value, dict):
        return {k: "t" if k in TIMES else _masked(v) for k, v in value.items() if k != "machine"}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


def _asv(folder: Path) -> dict:
    """Each commit's asv results, timings masked (the file names hold the project's path: left out)."""
    found = {}
    for path in sorted(folder.glob("*-*.json")):
        data = json.loads(path.read_text())
        found[data["commit_hash"]] = {name: (None if "Timing" in name or "peak_memory" in name else result[0])
                                      for name, result in data["results"].items()}
    return found


def _differences(a, b, path="") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b or (a != a and b != b) else [f"{path}: {a!r} != {b!r}"]  # (nan: a failed benchmark)


@pytest.mark.slow
def test_one_worker_and_two_record_the_same_window(tmp_path, capsys):
    """Both into one checkout (the first recording moved aside after it): a count depends on its build's path."""
    port = make_port(tmp_path, GOLDEN, render="copy")
    git(port.root, "checkout", "-q", port.commits["shrink"])  # base, docs1, edge, docs2, docs3, shrink: 3 built
    root = tmp_path / "detsim"
    root.mkdir()
    project = root / "results" / "targets" / "port"
    got = []
    for workers in ("1", "2"):
        assert main(["record", "--target", str(port.root), "--recent", "6", "--root", str(root), "--machine", "m1",
                     "--workers", workers, "--no-judge", "--json", str(tmp_path / f"w{workers}.json")]) == 0
        out = capsys.readouterr()
        assert "6 commits: 3 built" in out.out and f"{workers} Dask worker process(es) on this machine" in out.out
        assert "measure: 3 done, 0 failed, 0 left" in out.err
        record = json.loads((tmp_path / f"w{workers}.json").read_text())
        assert record["where"].startswith("timings: measured here (asv machine m1), alone")
        got.append({"rows": _masked(record["rows"]), "turns": [t["kind"] for t in record["turns"]],
                    "asv": _asv(project / "results" / "m1")})
        main(["regressions", "--repo", str(project), "--machine", "m1", "--remeasure", "0"])
        verdict = json.loads((project / "reports" / "latest" / "verdict.json").read_text())["machines"]["m1"]
        [where] = [note for note in verdict["notes"] if note.startswith("where it was measured")]
        assert where.startswith("where it was measured: the timings on machine m1 alone (the machine this history "
                                "belongs to); parity, image hashes, reproducibility, instruction counts and peak "
                                "memory of 6 of the 6 commits judged by "), where
        assert "Dask worker process(es) in one recording on 127.0.0.1 (" in where, where  # counted per recording
        capsys.readouterr()
        project.rename(tmp_path / f"port-{workers}")
    assert not _differences(got[0], got[1]), _differences(got[0], got[1])
    assert len(got[0]["asv"]) == 6 and got[0]["turns"] == ["parity", "broken"]  # edge's parity, shrink's size
