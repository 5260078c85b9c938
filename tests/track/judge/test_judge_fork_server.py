"""The fork server: one measurement per request, in a fresh fork, its failures reported, never fatal."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from detsim.track.base.fresh import Conversation
from detsim.track.judge.confirm import FORK_SERVER

BENCH = '''
import os
import subprocess
import sys
import time
import detsim

# The long calls below sleep on this process's wall clock: they move it on instead of waiting (the server
# reads time.perf_counter, for a call's warm-up and wall seconds, as it reads it for a whole detsim process)
_slept = [0.0]
_real_clock = time.perf_counter
time.perf_counter = lambda: _real_clock() + _slept[0]


def _sleep(seconds):
    _slept[0] += seconds


class Probe:
    timer = staticmethod(time.perf_counter)  # wall seconds: the long calls below sleep

    def time_pid(self):
        detsim.MARK.append(os.getpid())  # state a later measurement would see if it were not fresh

    def track_mark(self):
        return float(len(detsim.MARK))

    def track_torch_loaded(self):  # before the probe imports anything that would load it
        return float("torch" in sys.modules)

    def track_wave_loaded(self):  # a module nothing here imports: a preload that costs no torch import
        return float("wave" in sys.modules)

    def track_fails(self):
        raise ValueError("no value")

    def track_side_of_a_child(self):  # the package a process started by the benchmark imports: A 0, B 1
        code = "import detsim; print(detsim.SIDE)"
        return float("AB".index(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                               check=True).stdout.strip()))

    def time_long(self):
        _sleep(0.6)  # a call longer than fork_server.LONG_CALL_S, like a whole detsim process

    def time_long_after_a_compile(self):  # the first call of a process costs more: a compile, say
        _sleep(0.6 if detsim.MARK else 1.5)  # the first call well over fork_server.WARMS_NOTHING times 0.6 s
        detsim.MARK.append(1)
'''


def _server(tmp_path: Path, benchmark: str, preload: tuple[str, ...] = ()) -> Conversation:
    """A fork server over the probe (it needs no torch: preloaded only where a test asks for it)."""
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
                                "packages": packages, "preload": list(preload)}))
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


# torch, the module the suite preloads, in the slow job (its import is most of this test's time); any other
# module in the default job: the server imports what it is given, whatever it is
@pytest.mark.parametrize("module", ["wave", pytest.param("torch", marks=pytest.mark.slow)])
def test_the_preloaded_modules_are_in_every_fork_and_only_they(tmp_path, module):
    for preload, loaded in (((), 0.0), ((module,), 1.0)):
        with _server(tmp_path / str(loaded), f"bench_probe.Probe.track_{module}_loaded", preload) as server:
            answer = server.ask({"order": "AB"})
        assert answer["A"]["samples"] == answer["B"]["samples"] == [loaded] * 3


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


# The conversations with benchmarks whose calls are long (each call sleeps past fork_server.LONG_CALL_S): the
# benchmark and the order of each round.
LONG_CALLS = {
    "one round": ("bench_probe.Probe.time_long", ("AB",)),
    "no speed-up": ("bench_probe.Probe.time_long", ("AB", "BA", "AB")),
    "speed-up": ("bench_probe.Probe.time_long_after_a_compile", ("AB", "BA")),
}


@pytest.fixture(scope="module")
def long_calls(tmp_path_factory):
    """Each of :data:`LONG_CALLS`' answers, a round each."""
    def converse(name: str) -> list[dict]:
        benchmark, orders = LONG_CALLS[name]
        with _server(tmp_path_factory.mktemp(name.replace(" ", "-")), benchmark) as server:
            return [server.ask({"order": order}) for order in orders]

    return {name: converse(name) for name in LONG_CALLS}


def test_a_benchmark_whose_call_is_long_takes_one_sample_a_side_and_round(long_calls):
    [answer] = long_calls["one round"]
    assert [len(answer[side]["samples"]) for side in "AB"] == [1, 1]


def test_a_long_call_that_the_warm_up_does_not_speed_up_is_warmed_up_in_the_first_round_only(long_calls):
    rounds = long_calls["no speed-up"]
    assert [r[side]["warmed_up"] for r in rounds for side in "AB"] == [True, True, False, False, False, False]
    assert all(len(r[side]["samples"]) == 1 for r in rounds for side in "AB")


def test_a_long_call_that_the_warm_up_speeds_up_is_warmed_up_every_round(long_calls):
    rounds = long_calls["speed-up"]
    assert all(r[side]["warmed_up"] for r in rounds for side in "AB")
    # warmed up, each round's one sample is the fast call, never the first (compiling) one
    assert all(0.5 < s < 1.5 for r in rounds for side in "AB" for s in r[side]["samples"])
