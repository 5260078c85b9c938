"""detsim.track.base.runtime: the environment record of a result, a block with n torch threads, a device that
is not on this machine named in a few words, and a tensor's own bytes and their sha256.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
import torch

from detsim.track.base.provenance import ENV_VARS, cpu_class
from detsim.track.base.runtime import device_problem, environment, tensor_bytes, tensor_sha256, thread_count


ROOT = Path(__file__).resolve().parents[3]


def test_environment_records_code_libraries_hardware_and_listed_variables(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("DETSIM_NOT_LISTED", "x")
    env = environment(ROOT)
    assert len(env["commit"]) == 40 and env["torch"] == torch.__version__
    assert env["cpu_class"] == cpu_class(torch.backends.cpu.get_cpu_capability())
    assert env["torch_threads"] == torch.get_num_threads() and env["cuda"]["available"] == torch.cuda.is_available()
    assert env["env"]["OMP_NUM_THREADS"] == "3" and set(env["env"]) <= set(ENV_VARS)


def test_thread_count_restores_the_previous_count_even_on_errors():
    before = torch.get_num_threads()
    target = 1 if before != 1 else 2
    with pytest.raises(RuntimeError):
        with thread_count(target):
            assert torch.get_num_threads() == target
            raise RuntimeError
    assert torch.get_num_threads() == before


# ---- devices

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


# ---- tensors

def test_tensor_hash_sees_the_dtype_and_every_bit(device, dtype):
    t = torch.linspace(0, 1, 7, dtype=dtype, device=device)
    assert len(tensor_bytes(t)) == 7 * t.element_size()
    assert tensor_sha256(t) == hashlib.sha256(t.cpu().numpy().tobytes()).hexdigest()
    assert tensor_sha256(t) != tensor_sha256(t.to(torch.float64 if dtype == torch.float32 else torch.float32))
    flipped = t.clone()
    flipped[3] = torch.nextafter(flipped[3], torch.tensor(2.0, dtype=dtype, device=device))
    assert tensor_sha256(flipped) != tensor_sha256(t)


def test_tensor_bytes_of_views_are_those_of_the_values():
    z = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex128)
    assert tensor_bytes(z.conj()) == tensor_bytes(torch.tensor([1 - 2j, 3 + 4j], dtype=torch.complex128))
    m = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    assert tensor_bytes(m.T) == tensor_bytes(m.T.contiguous())
