"""The asv suite's device benchmarks for the current commit, measured by the suite's own code: the parameters of
``benchmarks/bench_engine.py``'s ``PathThroughput`` that run on the device, each set up and tracked as asv
would (its ``setup``, then its ``track_`` method), in one child process.

The numbers are written under asv's benchmark name, parameters, unit and version, with the commit, so that
they can be entered into the asv history later; this step does not run asv (the GPU machines have none)."""

from __future__ import annotations

import itertools
import sys
import time

from detsim.track.gpu.steps import keep_partial
from detsim.track.base.status import Status

ENTRY = "detsim.track.gpu.benchmarks:benchmarks_job"
BENCHMARK = "bench_engine.PathThroughput.track_ns_per_pixel_step"  # asv's name: module.class.method


def benchmarks_job(job: dict) -> dict:
    """``job``: {"root", "device", "workloads": names or None (all), "dtypes": names or None, "deadline_s"}."""
    started = time.monotonic()
    sys.path.insert(0, job["root"])
    from benchmarks import bench_engine

    suite = bench_engine.PathThroughput
    out = {"benchmark": BENCHMARK, "unit": suite.unit, "version": suite.version, "param_names": suite.param_names,
           "results": [], "not_run": []}
    for combo in itertools.product(*suite.params):
        params = dict(zip(suite.param_names, combo))
        if params["device"] != job["device"] or any(job[key] is not None and params[axis] not in job[key]
                                                    for key, axis in (("workloads", "workload"), ("dtypes", "dtype"))):
            continue
        if time.monotonic() - started >= job["deadline_s"]:
            out["not_run"].append(params)
            continue
        bench = suite()
        try:
            bench.setup(*combo)
            out["results"].append({"params": params, "value": bench.track_ns_per_pixel_step(*combo)})
        except NotImplementedError as exc:  # asv's skip
            out["results"].append({"params": params, "skipped": str(exc)})
        keep_partial(job, out)
    return out


def judge(data: dict) -> tuple[Status, str]:
    if data["not_run"]:
        return Status.TIMED_OUT, f"{len(data['not_run'])} benchmark(s) not run before the job's deadline"
    if not any("value" in r for r in data["results"]):
        return Status.CRASHED, "no benchmark measured anything"
    return Status.OK, ""
