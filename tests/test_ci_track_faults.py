"""Proof (slow) that the tracking run survives being killed anywhere: a record is complete or absent, and nothing
is left running.

A throwaway history of two commits, built from the project with a small suite (the parity of two golden cases,
the 4096² peak memory, the timings; no instruction counts or compiled path): ``bash .ci/track`` (RECENT=2)
records it once uninterrupted (machine ``whole``); then, as machine ``killed``, a run is started and its whole
process group SIGKILLed at a moment chosen at random, again and again (each run after a kill is itself the
rerun), and a last run goes to its end. Its results must hold every benchmark of the suite for both commits,
with the exact benchmarks (parity) equal to the uninterrupted run's, and no process of the runs or fork-server
folder may be left. ``FAULT_SEED`` repeats a sequence of moments (printed with ``-s``).
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from planted_history import append, commit, copy_project, link_project_venv, start

pytestmark = pytest.mark.slow

KILLS = 3
KEPT = ("bench_parity.py", "bench_engine.py", "bench_cli.py", "common.py", "counts.py", "__init__.py")
CASES = 2  # golden cases kept in the throwaway manifest


def _processes_of(root: Path) -> list[str]:
    """Command lines of the processes that run anything of ``root`` (the runs, asv, its fork servers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            if cwd.startswith(str(root)) or any(str(root) in arg for arg in argv):
                found.append(" ".join(argv))
    return found


def _dead_forkserver_folders() -> list[Path]:
    """asv-forkserver-* folders whose socket no process holds."""
    bound = {line.split()[7] for line in Path("/proc/net/unix").read_text().splitlines()[1:] if len(line.split()) > 7}
    return [f for f in Path(tempfile.gettempdir()).glob("asv-forkserver-*") if str(f / "socket") not in bound]


def _results(root: Path, machine: str) -> dict[str, dict]:
    """commit -> its results map (benchmark -> asv's row)."""
    found = {}
    for path in (root / "results" / "asv" / machine).glob("*.json"):
        if path.name not in ("machine.json", "benchmarks.json"):
            data = json.loads(path.read_text())
            found[data["commit_hash"]] = data["results"]
    return found


def _track(root: Path, env: dict, machine: str, log: Path, kill_after: float | None = None) -> tuple[str, float]:
    """Run .ci/track (SIGKILL its process group after ``kill_after`` s): (its output, its wall time)."""
    began = time.monotonic()
    with tempfile.TemporaryFile("w+") as out:
        run = subprocess.Popen(["bash", ".ci/track"], cwd=root, env={**env, "ASV_MACHINE": machine}, stdout=out,
                               stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = run.wait(timeout=kill_after if kill_after is not None else 3000)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            code = run.wait()
        out.seek(0)
        text = out.read()
    with open(log, "a") as kept:
        kept.write(f"\n$ ASV_MACHINE={machine} bash .ci/track (killed after {kill_after} s): exit {code}\n{text}")
    return text, time.monotonic() - began


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    work = tmp_path_factory.mktemp("faults")
    root, env, log = start(work)
    copy_project(root)
    link_project_venv(root)  # the project's environment, up to date: make leaves it alone
    for module in (root / "benchmarks").glob("*.py"):
        if module.name not in KEPT:
            module.unlink()
    manifest = root / "tests" / "golden" / "manifest.json"
    manifest.write_text(json.dumps(json.loads(manifest.read_text())[:CASES], indent=1))
    conf = json.loads((root / "asv.conf.json").read_text())
    # the verdict is not what this proves: no timing step may start re-measurements
    conf["regressions_thresholds"] = {regex: (value if value == 0 else 100.0)
                                      for regex, value in conf["regressions_thresholds"].items()}
    (root / "asv.conf.json").write_text(json.dumps(conf, indent=4) + "\n")
    commit(root, "Base: the project with a small suite")
    append(root / "README.md", "\nA line of documentation.\n")
    commit(root, "Docs only")
    env = {**env, "RECENT": "2"}
    out, whole_s = _track(root, env, "whole", log)
    assert "tracking run: judged" in out, out[-3000:]
    return root, env, log, whole_s


def test_killed_anywhere_then_rerun_the_results_equal_an_uninterrupted_run_s(history):
    root, env, log, whole_s = history
    seed = int(os.environ.get("FAULT_SEED", time.time_ns() % 100_000))
    rng = random.Random(seed)
    moments = [round(rng.uniform(2.0, whole_s), 1) for _ in range(KILLS)]
    print(f"\nuninterrupted run {whole_s:.0f} s; FAULT_SEED={seed}: killed after {moments} s")
    for moment in moments:
        _track(root, env, "killed", log, kill_after=moment)
    began = time.time()
    out, last_s = _track(root, env, "killed", log)
    print(f"the last run: {last_s:.0f} s")
    shown = f"FAULT_SEED={seed}, kills after {moments} s; log {log}:\n" + log.read_text()[-4000:]
    assert "tracking run: judged" in out, shown
    suite = set(json.loads((root / "results" / "asv" / "benchmarks.json").read_text())) - {"version"}
    whole, killed = _results(root, "whole"), _results(root, "killed")
    assert set(killed) == set(whole) and len(whole) == 2, shown
    def failed(results: dict) -> set[str]:
        return {n for n in suite if results[n][0] is None or (isinstance(results[n][0], list) and None in results[n][0])}

    for sha, results in killed.items():
        assert set(results) >= suite, (sha, sorted(suite - set(results)), shown)
        assert failed(results) == failed(whole[sha]), shown
        exact = [name for name in suite if re.match(r"bench_parity\.", name)]
        assert exact and {n: results[n][0] for n in exact} == {n: whole[sha][n][0] for n in exact}, shown
    assert _processes_of(root) == [], shown
    left = [f for f in _dead_forkserver_folders() if f.stat().st_mtime < began]
    assert left == [], shown
