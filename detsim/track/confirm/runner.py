"""A fork server that measures one benchmark at two commits: run as a script by :mod:`.remeasure`.

``python -P runner.py SPEC.json``. SPEC names the benchmark (``bench_engine.NanoBraggWorkloads
.time_simulate``), its parameter values, how many samples a process takes, the project checkout (for its
``benchmarks`` package, which asv also takes from the checkout) and one exported ``detsim`` package per
side (``{"A": dir, "B": dir}``). The server imports torch once; for every side letter it reads on stdin
it forks a fresh process that puts that side's package first on ``sys.path``, imports the benchmark,
sets it up as asv would (``setup(*params)``), calls it once to warm up and takes its samples: a
``time_`` benchmark timed with its own ``timer`` (CPU seconds), a ``track_`` benchmark by its return
value. The process's samples come back as one JSON line on stdout (``{"error": ...}`` if it failed).

A process per measurement, so nothing one commit's code leaves in memory reaches the other's; a fork,
so a measurement costs a fraction of a second instead of torch's import. Standard library and torch
only: this file runs beside the other commits' packages, not this one's.
"""

import importlib
import json
import os
import sys
import time
import traceback

import torch  # noqa: F401  imported once, shared by every forked measurement


def _measure(spec: dict, side: str) -> dict:
    sys.path[:0] = [spec["packages"][side], spec["root"]]
    module_name, class_name, method_name = spec["benchmark"].rsplit(".", 2)
    instance = getattr(importlib.import_module(f"benchmarks.{module_name}"), class_name)()
    params = spec["params"]
    if hasattr(instance, "setup"):
        instance.setup(*params)
    method = getattr(instance, method_name)
    timer = getattr(instance, "timer", time.process_time)
    method(*params)  # warm-up: lazy imports, allocator caches, compilation
    samples = []
    for _ in range(spec["samples"]):
        if method_name.startswith("time_"):
            started = timer()
            method(*params)
            samples.append(timer() - started)
        else:
            samples.append(float(method(*params)))
    return {"samples": samples, "detsim_file": sys.modules["detsim"].__file__}


def _fork(spec: dict, side: str) -> str:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            line = json.dumps(_measure(spec, side))
        except BaseException as exc:  # reported to the parent, never raised past the fork
            line = json.dumps({"error": f"{type(exc).__name__}: {exc}",
                               "traceback": traceback.format_exc(limit=-3)})
        os.write(write_end, (line + "\n").encode())
        os._exit(0)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 1 << 16):
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode() or json.dumps({"error": "the measuring process died"}) + "\n"


def main(spec_path: str) -> None:
    with open(spec_path) as handle:
        spec = json.load(handle)
    print("ready", flush=True)
    for line in sys.stdin:
        sys.stdout.write(_fork(spec, line.strip()))
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
