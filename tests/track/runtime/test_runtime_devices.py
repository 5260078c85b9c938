"""detsim.track.runtime.devices: a device that is not on this machine is named in a few words."""

from __future__ import annotations

import sys

import pytest
import torch

from detsim.track.runtime.devices import device_problem


def test_the_cpu_is_always_there_and_needs_no_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` would raise ImportError
    assert device_problem("cpu") is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
@pytest.mark.parametrize("name", ["cuda", "cuda:0", "cuda:1"])
def test_cuda_without_a_cuda_device_says_so(name):
    assert device_problem(name) == "no CUDA device on this machine"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA here")
def test_a_cuda_index_past_the_devices_is_named():
    found = torch.cuda.device_count()
    assert device_problem("cuda") is None
    assert device_problem(f"cuda:{found}") == f"no CUDA device {found} on this machine ({found} found)"


def test_a_name_torch_does_not_know_is_one_line():
    why = device_problem("gpu0")
    assert why.startswith("not a torch device (") and "\n" not in why


def test_the_meta_device_can_be_used():
    assert device_problem("meta") is None
