"""The device costs' units: distinct, each judged in the cost family, none read as a memory or a time."""

from __future__ import annotations

from detsim.track.base import device_costs
from detsim.track.base.workloads import reduced
from detsim.track.judge.benchmarks import family_of


def test_every_device_cost_unit_is_a_cost_and_only_one_thing():
    units = device_costs.DEVICE_COST_UNITS
    assert len(set(units)) == len(units) and set(device_costs.COUNT_UNITS) <= set(units)
    assert list(device_costs.KERNEL_FIELDS) == list(device_costs.KERNEL_UNITS)
    for unit in units:
        assert family_of("bench_x.Y.track_z", {"type": "track", "unit": unit}) == "cost", unit


def test_the_counted_workload_is_a_reduced_reference_one():
    workload = reduced(device_costs.LAUNCH_WORKLOAD)
    assert workload is not None and workload.steps == 200 and workload.pixels == 16
