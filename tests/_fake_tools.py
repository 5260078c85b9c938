"""Stand-ins for asv and detsim-track in a throwaway checkout, so that tests/test_ci_track.py runs .ci/track
itself in seconds (the real tools run end to end in tests/test_ci_track_faults.py, a slow test).

Copied to ``.venv/bin/asv`` and ``.venv/bin/detsim-track``; each call appends its arguments to ``$FAKE_LOG``
(one JSON list a line). asv: ``machine`` writes ``~/.asv-machine.json``; ``run`` writes, per commit of its
HASHFILE, the results file asv would (every benchmark of ``BENCHMARKS`` that its --bench matches, merged into
what the file holds) and the suite's ``benchmarks.json``, and first starts a fork server as asv does (its own
process group, a socket in ``/tmp/asv-forkserver-*``), closed when the run ends. ``FAKE_KILL`` = a --bench
regex: the run whose --bench it is kills the whole process group before writing anything, once
``FAKE_KILL_AFTER`` (default 0) commits are written. ``FAKE_HANG`` = a --bench regex, or
"every run": that run waits forever once its fork server is up.
detsim-track: ``FAKE_BROKEN`` makes it fail as a package that does not import; ``regressions`` and ``record``
exit ``FAKE_VERDICT`` (default 0).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCHMARKS = ("bench_cost.InstructionCounts.track_instructions", "bench_parity.track_parity_a01",
              "bench_determinism.track_fingerprint_a01", "bench_determinism.CompiledHashes.track_fingerprint",
              "bench_reproducibility.track_runs_differ", "bench_engine.LargeDetectorMemory.peakmem_render",
              "bench_engine.PathThroughput.track_ns_per_pixel_step", "bench_cli.DetsimCommand.time_detsim_command")


def _log(argv: list[str]) -> None:
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write(json.dumps([Path(sys.argv[0]).name, *argv]) + "\n")


def _config(path: str) -> dict:
    return json.loads("\n".join(line for line in Path(path).read_text().splitlines()
                                if not line.lstrip().startswith("//")))


def _server(benchmarks: str) -> subprocess.Popen:
    folder = tempfile.mkdtemp(prefix="asv-forkserver-")
    code = ("import socket, sys, time; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[3]); s.listen(); "
            "open(sys.argv[3] + '.up', 'w').close(); time.sleep(600)")
    server = subprocess.Popen([sys.executable, "-S", "-c", code, "run_server", benchmarks, f"{folder}/socket"],
                              process_group=0)
    while not Path(f"{folder}/socket.up").exists():
        if server.poll() is not None:
            raise SystemExit(f"fake asv: its fork server ended ({server.returncode}) before binding {folder}/socket")
        time.sleep(0.01)
    return server


def _run(argv: list[str]) -> int:
    config = _config(argv[argv.index("--config") + 1] if "--config" in argv else "asv.conf.json")
    machine, bench = argv[argv.index("--machine") + 1], argv[argv.index("--bench") + 1]
    commits = Path(argv[-1].removeprefix("HASHFILE:")).read_text().split()
    results = Path(config["results_dir"])
    results.mkdir(parents=True, exist_ok=True)
    (results / "benchmarks.json").write_text(json.dumps({**{name: {"name": name} for name in BENCHMARKS},
                                                         "version": 2}))
    server = _server(os.path.abspath(config.get("benchmark_dir", "benchmarks")))
    if os.environ.get("FAKE_HANG") in (bench, "every run"):
        time.sleep(600)
    for done, commit in enumerate(commits):
        if os.environ.get("FAKE_KILL") == bench and done == int(os.environ.get("FAKE_KILL_AFTER", "0")):
            os.killpg(0, signal.SIGKILL)
        path = results / machine / f"{commit[:8]}-fake.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = json.loads(path.read_text()) if path.exists() else {
            "commit_hash": commit, "env_name": "fake", "result_columns": ["result"], "version": 2,
            "results": {}, "durations": {}}
        data["results"].update({name: [1.0] for name in BENCHMARKS if re.search(bench, name)})
        path.write_text(json.dumps(data))
    server.kill()
    server.wait()
    shutil.rmtree(Path(server.args[-1]).parent)
    return 0


def asv(argv: list[str]) -> int:
    _log(argv)
    if argv[0] == "machine":
        home = Path(os.environ["HOME"]) / ".asv-machine.json"
        home.write_text(json.dumps({argv[argv.index("--machine") + 1]: {}, "version": 1}))
        return 0
    if "run" in argv:
        return _run(argv)
    return 0


def detsim_track(argv: list[str]) -> int:
    if os.environ.get("FAKE_BROKEN"):
        print("Traceback (most recent call last):\n  File \"detsim/__init__.py\", line 1\n"
              "ImportError: cannot import name 'nothing'", file=sys.stderr)
        return 1
    _log(argv)
    if argv[:1] in (["regressions"], ["record"]) and "--help" not in argv:
        print("detsim-track: the fake verdict")
        return int(os.environ.get("FAKE_VERDICT", "0"))
    return 0


if __name__ == "__main__":
    tool = {"asv": asv, "detsim-track": detsim_track}[Path(sys.argv[0]).name]
    sys.exit(tool(sys.argv[1:]))
