"""The fork server: one measurement per request, in a fresh fork, its failures reported, never fatal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from detsim.track.confirm.remeasure import RUNNER

BENCH = '''
import os
import time
import detsim


class Probe:
    def time_pid(self):
        detsim.MARK.append(os.getpid())  # state a later measurement would see if it were not fresh

    def track_mark(self):
        return float(len(detsim.MARK))

    def track_fails(self):
        raise ValueError("no value")
'''


def _server(tmp_path: Path, benchmark: str) -> subprocess.Popen:
    root = tmp_path / "project"
    (root / "benchmarks").mkdir(parents=True)
    (root / "benchmarks" / "__init__.py").write_text("")
    (root / "benchmarks" / "bench_probe.py").write_text(BENCH)
    packages = {}
    for side in "AB":
        (tmp_path / side / "detsim").mkdir(parents=True)
        (tmp_path / side / "detsim" / "__init__.py").write_text(f"SIDE = {side!r}\nMARK = []\n")
        packages[side] = str(tmp_path / side)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"benchmark": benchmark, "params": [], "samples": 3, "root": str(root),
                                "packages": packages}))
    server = subprocess.Popen([sys.executable, "-P", str(RUNNER), str(spec)], cwd=tmp_path, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdout.readline().strip() == "ready"
    return server


def _ask(server: subprocess.Popen, side: str) -> dict:
    server.stdin.write(side + "\n")
    server.stdin.flush()
    return json.loads(server.stdout.readline())


def test_each_side_imports_its_own_package_in_a_fresh_process(tmp_path):
    server = _server(tmp_path, "bench_probe.Probe.track_mark")
    try:
        a, b, again = _ask(server, "A"), _ask(server, "B"), _ask(server, "A")
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    assert Path(a["detsim_file"]).parent.parent.name == "A" and Path(b["detsim_file"]).parent.parent.name == "B"
    assert a["samples"] == again["samples"] == [0.0, 0.0, 0.0]  # nothing left over from earlier measurements
    assert server.returncode == 0


def test_a_time_benchmark_gives_positive_samples_after_its_warm_up(tmp_path):
    server = _server(tmp_path, "bench_probe.Probe.time_pid")
    try:
        answer = _ask(server, "B")
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    assert len(answer["samples"]) == 3 and all(s >= 0 for s in answer["samples"])


def test_a_failing_measurement_is_an_answer_and_the_server_goes_on(tmp_path):
    server = _server(tmp_path, "bench_probe.Probe.track_fails")
    try:
        failed = _ask(server, "A")
        unknown = _ask(server, "C")
    finally:
        server.stdin.close()
        server.wait(timeout=60)
    assert failed["error"] == "ValueError: no value"
    assert "KeyError" in unknown["error"] and server.returncode == 0
