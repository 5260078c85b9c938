"""What each recorded benchmark says about itself, from its name and asv's description of it: its family
(:func:`family_of`; how each is judged: docs/tracking.md), its golden case, its parameter combinations and its
regression threshold (asv.conf.json's ``regressions_thresholds``).
"""

from __future__ import annotations

import itertools
import re
from typing import Mapping

from detsim.track.base.device_costs import DEVICE_COST_UNITS
from detsim.track.judge.family import Family
from detsim.track.judge.thresholds import DEFAULT_THRESHOLD

# Benchmarks whose family their name says (method name, or class for the machine reference): the
# suite's per-golden-case tracks are track_<prefix>_<case id> (benchmarks/common.py define_case_tracks).
NAMED_FAMILIES = (
    (re.compile(r"(^|.*\.)track_parity_\w+$"), Family.PARITY),
    (re.compile(r"(^|.*\.)track_hash_changed_\w+$"), Family.IMAGE_CHANGED),
    (re.compile(r"(^|.*\.)track_runs_differ$"), Family.RUNS_DIFFER),
    (re.compile(r"(^|.*\.)track_cases_changed$"), Family.CASES_CHANGED),
    (re.compile(r"(^|.*\.)track_fingerprint(_\w+)?$"), Family.IMAGE_FINGERPRINT),
    (re.compile(r"(^|.*\.)track_machine_class$"), Family.MACHINE_CLASS),
    (re.compile(r"(^|.*\.)MachineReference\.\w+$"), Family.MACHINE_REFERENCE),
)
# asv's benchmark type by method-name prefix (where benchmarks.json gives none) -> family
PREFIX_TYPES = {"time_": "time", "peakmem_": "peakmemory", "mem_": "memory", "track_": "track"}
TYPE_FAMILIES = {"time": Family.TIMING, "peakmemory": Family.PEAK_MEMORY, "memory": Family.PEAK_MEMORY}
COST_UNIT = "instructions"  # the unit of the instruction-count tracks (benchmarks/bench_cost.py)
# the units of the device costs counted on the CPU (benchmarks/bench_device_cost.py): exact counts, as instructions
COST_UNITS = (COST_UNIT, *DEVICE_COST_UNITS)
MEMORY_UNITS = ("bytes", "MB")  # a track in one of these is a peak memory (a target's command's own: docs/targets.md)
TIME_UNIT_PREFIX = "ns/"  # tracks of a time per unit of work (PathThroughput's ns/pixel-step)


def family_of(name: str, bench: Mapping) -> Family:
    """The family of benchmark ``name`` from its name, asv type and unit (see the module docstring)."""
    for pattern, family in NAMED_FAMILIES:
        if pattern.match(name):
            return family
    method = name.rsplit(".", 1)[-1]
    kind = bench.get("type") or next((t for p, t in PREFIX_TYPES.items() if method.startswith(p)), None)
    if kind in TYPE_FAMILIES:
        return TYPE_FAMILIES[kind]
    if str(bench.get("unit", "")) in MEMORY_UNITS:
        return Family.PEAK_MEMORY
    if str(bench.get("unit", "")) in COST_UNITS:
        return Family.COUNTED_COST
    if str(bench.get("unit", "")).startswith(TIME_UNIT_PREFIX):  # a time per unit of work: lower is better
        return Family.TIMING
    return Family.THROUGHPUT if str(bench.get("unit", "")).endswith("/s") else Family.OTHER_TRACK


def case_of(bench: Mapping) -> str | None:
    """The golden case of a per-case track: its pretty name is ``"<label>: <case id>"``."""
    pretty = bench.get("pretty_name") or ""
    return pretty.split(": ", 1)[1] if ": " in pretty else None


def param_values(params: str) -> dict[str, str]:
    """A parameter label's values by name, quotes removed: ``"(axis='threads', case='a01')"`` ->
    ``{"axis": "threads", "case": "a01"}`` (``{}`` for ``""``)."""
    return {name: value.strip("'\"") for name, value in re.findall(r"(\w+)=('[^']*'|\"[^\"]*\"|[^,)]*)", params)}


def threshold_for(name: str, thresholds: Mapping[str, float], default: float = DEFAULT_THRESHOLD) -> float:
    """The largest ``regressions_thresholds`` entry whose regex matches ``name`` (asv's rule), else ``default``."""
    matching = [float(v) for regex, v in thresholds.items() if re.match(regex, name)]
    return max(matching) if matching else default


def param_labels(bench: Mapping) -> list[str]:
    """One label per parameter combination, in asv's order (``[""]`` without parameters)."""
    params, names = bench.get("params") or [], bench.get("param_names") or []
    if not params:
        return [""]
    return ["(" + ", ".join(f"{n}={v}" for n, v in zip(names, combo)) + ")" for combo in itertools.product(*params)]

