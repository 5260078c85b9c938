"""detsim.track.runtime.process: the environment record of a result, and a block with n torch threads."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from detsim.track.base.provenance import ENV_VARS, cpu_class
from detsim.track.runtime.process import environment, thread_count

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
