"""A check's record read against the targets (:mod:`~.targets`) and against nanoBragg.c: the values each target
is judged on, taken from the speed, determinism and parity steps' data, and detsim's rate over nanoBragg.c's per
workload. Input: the record :func:`~.check.run_check` builds (its ``plan`` and ``steps``); output: JSON-ready
rows, which the check stores in ``gpu.json`` (``targets``, ``side_by_side``) and the summary renders."""

from __future__ import annotations

from detsim.track.gpu.plan import workload
from detsim.track.gpu.targets import (MIN_THROUGHPUT_PIXEL_STEPS, TARGETS, TargetValue, TargetRow, judge)

DTYPES = ("float32", "float64")


def target_rows(record: dict) -> list[TargetRow]:
    """Each target's verdict on this record: nothing is met or missed without a CUDA device."""
    cuda = _data(record, "probe").get("cuda")
    on_gpu = None if record["dry_run"] or record["device"] != "cuda" else (cuda or {}).get("name", "a CUDA device")
    found = measurements(record)
    return [judge(target, found[target.key], on_gpu) for target in TARGETS]


def measurements(record: dict) -> dict[str, TargetValue]:
    """Each target's measured value (keys: :data:`~.targets.TARGETS`' keys)."""
    plan, speeds = record["plan"], _speeds(record)
    p2, p4096 = (_named(plan["speed_workloads"], base) for base in ("P2", "P4096"))
    found = {}
    for dtype in DTYPES:
        for kind in ("kernel", "end_to_end"):
            found[f"rate-{dtype}-{kind.replace('_', '-')}"] = _rate(record, speeds, dtype, kind)
    found["p2-end-to-end-float32"] = _best(
        {path: m["end_to_end"]["median_s"] * 1e3 for path, m in _at(speeds, p2).items() if path.endswith("float32")},
        lowest=True, where=p2, none=f"{p2} was not measured on a float32 path")
    for kind in ("new", "cached"):
        found[f"fixed-cost-{kind}"] = _best(
            {path: d["fixed_cost"][kind]["median_ms"] for path, d in speeds.items() if d.get("fixed_cost")},
            lowest=True, where=plan.get("overhead_workload", ""), none="the fixed cost was not measured on any path")
    small, large = _at(speeds, p2), _at(speeds, p4096)
    found["p4096-per-step"] = _best(
        {path: large[path]["end_to_end"]["pixel_steps_per_s"] / small[path]["end_to_end"]["pixel_steps_per_s"]
         for path in small.keys() & large.keys()}, lowest=False, where=f"{p4096} / {p2}",
        none=f"{p2} and {p4096} were not both measured on any path")
    found["launches"] = _launches(record, _at(speeds, p2), p2)
    found["bit-identical"] = _identical(record)
    found["parity"] = _parity(record)
    return found


def side_by_side(record: dict) -> list[dict]:
    """Per workload nanoBragg.c ran: its wall time and rate, and in each dtype detsim's best end-to-end rate (its
    path: the median of its warm calls; on the fixed-cost workload, of its calls on the same configuration) and
    that rate over nanoBragg.c's. Empty where nanoBragg.c was not timed."""
    ran = _data(record, "nanobragg").get("workloads", {})
    speeds = _speeds(record)
    rows = []
    for name, theirs in ran.items():
        row = {"workload": name, "pixel_steps": theirs["pixel_steps"], "nanobragg_s": theirs["wall_s"],
               "nanobragg_pixel_steps_per_s": theirs["pixel_steps_per_s"]}
        seconds = {path: m["end_to_end"]["median_s"] for path, m in _at(speeds, name).items()}
        if name == record["plan"].get("overhead_workload"):
            seconds = {path: d["fixed_cost"]["cached"]["median_ms"] / 1e3 for path, d in speeds.items()
                       if d.get("fixed_cost")}
        for dtype in DTYPES:
            ours = {path: s for path, s in seconds.items() if path.endswith(dtype)}
            best = min(ours, key=ours.get) if ours else None
            rate = None if best is None else theirs["pixel_steps"] / ours[best]
            row[dtype] = None if best is None else {"path": best, "pixel_steps_per_s": rate,
                                                    "ratio": rate / theirs["pixel_steps_per_s"]}
        rows.append(row)
    return rows


def _data(record: dict, name: str) -> dict:
    return next((s["data"] for s in record["steps"] if s["name"] == name), {})


def _speeds(record: dict) -> dict[str, dict]:
    """Each path's speed data, whatever its step's status (a step cut short keeps what it measured)."""
    return {s["name"].removeprefix("speed "): s["data"] for s in record["steps"]
            if s["name"].startswith("speed ") and s["data"].get("workloads")}


def _named(names: list[str], base: str) -> str:
    """The plan's workload of a reference name (``P2``, or a dry run's ``P2@32``)."""
    return next((name for name in names if name.split("@")[0] == base), base)


def _at(speeds: dict[str, dict], name: str) -> dict[str, dict]:
    """Each path's measurement of workload ``name``, where it has one."""
    return {path: data["workloads"][name] for path, data in speeds.items() if name in data["workloads"]}


def _best(values: dict[str, float], *, lowest: bool, where: str, none: str) -> TargetValue:
    if not values:
        return TargetValue(None, why=none)
    path = (min if lowest else max)(values, key=values.get)
    return TargetValue(values[path], f"{path}, {where}" if where else path)


def _rate(record: dict, speeds: dict, dtype: str, kind: str) -> TargetValue:
    name = record["plan"].get("throughput_workload")
    if name is None:
        return TargetValue(None, why="the plan has no throughput workload")
    size = workload(name).pixel_steps
    if size < MIN_THROUGHPUT_PIXEL_STEPS and not record["dry_run"]:
        return TargetValue(None, why=f"{name} is {size:.3g} pixel·steps, under {MIN_THROUGHPUT_PIXEL_STEPS:.0e}")
    rates = {path: m[kind]["pixel_steps_per_s"] for path, m in _at(speeds, name).items() if path.endswith(dtype)}
    return _best(rates, lowest=False, where=name, none=f"{name} was not measured on a {dtype} path")


def _launches(record: dict, measured: dict[str, dict], name: str) -> TargetValue:
    """On CUDA the kernels and copies/fills of one render of a prepared set-up; on a CPU the Triton kernels
    launched under the interpreter (the ATen calls beside them named)."""
    counts = {path: m["launches"]["render"] for path, m in measured.items() if m.get("launches")}
    if record["device"] == "cuda":
        return _best({path: c["kernels"] + c["memory_ops"] for path, c in counts.items() if c["kernels"] is not None},
                     lowest=True, where=name, none=f"no render of {name} was profiled")
    interpreted = {path: c for path, c in counts.items() if c.get("interpreted_launches") is not None}
    if not interpreted:
        return TargetValue(None, why="no Triton path was profiled under the interpreter")
    path = min(interpreted, key=lambda p: interpreted[p]["interpreted_launches"])
    return TargetValue(interpreted[path]["interpreted_launches"],
                    f"{path}, {name}: Triton launches under the interpreter, {interpreted[path]['aten_ops']} ATen "
                    f"calls beside them")


def _identical(record: dict) -> TargetValue:
    steps = [s for s in record["steps"] if s["name"].startswith("determinism ")]
    differing = [s["name"].removeprefix("determinism ") for s in steps if s["status"] == "failed"]
    missing = [s["name"].removeprefix("determinism ") for s in steps if s["status"] != "failed"
               and (s["status"] != "ok" or s["data"].get("across_processes") is None)]
    missing += [path for path in record["plan"]["paths"] if f"determinism {path}" not in {s["name"] for s in steps}]
    if len(missing) == len(record["plan"]["paths"]):
        return TargetValue(None, why="no path's determinism was compared in two processes")
    return TargetValue(len(differing), ", ".join(differing) or "every path compared", missing=tuple(missing))


def _parity(record: dict) -> TargetValue:
    """The lowest r of any path; a path is missing where it has cases not run or not rendered, or no case at all
    (a path that left every case it ran to the eager code is the eager path's)."""
    parities = {s["name"].removeprefix("parity "): s["data"] for s in record["steps"]
                if s["name"].startswith("parity ") and s["name"] != "parity cpu reference"}
    scored = {path: d["min_r"] for path, d in parities.items() if d.get("min_r") is not None}
    missing = []
    for path in record["plan"]["paths"]:
        d = parities.get(path, {})
        if d.get("not_run") or d.get("errors"):
            missing.append(f"{path} ({len(d.get('not_run', []))} cases not run, {len(d.get('errors', []))} did not "
                           f"render)")
        elif path not in scored and not d.get("eager_code"):
            missing.append(path)
    if not scored:
        return TargetValue(None, why="no path rendered a golden case")
    worst = min(scored, key=scored.get)
    return TargetValue(scored[worst], f"{worst}, {parities[worst].get('worst_case')}", missing=tuple(missing))
