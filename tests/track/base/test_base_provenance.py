"""detsim.track.base.provenance: git state, the CPU and the machine class."""

from __future__ import annotations

import platform
from dataclasses import FrozenInstanceError, replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from detsim.track.base.provenance import MachineClass, cpu_class, cpu_model, git_info, repo_root

ROOT = Path(__file__).resolve().parents[3]


def _is_commit(text) -> bool:
    return isinstance(text, str) and len(text) == 40 and all(c in "0123456789abcdef" for c in text)


def test_repo_root_and_git_info_inside_and_outside_a_work_tree(tmp_path):
    assert repo_root(ROOT / "detsim" / "track").resolve() == ROOT.resolve()
    info = git_info(ROOT)
    assert _is_commit(info["commit"]) and isinstance(info["dirty"], bool) and info["branch"]
    assert repo_root(tmp_path) is None
    assert git_info(tmp_path) == {"commit": None, "branch": None, "dirty": None}


def test_cpu_class_is_architecture_vendor_and_the_given_isa_level():
    parts = cpu_class("AVX2").split()
    assert parts[0] == platform.machine() and parts[-1] == "AVX2"
    assert cpu_class("") == " ".join(parts[:-1])  # no empty part
    assert cpu_model()


def test_machine_class_here_is_what_the_given_torch_reports():
    here = MachineClass.here(torch, threads=3, dtype="float32", device="cuda")
    assert here == MachineClass(cpu_class(torch.backends.cpu.get_cpu_capability()), torch.__version__, 3, "float32",
                                "cuda")
    assert MachineClass.here(torch).threads == torch.get_num_threads()
    reported = SimpleNamespace(__version__="9.9", get_num_threads=lambda: 5,
                               backends=SimpleNamespace(cpu=SimpleNamespace(get_cpu_capability=lambda: "SVE256")))
    assert MachineClass.here(reported) == MachineClass(cpu_class("SVE256"), "9.9", 5, "float64", "cpu")


def test_a_machine_class_record_round_trips():
    here = MachineClass.here(torch, threads=3, dtype="float32", device="cuda")
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
