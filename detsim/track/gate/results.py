"""pytest-benchmark result files (``--benchmark-json``; the committed baseline is one too), as the gate reads them.

Each benchmark's ``extra_info`` holds what ``bench/conftest.py`` records: its role, the machine class, the
Pearson r, the image sha256. The **calibration** benchmark is a fixed torch workload that does not use detsim;
its min time per device (:func:`calibration_times`) is the unit every other benchmark's time is measured in.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from detsim.track.base.provenance import MachineClass

CALIBRATION = "calibration"  # extra_info role of the calibration workload


class GateInputError(Exception):
    """A results file that cannot be read or is not a pytest-benchmark JSON file (one-line message)."""


@dataclass(frozen=True)
class Benchmark:
    """One benchmark of a results file."""

    fullname: str  # "test_bench_simulate.py::test_simulate[p1_small-cpu-float64]"
    name: str  # "test_simulate[p1_small-cpu-float64]"
    min_s: float  # fastest round, seconds
    extra: Mapping = field(default_factory=dict)  # its extra_info
    commit: str = ""  # the file's commit_info.id: the commit it measured ("" where not recorded)

    @property
    def is_calibration(self) -> bool:
        return self.extra.get("role") == CALIBRATION

    @property
    def device(self) -> str:
        return str(self.extra.get("device", "cpu"))

    @property
    def machine_class(self) -> MachineClass | None:
        """The machine class it recorded, or None (files written before benchmarks recorded one)."""
        return MachineClass.from_record(self.extra)


def _reject_constant(token: str):
    raise ValueError(f"{token} is not strict JSON")


def load_results(path: Path) -> dict[str, Benchmark]:
    """The benchmarks of a ``--benchmark-json`` file, by full name; :class:`GateInputError` naming the file when
    it is missing, unreadable, not strict JSON or not shaped like pytest-benchmark output."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_reject_constant)
    except OSError as exc:
        raise GateInputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise GateInputError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        raise GateInputError(f"{path}: not a pytest-benchmark JSON file (no 'benchmarks' list)")
    results: dict[str, Benchmark] = {}
    info = data.get("commit_info")
    commit = info.get("id") if isinstance(info, dict) and isinstance(info.get("id"), str) else ""
    for index, entry in enumerate(data["benchmarks"]):
        bench = parse_benchmark(entry, commit)
        if bench is None:
            raise GateInputError(f"{path}: benchmarks[{index}] lacks a name, a positive stats.min or extra_info")
        r = bench.extra.get("pearson_r")
        if _is_real(r) and not -1.0 <= r <= 1.0:
            raise GateInputError(f"{path}: benchmarks[{index}] ({bench.fullname}): extra_info.pearson_r = {r!r} "
                                 "is impossible (a correlation lies in [-1, 1])")
        if bench.fullname in results:
            raise GateInputError(f"{path}: benchmark {bench.fullname} appears twice")
        results[bench.fullname] = bench
    return results


def parse_benchmark(entry, commit: str = "") -> Benchmark | None:
    """One entry of the file's ``benchmarks`` list, or None when it lacks what the gate needs."""
    if not isinstance(entry, dict):
        return None
    fullname, stats, extra = entry.get("fullname"), entry.get("stats"), entry.get("extra_info", {})
    minimum = stats.get("min") if isinstance(stats, dict) else None
    if not isinstance(fullname, str) or not isinstance(extra, dict) or not _positive(minimum):
        return None
    return Benchmark(fullname=fullname, name=str(entry.get("name", fullname)), min_s=float(minimum), extra=extra,
                     commit=commit)


def _is_real(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_number(value) -> bool:
    """A finite int or float (not a bool)."""
    return _is_real(value) and math.isfinite(value)


def _positive(value) -> bool:
    return is_number(value) and value > 0


def calibration_times(results: Mapping[str, Benchmark]) -> dict[str, float]:
    """Min time of the calibration workload per device (the smallest if a device has several), seconds."""
    times: dict[str, float] = {}
    for bench in results.values():
        if bench.is_calibration:
            times[bench.device] = min(bench.min_s, times.get(bench.device, math.inf))
    return times
