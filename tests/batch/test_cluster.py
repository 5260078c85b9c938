"""Whole batches on a local Dask cluster, through the command: the images ``detsim`` writes for each line,
bit for bit; a bad line and a worker killed mid-frame are retried once, named, and stop nothing; a rerun
renders only what is missing and writes every good frame once."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from detsim.batch.cluster import local_cluster
from detsim.entry import main
from crash_plugin import CRASH_DISTANCE_MM, CRASH_FLAG_FILE
from test_worker import LINE, detsim_files

pytest.importorskip("distributed")

CRASH_PLUGIN = str(Path(__file__).with_name("crash_plugin.py"))
TINY = " ".join(LINE)


def _manifest(out: Path) -> dict[str, dict]:
    return {record["name"]: record for record in map(json.loads, (out / "manifest.jsonl").read_text().splitlines())}


def test_a_batch_and_a_sweep_write_what_detsim_writes_for_each_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("lines.txt").write_text(f"# three frames\n{TINY}\n{TINY} -seed 8 -floatfile f.bin\n\n{TINY} -distance 90\n")
    Path("values.csv").write_text("-distance,-phi\n95,0\n95,10\n")
    with local_cluster(2, processes=False) as cluster:
        assert main(["batch", "lines.txt", "--scheduler", cluster.scheduler_address]) == 0
        assert main(["batch", "--base", TINY, "--sweep", "values.csv", "--out", "sweep",
                     "--scheduler", cluster.scheduler_address]) == 0
    assert "3 frames rendered, 0 failed" in capsys.readouterr().err
    for out, names, lines in ((Path("batch-out"), ["line0002", "line0003", "line0005"], Path("lines.txt")),
                              (Path("sweep"), ["row0001", "row0002"], None)):
        records = _manifest(out)
        assert sorted(records) == names
        for name, record in records.items():
            assert record["status"] == "ok" and record["tries"] == 1
            argv = record["command"].split()
            written = {o["path"].removeprefix(name + "/"): (out / o["path"]).read_bytes() for o in record["outputs"]}
            assert written == detsim_files(tmp_path / "detsim" / out.name / name, argv), name
    assert _manifest(Path("sweep"))["row0002"]["command"].endswith("-distance 95 -phi 10")


LINES = f"{TINY}\n{TINY} -distance -5\n{TINY} -distance {CRASH_DISTANCE_MM}\n{TINY} -distance 90\n{TINY} -distance 95\n"


def test_a_bad_line_and_a_crash_are_named_and_a_rerun_writes_every_good_frame_once(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("lines.txt").write_text(LINES)
    Path(CRASH_FLAG_FILE).write_text("1")  # line 3 kills its worker on its first try
    out = Path("batch-out")
    with local_cluster(1, preload=[CRASH_PLUGIN]) as cluster:
        run = ["batch", "lines.txt", "--scheduler", cluster.scheduler_address]
        assert main(run) == 1
        first = _manifest(out)
        good = {o["path"]: os.stat(out / o["path"]) for name in ("line0001", "line0003", "line0004", "line0005")
                for o in first[name]["outputs"]}
        assert sorted(p.name for p in out.iterdir()) == ["line0001", "line0003", "line0004", "line0005",
                                                          "manifest.jsonl"]
        assert main(run) == 1
    err = capsys.readouterr().err
    assert err.count("lines.txt:2 failed twice: -distance must be > 0") == 2
    assert "4 frames already done, 1 to render" in err
    assert {n: (r["status"], r["tries"]) for n, r in first.items()} == {
        "line0001": ("ok", 1), "line0002": ("failed", 2), "line0003": ("ok", 2), "line0004": ("ok", 1),
        "line0005": ("ok", 1)}
    again = _manifest(out)
    assert again["line0002"]["status"] == "failed" and again["line0002"]["outputs"] == []
    assert all(again[name] == first[name] for name in ("line0001", "line0003", "line0004", "line0005"))
    assert len(good) == 16 and all((os.stat(out / path).st_mtime_ns, os.stat(out / path).st_ino)
                                   == (info.st_mtime_ns, info.st_ino) for path, info in good.items())
    crashed = {o["path"].removeprefix("line0003/"): (out / o["path"]).read_bytes() for o in first["line0003"]["outputs"]}
    assert crashed == detsim_files(tmp_path / "detsim", LINES.splitlines()[2].split())


@pytest.mark.slow
def test_a_frame_that_kills_its_worker_twice_is_named_and_the_others_are_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    Path("lines.txt").write_text(LINES)
    Path(CRASH_FLAG_FILE).write_text("2")
    with local_cluster(1, preload=[CRASH_PLUGIN]) as cluster:
        assert main(["batch", "lines.txt", "--scheduler", cluster.scheduler_address]) == 1
    assert "lines.txt:3 failed twice: its worker died while rendering it" in capsys.readouterr().err
    records = _manifest(Path("batch-out"))
    assert {n: (r["status"], r["tries"]) for n, r in records.items()} == {
        "line0001": ("ok", 1), "line0002": ("failed", 2), "line0003": ("failed", 2), "line0004": ("ok", 1),
        "line0005": ("ok", 1)}
    assert sorted(p.name for p in Path("batch-out").iterdir()) == ["line0001", "line0004", "line0005",
                                                                    "manifest.jsonl"]


def _pinning() -> str:
    return os.environ.get("CUDA_VISIBLE_DEVICES", "unset")


@pytest.mark.slow
def test_gpu_workers_start_pinned_and_a_gpu_task_runs_only_on_them():
    from distributed import Client

    from detsim.batch.devices import GPU_RESOURCE, gpu_workers

    with local_cluster(gpus=gpu_workers(2, "4,6")) as cluster, Client(cluster) as client:  # no GPU needed
        client.wait_for_workers(2, timeout=120)
        workers = client.scheduler_info()["workers"].values()
        assert sorted((w["name"], w["resources"].get(GPU_RESOURCE)) for w in workers) == [("gpu0", 1), ("gpu1", 1)]
        assert sorted(client.run(_pinning).values()) == ["4", "6"]
        on = client.gather([client.submit(_pinning, pure=False, resources={GPU_RESOURCE: 1}) for _ in range(4)])
        assert set(on) <= {"4", "6"}
