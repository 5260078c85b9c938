"""The history of every benchmark: one :class:`Series` of :class:`Point` per environment, benchmark and parameter
combination, in commit order, with what the benchmark says about itself: its family (:func:`family_of`; how each
is judged: docs/tracking.md), unit, golden case and regression threshold.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, replace
from typing import Iterator, Mapping

from detsim.track.history.jsonc import ResultsError

DEFAULT_THRESHOLD = 0.05  # asv's default when no regressions_thresholds entry matches
FAMILY_ORDER = ("timing", "throughput", "memory", "cost", "track", "parity", "reproducibility", "determinism",
                "hash count", "fingerprint", "reference", "machine class")

# Benchmarks whose family their name says (method name, or class for the machine reference): the
# suite's per-golden-case tracks are track_<prefix>_<case id> (benchmarks/common.py define_case_tracks).
NAMED_FAMILIES = (
    (re.compile(r"(^|.*\.)track_parity_\w+$"), "parity"),
    (re.compile(r"(^|.*\.)track_hash_changed_\w+$"), "determinism"),
    (re.compile(r"(^|.*\.)track_runs_differ$"), "reproducibility"),
    (re.compile(r"(^|.*\.)track_cases_changed$"), "hash count"),
    (re.compile(r"(^|.*\.)track_fingerprint(_\w+)?$"), "fingerprint"),
    (re.compile(r"(^|.*\.)track_machine_class$"), "machine class"),
    (re.compile(r"(^|.*\.)MachineReference\.\w+$"), "reference"),
)
# asv's benchmark type by method-name prefix (where benchmarks.json gives none) -> family
PREFIX_TYPES = {"time_": "time", "peakmem_": "peakmemory", "mem_": "memory", "track_": "track"}
TYPE_FAMILIES = {"time": "timing", "peakmemory": "memory", "memory": "memory"}
COST_UNIT = "instructions"  # the unit of the instruction-count tracks (benchmarks/bench_cost.py)
TIME_UNIT_PREFIX = "ns/"  # tracks of a time per unit of work (PathThroughput's ns/pixel-step)


@dataclass(frozen=True)
class Point:
    commit: str
    value: float | None  # None: failed; nan: skipped
    samples: tuple[float, ...] | None = None

    @property
    def measured(self) -> bool:
        return self.value is not None and math.isfinite(self.value)


@dataclass(frozen=True)
class Series:
    env: str
    name: str
    params: str  # "" or "(pixels=128, dtype='float64')"
    family: str  # one of FAMILY_ORDER
    unit: str
    case: str | None = None  # golden case id of parity/determinism tracks
    threshold: float = DEFAULT_THRESHOLD
    points: tuple[Point, ...] = ()

    @property
    def label(self) -> str:
        return self.name + self.params


def family_of(name: str, bench: Mapping) -> str:
    """The family of benchmark ``name`` from its name, asv type and unit (see the module docstring)."""
    for pattern, family in NAMED_FAMILIES:
        if pattern.match(name):
            return family
    method = name.rsplit(".", 1)[-1]
    kind = bench.get("type") or next((t for p, t in PREFIX_TYPES.items() if method.startswith(p)), None)
    if kind in TYPE_FAMILIES:
        return TYPE_FAMILIES[kind]
    if str(bench.get("unit", "")) == COST_UNIT:
        return "cost"
    if str(bench.get("unit", "")).startswith(TIME_UNIT_PREFIX):  # a time per unit of work: lower is better
        return "timing"
    return "throughput" if str(bench.get("unit", "")).endswith("/s") else "track"


def case_of(bench: Mapping) -> str | None:
    """The golden case of a per-case track: its pretty name is ``"<label>: <case id>"``."""
    pretty = bench.get("pretty_name") or ""
    return pretty.split(": ", 1)[1] if ": " in pretty else None


def param_values(params: str) -> dict[str, str]:
    """A parameter label's values by name, quotes removed: ``"(axis='threads', case='a01')"`` ->
    ``{"axis": "threads", "case": "a01"}`` (``{}`` for ``""``)."""
    return {name: value.strip("'\"") for name, value in re.findall(r"(\w+)=('[^']*'|\"[^\"]*\"|[^,)]*)", params)}


def threshold_for(name: str, thresholds: Mapping[str, float]) -> float:
    """The largest ``regressions_thresholds`` entry whose regex matches ``name`` (asv's rule)."""
    matching = [float(v) for regex, v in thresholds.items() if re.match(regex, name)]
    return max(matching) if matching else DEFAULT_THRESHOLD


def param_labels(bench: Mapping) -> list[str]:
    """One label per parameter combination, in asv's order (``[""]`` without parameters)."""
    params, names = bench.get("params") or [], bench.get("param_names") or []
    if not params:
        return [""]
    return ["(" + ", ".join(f"{n}={v}" for n, v in zip(names, combo)) + ")" for combo in itertools.product(*params)]


def cell(row: list, columns: list, column: str):
    """A results row's cell of ``column`` (None where the row ends before it)."""
    return row[columns.index(column)] if column in columns and columns.index(column) < len(row) else None


def _row_points(data: Mapping, name: str, row: list, combos: list[str]) -> Iterator[tuple[str, Point]]:
    """(parameter label, point) of one benchmark's row in one asv results file."""
    values = [None] * len(combos) if row[0] is None else row[0]  # None: the whole benchmark failed
    if len(values) != len(combos):
        raise ResultsError(f"results of {data['commit_hash'][:8]}: {name} has {len(values)} values "
                           f"for {len(combos)} parameter combinations")
    samples = cell(row, data["result_columns"], "samples")
    if not isinstance(samples, list) or len(samples) != len(combos):
        samples = [None] * len(combos)
    for params, value, sample in zip(combos, values, samples):
        yield params, Point(commit=data["commit_hash"], value=None if value is None else float(value),
                            samples=tuple(float(s) for s in sample) if isinstance(sample, list) and sample else None)


def _current(row: list, columns: list, bench: Mapping | None) -> bool:
    """Whether a row was measured by the suite's current definition of its benchmark."""
    version = cell(row, columns, "version")
    return bench is not None and (version is None or str(version) == str(bench.get("version")))


def build_series(files: list[dict], benchmarks: Mapping, conf: Mapping) -> list[Series]:
    """One series per (env, benchmark, parameter combination), points in the order of ``files``."""
    heads: dict[tuple, Series] = {}
    points: dict[tuple, list[Point]] = {}
    thresholds = conf.get("regressions_thresholds") or {}
    for data in files:
        for name, row in data["results"].items():
            bench = benchmarks.get(name)
            if not _current(row, data["result_columns"], bench):
                continue  # not in the current suite, or measured by an older definition
            for params, point in _row_points(data, name, row, param_labels(bench)):
                key = (data["env_name"], name, params)
                if key not in heads:
                    heads[key] = Series(env=data["env_name"], name=name, params=params,
                                        family=family_of(name, bench), unit=str(bench.get("unit", "")),
                                        case=case_of(bench) or param_values(params).get("case"),
                                        threshold=threshold_for(name, thresholds))
                points.setdefault(key, []).append(point)
    return [replace(head, points=tuple(points[key])) for key, head in heads.items()]
