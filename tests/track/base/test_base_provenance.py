"""detsim.track.base.provenance: git state, the environment record and the machine class."""

from __future__ import annotations

import platform
from dataclasses import FrozenInstanceError, replace
from pathlib import Path

import pytest
import torch

from detsim.track.base.provenance import (
    ENV_VARS, MachineClass, cpu_class, cpu_model, environment, git_info, repo_root, thread_count,
)

ROOT = Path(__file__).resolve().parents[3]


def _is_commit(text) -> bool:
    return isinstance(text, str) and len(text) == 40 and all(c in "0123456789abcdef" for c in text)


def test_repo_root_and_git_info_inside_and_outside_a_work_tree(tmp_path):
    assert repo_root(ROOT / "detsim" / "track").resolve() == ROOT.resolve()
    info = git_info(ROOT)
    assert _is_commit(info["commit"]) and isinstance(info["dirty"], bool) and info["branch"]
    assert repo_root(tmp_path) is None
    assert git_info(tmp_path) == {"commit": None, "branch": None, "dirty": None}


def test_cpu_class_is_architecture_vendor_and_isa_level():
    parts = cpu_class().split()
    assert parts[0] == platform.machine() and parts[-1] == torch.backends.cpu.get_cpu_capability()
    assert cpu_model()


def test_machine_class_here_and_its_record_round_trip():
    here = MachineClass.here(threads=3, dtype="float32", device="cuda")
    assert here == MachineClass(cpu_class(), torch.__version__, 3, "float32", "cuda")
    assert MachineClass.here().threads == torch.get_num_threads()
    record = here.as_record()
    assert set(record) == {"cpu_class", "torch", "threads", "dtype", "device"}
    assert MachineClass.from_record({**record, "unrelated": 1}) == here
    assert MachineClass.from_record({k: v for k, v in record.items() if k != "threads"}) is None
    with pytest.raises(FrozenInstanceError):
        here.threads = 1


def test_differences_name_each_differing_field_with_both_values():
    base = MachineClass("x86_64 GenuineIntel AVX2", "2.13.0", 1, "float64", "cpu")
    assert base.differences(base) == {}
    other = replace(base, threads=2, cpu_class="x86_64 AuthenticAMD AVX512")
    assert base.differences(other) == {"threads": (1, 2), "cpu_class": ("x86_64 GenuineIntel AVX2",
                                                                      "x86_64 AuthenticAMD AVX512")}
    assert other.differences(base)["threads"] == (2, 1)
    assert base.describe() == "cpu_class=x86_64 GenuineIntel AVX2, device=cpu, dtype=float64, threads=1, torch=2.13.0"


def test_environment_records_code_libraries_hardware_and_listed_variables(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("DETSIM_NOT_LISTED", "x")
    env = environment(ROOT)
    assert _is_commit(env["commit"]) and env["torch"] == torch.__version__ and env["cpu_class"] == cpu_class()
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
