"""The helpers of bench/conftest.py that the gate relies on: machine class, planted faults, workloads."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from detsim.track.base.hashing import image_sha256
from detsim.track.base.metrics import passes_parity, pearson_r
from detsim.track.base.provenance import MachineClass

BENCH_CONFTEST = Path(__file__).resolve().parents[3] / "bench" / "conftest.py"


@pytest.fixture(scope="module")
def bench():
    """bench/conftest.py as a plain module (its hooks are not registered here)."""
    spec = importlib.util.spec_from_file_location("bench_conftest", BENCH_CONFTEST)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_run_info_records_this_machine_class(bench, device, dtype):
    info = bench.run_info(device, dtype)
    expected = MachineClass.here(torch, threads=torch.get_num_threads(), dtype=str(dtype).removeprefix("torch."),
                                 device=device)
    assert MachineClass.from_record(info) == expected
    assert info["cpu_capability"] == torch.backends.cpu.get_cpu_capability()


def _image(device, dtype) -> torch.Tensor:
    y, x = torch.meshgrid(torch.arange(8.0), torch.arange(9.0), indexing="ij")
    return (torch.sin(x) * torch.cos(y / 3) + 2).to(device=device, dtype=dtype)  # (slow, fast)


def test_no_fault_leaves_the_image_alone(bench, device, dtype):
    image = _image(device, dtype)
    assert bench.apply_fault(image, None) is image


def test_planted_parity_break_shifts_the_fast_axis(bench, device, dtype):
    image = _image(device, dtype)
    broken = bench.apply_fault(image, "parity")
    assert torch.equal(broken[:, 1:], image[:, :-1]) and torch.equal(broken[:, 0], image[:, -1])
    assert not passes_parity(pearson_r(broken.cpu(), image.cpu()))


def test_planted_hash_change_moves_one_pixel_by_one_ulp_and_keeps_parity(bench, device, dtype):
    image = _image(device, dtype)
    changed = bench.apply_fault(image, "hash")
    first = image.view(-1)[0]
    assert changed.view(-1)[0] == torch.nextafter(first, torch.tensor(float("inf"), dtype=dtype, device=device))
    assert torch.equal(changed.view(-1)[1:], image.view(-1)[1:])
    assert image_sha256(changed) != image_sha256(image)
    assert passes_parity(pearson_r(changed.cpu(), image.cpu()))


def test_rounds_hash_every_timed_image_and_the_planted_fault_makes_them_differ(bench, device, dtype):
    calls = iter(range(3))

    def render():
        next(calls)
        return _image(device, dtype)

    same = bench.Rounds(render)
    assert [torch.equal(same(), _image(device, dtype)) for _ in range(3)] == [True] * 3
    assert same.sha256s() == [image_sha256(_image(device, dtype))] * 3
    varying = bench.Rounds(lambda: _image(device, dtype), "nondeterministic")
    for _ in range(3):
        varying()
    assert len(set(varying.sha256s())) == 3 and varying.sha256s()[0] == image_sha256(_image(device, dtype))


@pytest.mark.parametrize("slowdown, fault, expected", [
    (None, None, (1, None)), ("3", None, (3, None)), (None, "parity", (1, "parity")), ("2", "hash", (2, "hash")),
])
def test_planted_faults_come_from_the_environment(bench, monkeypatch, slowdown, fault, expected):
    for name, value in ((bench.SLOWDOWN_VAR, slowdown), (bench.PLANT_VAR, fault)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert bench._planted_from_environment() == bench.Planted(*expected)


@pytest.mark.parametrize("name, value", [("SLOWDOWN_VAR", "0"), ("SLOWDOWN_VAR", "two"), ("PLANT_VAR", "speed")])
def test_bad_planted_faults_are_usage_errors(bench, monkeypatch, name, value):
    monkeypatch.setenv(getattr(bench, name), value)
    with pytest.raises(pytest.UsageError, match=getattr(bench, name)):
        bench._planted_from_environment()


def test_golden_workloads_load_from_any_working_directory(bench, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    workload = bench.load_workload("g01_hkl_nointerp")
    assert workload.case.id == "g01_hkl_nointerp"
    assert workload.reference.shape == workload.case.shape == (256, 256)
    assert (workload.config.detector.spixels, workload.config.detector.fpixels) == (256, 256)
    assert Path.cwd() == tmp_path


def test_cpu_timing_needs_no_sync(bench):
    def fn():
        return 1
    assert bench.synchronized(fn, "cpu") is fn
