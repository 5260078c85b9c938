"""The device check's performance goals (docs/gpu.md, "Goals"), defined once; the rule that judges a measured
value against one: met, missed (with its gap) or not measured (with why); and the values a check's record gives
each goal, with detsim's rate over nanoBragg.c's per workload.

A goal is a limit on one measured quantity. ``scope`` says whose value counts: ``BEST``, the best path's (the
one a user would choose: a goal is met where some path meets it, and that path is named); ``EVERY``, the worst
path's, and every path must have been measured for a goal to be met. Input of :func:`goal_rows` and
:func:`side_by_side`: the record :func:`~.check.run_check` builds (its ``plan`` and ``steps``); output: JSON-ready
rows, which the check stores in ``gpu.json`` (``goals``, ``side_by_side``) and the summary renders.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from detsim.track.base.metrics import PARITY_MIN_R
from detsim.track.gpu.plan import workload

MIN_THROUGHPUT_PIXEL_STEPS = 3e9  # the throughput goals hold on a workload at least this large


class Verdict(str, enum.Enum):
    MET = "met"
    MISSED = "missed"
    NOT_MEASURED = "not measured"


class Sense(str, enum.Enum):
    AT_LEAST = ">="
    AT_MOST = "<="


class Scope(str, enum.Enum):
    BEST = "best path"
    EVERY = "every path"


@dataclass(frozen=True)
class DeviceGoal:
    key: str  # stable name in gpu.json
    what: str  # one line: the quantity
    sense: Sense
    limit: float
    unit: str
    scope: Scope
    how: str  # one line: how the check measures it
    gap_on_complement: bool = False  # the gap is read on 1 - value (a correlation: 0.9990 is twice 0.9995's gap)

    def shown(self, value: float) -> str:
        """The value as the goal reads: a correlation to 9 places, the rest to 4 figures."""
        return f"{value:.9f}" if self.gap_on_complement else f"{value:.4g}"

    def meets(self, value: float) -> bool:
        return value >= self.limit if self.sense is Sense.AT_LEAST else value <= self.limit

    def gap(self, value: float) -> float | None:
        """How many times the value is off its limit (>= 1 where missed); None where a ratio means nothing (a limit
        of 0)."""
        if self.gap_on_complement:
            value, limit = 1.0 - value, 1.0 - self.limit
            return value / limit if limit > 0 else None
        if self.sense is Sense.AT_LEAST:
            return self.limit / value if value > 0 else math.inf
        return value / self.limit if self.limit > 0 else None


_RATE = (f"the throughput workload (>= {MIN_THROUGHPUT_PIXEL_STEPS:.0e} pixel·steps): {{}}, the median of the timed "
         f"calls")
GOALS = (
    DeviceGoal("rate-float32-kernel", "float32 throughput, kernel time", Sense.AT_LEAST, 3e11, "pixel·steps/s",
           Scope.BEST, _RATE.format("CUDA events around render() of a prepared set-up, after warm-up")),
    DeviceGoal("rate-float32-end-to-end", "float32 throughput, end to end", Sense.AT_LEAST, 3e11, "pixel·steps/s",
           Scope.BEST, _RATE.format("prepare + render + synchronize, wall clock, after warm-up")),
    DeviceGoal("rate-float64-kernel", "float64 throughput, kernel time", Sense.AT_LEAST, 1e11, "pixel·steps/s",
           Scope.BEST, _RATE.format("CUDA events around render() of a prepared set-up, after warm-up")),
    DeviceGoal("rate-float64-end-to-end", "float64 throughput, end to end", Sense.AT_LEAST, 1e11, "pixel·steps/s",
           Scope.BEST, _RATE.format("prepare + render + synchronize, wall clock, after warm-up")),
    DeviceGoal("p2-end-to-end-float32", "P2 (1024², 200 steps) end to end, warm, float32", Sense.AT_MOST, 2.0, "ms",
           Scope.BEST, "prepare + render + synchronize of the same configuration, wall clock, median"),
    DeviceGoal("fixed-cost-new", "fixed cost, a new configuration each call", Sense.AT_MOST, 1.0, "ms", Scope.BEST,
           "P1@8 (64 pixels): prepare + render + synchronize, wall clock, -distance 1 nm apart each call, median"),
    DeviceGoal("fixed-cost-cached", "fixed cost, the same configuration each call", Sense.AT_MOST, 0.2, "ms",
           Scope.BEST, "P1@8: prepare + render + synchronize of one configuration again, wall clock, median"),
    DeviceGoal("p4096-per-step", "P4096 (4096², 1 step) per pixel·step, against P2", Sense.AT_LEAST, 1.0,
           "x P2's rate", Scope.BEST, "end-to-end rate of P4096 over P2's on the same path"),
    DeviceGoal("launches", "device launches per render (P2)", Sense.AT_MOST, 10, "launches", Scope.BEST,
           "torch.profiler: kernels + copies/fills the device ran for render() of a prepared set-up"),
    DeviceGoal("bit-identical", "paths whose image differs run to run or across processes", Sense.AT_MOST, 0, "paths",
           Scope.EVERY, "P2's sha256: twice in the speed step's process, once in the parity step's"),
    DeviceGoal("parity", "lowest r over every golden case", Sense.AT_LEAST, PARITY_MIN_R, "r", Scope.EVERY,
           "the parity steps: each case against nanoBragg.c's image (a case a path leaves to the eager code is "
           "the eager path's)", gap_on_complement=True),
)
GOALS_BY_KEY = {t.key: t for t in GOALS}


@dataclass(frozen=True)
class GoalValue:
    """A goal's measured value: ``value`` None where nothing was measured (``why``); ``where`` names the path
    (and workload) it came from; ``missing`` lists what an EVERY goal still lacks (paths or cases)."""

    value: float | None
    where: str = ""
    why: str = ""
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class GoalRow:
    """One line of the goals table."""

    goal: DeviceGoal
    verdict: Verdict
    measured: GoalValue
    gap: float | None = None  # where missed
    note: str = ""

    def to_dict(self) -> dict:
        t = self.goal
        return {"key": t.key, "what": t.what, "limit": f"{t.sense.value} {t.limit:g} {t.unit}", "scope": t.scope.value,
                "how": t.how, "verdict": self.verdict.value, "value": self.measured.value, "where": self.measured.where,
                "gap": self.gap, "note": self.note}


def judge(goal: DeviceGoal, measured: GoalValue, on_gpu: str | None) -> GoalRow:
    """The verdict of ``measured`` against ``goal``. ``on_gpu``: None where the run was a dry run or saw no CUDA
    device (then nothing is met or missed: a CPU figure is shown as what it is), else the card's name."""
    if on_gpu is None:
        note = "no CUDA device: dry run" + (f" (CPU, small size: {goal.shown(measured.value)} {goal.unit})"
                                            if measured.value is not None else "")
        return GoalRow(goal, Verdict.NOT_MEASURED, measured, note=note)
    if measured.value is None:
        return GoalRow(goal, Verdict.NOT_MEASURED, measured, note=measured.why)
    if not goal.meets(measured.value):
        gap = goal.gap(measured.value)
        note = f"{gap:.3g}x off" if gap is not None else ""
        if measured.missing:
            note += f"{'; ' if note else ''}also not measured: {', '.join(measured.missing)}"
        return GoalRow(goal, Verdict.MISSED, measured, gap, note)
    if goal.scope is Scope.EVERY and measured.missing:
        return GoalRow(goal, Verdict.NOT_MEASURED, measured,
                   note=f"met where measured; not measured: {', '.join(measured.missing)}")
    return GoalRow(goal, Verdict.MET, measured, note=measured.why)


DTYPES = ("float32", "float64")


def goal_rows(record: dict) -> list[GoalRow]:
    """Each goal's verdict on this record: nothing is met or missed without a CUDA device."""
    cuda = _data(record, "probe").get("cuda")
    on_gpu = None if record["dry_run"] or record["device"] != "cuda" else (cuda or {}).get("name", "a CUDA device")
    found = measurements(record)
    return [judge(goal, found[goal.key], on_gpu) for goal in GOALS]


def measurements(record: dict) -> dict[str, GoalValue]:
    """Each goal's measured value (keys: :data:`GOALS`' keys)."""
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


def _best(values: dict[str, float], *, lowest: bool, where: str, none: str) -> GoalValue:
    if not values:
        return GoalValue(None, why=none)
    path = (min if lowest else max)(values, key=values.get)
    return GoalValue(values[path], f"{path}, {where}" if where else path)


def _rate(record: dict, speeds: dict, dtype: str, kind: str) -> GoalValue:
    name = record["plan"].get("throughput_workload")
    if name is None:
        return GoalValue(None, why="the plan has no throughput workload")
    size = workload(name).pixel_steps
    if size < MIN_THROUGHPUT_PIXEL_STEPS and not record["dry_run"]:
        return GoalValue(None, why=f"{name} is {size:.3g} pixel·steps, under {MIN_THROUGHPUT_PIXEL_STEPS:.0e}")
    rates = {path: m[kind]["pixel_steps_per_s"] for path, m in _at(speeds, name).items() if path.endswith(dtype)}
    return _best(rates, lowest=False, where=name, none=f"{name} was not measured on a {dtype} path")


def _launches(record: dict, measured: dict[str, dict], name: str) -> GoalValue:
    """On CUDA the kernels and copies/fills of one render of a prepared set-up; on a CPU the Triton kernels
    launched under the interpreter (the ATen calls beside them named)."""
    counts = {path: m["launches"]["render"] for path, m in measured.items() if m.get("launches")}
    if record["device"] == "cuda":
        return _best({path: c["kernels"] + c["memory_ops"] for path, c in counts.items() if c["kernels"] is not None},
                     lowest=True, where=name, none=f"no render of {name} was profiled")
    interpreted = {path: c for path, c in counts.items() if c.get("interpreted_launches") is not None}
    if not interpreted:
        return GoalValue(None, why="no Triton path was profiled under the interpreter")
    path = min(interpreted, key=lambda p: interpreted[p]["interpreted_launches"])
    return GoalValue(interpreted[path]["interpreted_launches"],
                    f"{path}, {name}: Triton launches under the interpreter, {interpreted[path]['aten_ops']} ATen "
                    f"calls beside them")


def _identical(record: dict) -> GoalValue:
    steps = [s for s in record["steps"] if s["name"].startswith("determinism ")]
    differing = [s["name"].removeprefix("determinism ") for s in steps if s["status"] == "failed"]
    missing = [s["name"].removeprefix("determinism ") for s in steps if s["status"] != "failed"
               and (s["status"] != "ok" or s["data"].get("across_processes") is None)]
    missing += [path for path in record["plan"]["paths"] if f"determinism {path}" not in {s["name"] for s in steps}]
    if len(missing) == len(record["plan"]["paths"]):
        return GoalValue(None, why="no path's determinism was compared in two processes")
    return GoalValue(len(differing), ", ".join(differing) or "every path compared", missing=tuple(missing))


def _parity(record: dict) -> GoalValue:
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
        return GoalValue(None, why="no path rendered a golden case")
    worst = min(scored, key=scored.get)
    return GoalValue(scored[worst], f"{worst}, {parities[worst].get('worst_case')}", missing=tuple(missing))
