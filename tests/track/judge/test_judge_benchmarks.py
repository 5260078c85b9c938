"""detsim.track.judge.benchmarks: what each benchmark says about itself: its family, golden case, parameter
combinations and threshold."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

from detsim.track.judge.thresholds import DEFAULT_THRESHOLD
from detsim.track.judge.family import FAMILY_ORDER
from detsim.track.base.runtime import thread_count
from detsim.track.judge.benchmarks import case_of, family_of, param_labels, threshold_for

ROOT = Path(__file__).resolve().parents[3]


PREFIX_TYPES = {"time_": ("time", "seconds"), "peakmem_": ("peakmemory", "bytes"), "mem_": ("memory", "bytes"),
                "track_": ("track", "unit")}  # asv's type and default unit by method prefix


def _family_before(name: str, bench: dict) -> str:
    """``family_of`` as it was when it named the suite's modules (the classification to keep)."""
    kind, unit = bench.get("type"), str(bench.get("unit", ""))
    if name.startswith("bench_parity."):
        return "parity"
    if name.startswith("bench_reproducibility."):
        return "reproducibility"
    if name.startswith("bench_determinism."):
        method = name.rsplit(".", 1)[-1]
        if method.startswith("track_fingerprint"):  # image fingerprints, compared commit to commit
            return "fingerprint"
        if method == "track_machine_class":
            return "machine class"
        return "determinism" if case_of(bench) else "hash count"
    if ".MachineReference." in name:
        return "reference"
    if kind == "time":
        return "timing"
    if kind in ("peakmemory", "memory"):
        return "memory"
    if unit == "instructions":  # the instruction-count tracks, their own family since they exist
        return "cost"
    if name.startswith("bench_device_cost."):  # device costs counted on the CPU: cost since they exist
        return "cost"
    return "throughput" if unit.endswith("/s") else "track"


def _describe(name: str, fn, owner=None) -> tuple[str, dict]:
    kind, default_unit = next(v for p, v in PREFIX_TYPES.items() if fn.__name__.startswith(p))
    bench = {"type": kind, "unit": getattr(fn, "unit", getattr(owner, "unit", default_unit))}
    if getattr(fn, "pretty_name", None):
        bench["pretty_name"] = fn.pretty_name
    return name, bench


def suite_benchmarks(monkeypatch) -> dict[str, dict]:
    """Every benchmark ``benchmarks/bench_*.py`` defines, as asv describes it in benchmarks.json."""
    monkeypatch.syspath_prepend(str(ROOT))
    found = {}
    with thread_count(1):  # importing the suite pins torch's threads
        modules = [importlib.import_module(f"benchmarks.{p.stem}") for p in sorted((ROOT / "benchmarks").glob("bench_*.py"))]
    for module in modules:
        short = module.__name__.split(".")[-1]
        for attr, value in vars(module).items():
            if attr.startswith(tuple(PREFIX_TYPES)) and callable(value):
                found.update([_describe(f"{short}.{attr}", value)])
            elif inspect.isclass(value) and value.__module__ == module.__name__:
                for method in dir(value):
                    if method.startswith(tuple(PREFIX_TYPES)):
                        found.update([_describe(f"{short}.{attr}.{method}", getattr(value, method), value)])
    return found


def test_every_benchmark_of_the_suite_keeps_its_family(monkeypatch):
    benchmarks = suite_benchmarks(monkeypatch)
    families = {name: family_of(name, bench) for name, bench in benchmarks.items()}
    before = {name: _family_before(name, bench) for name, bench in benchmarks.items()}
    before["bench_engine.PathThroughput.track_ns_per_pixel_step"] = "timing"  # was pixel-steps/s: now time per unit
    assert families == before
    # every family but the plain track, throughput (the suite records times per unit of work instead) and the
    # machine reference (recorded by older commits only: the verdict never used it as evidence)
    assert set(families.values()) == set(FAMILY_ORDER) - {"track", "throughput", "reference"}
    assert families["bench_determinism.CompiledHashes.track_cases_changed"] == "hash count"
    assert families["bench_determinism.CompiledHashes.track_fingerprint"] == "fingerprint"
    assert families["bench_determinism.track_fingerprint_a01_cubic_mosflm_center"] == "fingerprint"
    assert families["bench_determinism.track_machine_class"] == "machine class"
    assert families["bench_engine.PathThroughput.track_ns_per_pixel_step"] == "timing"


def test_families_follow_name_prefix_and_unit_without_module_names():
    assert family_of("other.Cls.time_x", {"type": "time", "unit": "seconds"}) == "timing"
    assert family_of("other.peakmem_x", {}) == "memory"  # the prefix stands in for a missing type
    assert family_of("other.track_rate", {"type": "track", "unit": "frames/s"}) == "throughput"
    assert family_of("other.track_count", {"type": "track", "unit": "cases"}) == "track"
    assert family_of("other.track_cost", {"type": "track", "unit": "ns/pixel-step"}) == "timing"
    assert family_of("other.track_parity_a01", {"type": "track", "unit": "1 - r"}) == "parity"
    # a track in a unit of memory is a peak memory (a target's command's own, reported by the suite for targets)
    assert family_of("bench_target.Case.track_peak_memory", {"type": "track", "unit": "MB"}) == "memory"
    assert family_of("other.track_rss", {"type": "track", "unit": "bytes"}) == "memory"


def test_case_and_threshold_come_from_the_benchmark_and_the_config():
    assert case_of({"pretty_name": "parity 1 - r: o01_polar_0.9"}) == "o01_polar_0.9"
    assert case_of({"pretty_name": "bench_engine.Throughput.track_x"}) is None
    thresholds = {r"bench_engine\.": 0.25, r"bench_engine\.EngineSweep\.": 0.5}
    assert threshold_for("bench_engine.EngineSweep.time_simulate", thresholds) == 0.5  # the largest match
    assert threshold_for("bench_cli.DetsimCommand.time_detsim_command", thresholds) == DEFAULT_THRESHOLD


def test_parameter_labels_are_in_asvs_order():
    bench = {"params": [[128, 256], ["'float64'"]], "param_names": ["pixels", "dtype"]}
    assert param_labels(bench) == ["(pixels=128, dtype='float64')", "(pixels=256, dtype='float64')"]
    assert param_labels({}) == [""]


def test_parameter_labels_read_back_into_values_and_a_case_parameter_names_the_golden_case():
    from detsim.track.judge.benchmarks import param_values

    assert param_values("(axis='threads', case='o01_polar_0.9')") == {"axis": "threads", "case": "o01_polar_0.9"}
    assert param_values("(pixels=128, dtype='float64')") == {"pixels": "128", "dtype": "float64"}
    assert param_values("") == {}
