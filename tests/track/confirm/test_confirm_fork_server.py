"""The fork server: one measurement per request, in a fresh fork, its failures reported, never fatal."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from detsim.track.base.fresh import Conversation
from detsim.track.confirm.remeasure import FORK_SERVER

BENCH = '''
import os
import subprocess
import sys
import time
import detsim


class Probe:
    def time_pid(self):
        detsim.MARK.append(os.getpid())  # state a later measurement would see if it were not fresh

    def track_mark(self):
        return float(len(detsim.MARK))

    def track_fails(self):
        raise ValueError("no value")

    def track_side_of_a_child(self):  # the package a process started by the benchmark imports: A 0, B 1
        code = "import detsim; print(detsim.SIDE)"
        return float("AB".index(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                               check=True).stdout.strip()))

    def time_long(self):
        time.sleep(0.6)  # a call longer than fork_server.LONG_CALL_S, like a whole detsim process
'''


def _server(tmp_path: Path, benchmark: str) -> Conversation:
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
    server = Conversation([sys.executable, "-P", str(FORK_SERVER), str(spec)], cwd=tmp_path, timeout=60)
    assert server.greeting == {"ready": True}
    return server


def test_each_side_imports_its_own_package_in_fresh_processes_every_round(tmp_path):
    with _server(tmp_path, "bench_probe.Probe.track_mark") as server:
        first, second = server.ask({"order": "AB"}), server.ask({"order": "BA"})
    for answer in (first, second):
        assert Path(answer["A"]["detsim_file"]).parent.parent.name == "A"
        assert Path(answer["B"]["detsim_file"]).parent.parent.name == "B"
        # nothing left over from the warm-up of this round's process, nor from earlier rounds
        assert answer["A"]["samples"] == answer["B"]["samples"] == [0.0, 0.0, 0.0]
    assert server.process.returncode == 0  # it ended when its input did


def test_a_time_benchmark_gives_one_sample_per_turn_after_its_warm_up(tmp_path):
    with _server(tmp_path, "bench_probe.Probe.time_pid") as server:
        answer = server.ask({"order": "BA"})
    assert [len(answer[side]["samples"]) for side in "AB"] == [3, 3]
    assert all(s >= 0 for side in "AB" for s in answer[side]["samples"])


def test_a_failing_measurement_is_an_answer_naming_its_side_and_the_server_goes_on(tmp_path):
    with _server(tmp_path, "bench_probe.Probe.track_fails") as server:
        failed = server.ask({"order": "AB"})
        unknown = server.ask({"order": "AC"})
    assert failed["error"] == "A: ValueError: no value; B: ValueError: no value" and failed["side"] == "A"
    assert unknown["error"] == "a round is AB or BA, got 'AC'" and server.process.returncode == 0


def test_a_process_the_benchmark_starts_imports_the_side_s_package_too(tmp_path):
    with _server(tmp_path, "bench_probe.Probe.track_side_of_a_child") as server:
        answer = server.ask({"order": "AB"})
    assert answer["A"]["samples"] == [0.0] * 3 and answer["B"]["samples"] == [1.0] * 3


def test_a_benchmark_whose_call_is_long_takes_one_sample_a_side_and_round(tmp_path):
    with _server(tmp_path, "bench_probe.Probe.time_long") as server:
        answer = server.ask({"order": "AB"})
    assert [len(answer[side]["samples"]) for side in "AB"] == [1, 1]
