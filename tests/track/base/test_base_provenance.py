"""detsim.track.base.provenance: git state, the CPU and the machine class."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import FrozenInstanceError, replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from detsim.track.base.fresh import pinned_env, run
from detsim.track.base import provenance
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


def _checkout(path: Path) -> str:
    """``path`` committed as a repository of its own, its stat data then made stale; its commit."""
    git = lambda *args: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=path,
                                       check=True, capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "--allow-empty", "-m", path.name)
    for tracked in git("ls-files").splitlines()[:50]:
        os.utime(path / tracked)  # a `git status` would refresh these and rewrite the index
    return git("rev-parse", "HEAD")


@pytest.mark.slow  # its in-process twin: test_provenance_here_is_the_working_directorys_not_this_packages_checkout
def test_provenance_is_the_working_directorys_checkout_and_takes_no_lock_in_the_packages(tmp_path):
    """A command run from one checkout through another's package records, and touches, the first only."""
    package, here = tmp_path / "package", tmp_path / "here"
    shutil.copytree(ROOT / "detsim", package / "detsim", ignore=shutil.ignore_patterns("__pycache__"))
    (here / "src").mkdir(parents=True)
    (here / "src" / "notes.txt").write_text("the user's work\n")
    package_commit, here_commit = _checkout(package), _checkout(here)
    indexes = {p: (p / ".git" / "index").stat().st_mtime_ns for p in (package, here)}
    code = ("import json; from detsim.track.base.provenance import repo_root; from detsim.track.base.runtime import environment; "
            "print(json.dumps([environment(), str(repo_root())]))")
    done = run([sys.executable, "-P", "-c", code], cwd=here / "src", env=pinned_env(package)).check("python")
    env, root = json.loads(done.stdout.splitlines()[-1])
    assert (env["commit"], env["dirty"], Path(root).resolve()) == (here_commit, False, here.resolve())
    assert env["commit"] != package_commit
    for checkout, stamp in indexes.items():
        assert (checkout / ".git" / "index").stat().st_mtime_ns == stamp, f"{checkout.name}'s index was rewritten"
        assert not (checkout / ".git" / "index.lock").exists()


def test_provenance_here_is_the_working_directorys_not_this_packages_checkout(tmp_path, monkeypatch):
    """The test above in this interpreter, whose package is another checkout's (this one's, ROOT)."""
    from detsim.track.base.runtime import environment

    here = tmp_path / "here"
    (here / "src").mkdir(parents=True)
    (here / "src" / "notes.txt").write_text("the user's work\n")
    here_commit = _checkout(here)
    stamp = (here / ".git" / "index").stat().st_mtime_ns
    monkeypatch.chdir(here / "src")
    assert Path(provenance.__file__).resolve().is_relative_to(ROOT.resolve())
    env, root = environment(), repo_root()
    assert (env["commit"], env["dirty"], root.resolve()) == (here_commit, False, here.resolve())
    assert env["commit"] != git_info(ROOT)["commit"]
    assert (here / ".git" / "index").stat().st_mtime_ns == stamp and not (here / ".git" / "index.lock").exists()


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


def test_vector_flags_are_the_cpus_own_in_the_tables_order(monkeypatch):
    monkeypatch.setattr(provenance, "cpuinfo_field", lambda name: "fpu avx512f sse4_2 avx2 fma ht" if name == "flags"
                        else None)
    assert provenance.vector_flags() == "sse4_2 avx2 fma avx512f"
