"""divergence.finder: find_divergence names planted culprits and their victims exactly, and nothing else."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from detsim.track.divergence.finder import find_divergence

DATA = Path(__file__).resolve().parents[2] / "data"
sys.path.insert(0, str(DATA))
import planted_ops  # noqa: E402
from markers import marked_line  # noqa: E402


def test_unseeded_randomness_is_the_culprit_and_its_consumer_a_victim():
    report = find_divergence(planted_ops.unseeded_noise)
    culprit = report.first
    assert culprit.role == "culprit" and culprit.kind == "op" and culprit.name == "aten.rand.default"
    assert culprit.where.endswith(marked_line(DATA / "planted_ops.py", "unseeded_noise", "culprit"))
    assert culprit.tensor == "out" and culprit.hash_a != culprit.hash_b and len(culprit.hash_a) == 64
    assert "manual_seed" in culprit.fix
    victim = report.victims[0]
    assert victim.name == "aten.mul.Tensor" and victim.tensor == "self"
    assert victim.where.endswith(marked_line(DATA / "planted_ops.py", "unseeded_noise", "victim"))
    assert victim.producer["index"] == culprit.index and victim.producer["role"] == "culprit"
    assert (victim.hash_a, victim.hash_b) == (culprit.hash_a, culprit.hash_b)
    assert report.culprit_count == 1 and report.exit_code() == 1
    assert report.verdict() == "DIVERGED at #1: culprit op aten.rand.default (`out`)"


def test_a_custom_op_with_a_hidden_counter_is_the_culprit():
    report = find_divergence(planted_ops.hidden_counter)
    culprit = report.first
    assert (culprit.role, culprit.name) == ("culprit", "planted.drift.default")
    assert culprit.where.endswith(marked_line(DATA / "planted_ops.py", "hidden_counter", "culprit"))
    assert "custom op" in culprit.reason and "hidden state" in culprit.reason
    first, second = report.victims[:2]
    assert (first.name, first.tensor, first.producer["index"]) == ("aten.sin.default", "self", culprit.index)
    assert first.where.endswith(marked_line(DATA / "planted_ops.py", "hidden_counter", "victim"))
    assert second.name == "aten.sum.default" and second.producer["name"] == "aten.sin.default"
    assert second.root["index"] == culprit.index
    assert report.result_differences and report.culprit_count == 1


def test_a_deterministic_computation_has_no_divergence():
    report = find_divergence(planted_ops.deterministic)
    assert report.first is None and not report.victims and not report.result_differences
    assert report.exit_code() == 0 and report.verdict().startswith("NO DIVERGENCE")
    assert report.results_compared == 2 and report.events_a == report.events_b > 10


def test_thread_dependent_split_is_found_across_thread_counts():
    report = find_divergence(planted_ops.thread_dependent_sum, threads=(1, 2))
    assert report.threads == (1, 2)
    assert report.first.role == "culprit" and report.first.name == "aten.slice.Tensor"
    assert report.first.scalars["end"] == ["32768", "16384"]


def test_each_run_gets_fresh_clones_of_the_tensor_arguments(dtype):
    """An in-place update of an argument must not leak from run A into run B."""
    x = torch.ones(4, dtype=dtype, requires_grad=False)

    def bump(t, *, by):
        t.add_(by)
        return t * 2

    report = find_divergence(bump, x, by=1.0, label="bump")
    assert report.first is None and report.label == "bump" and report.results_compared == 1
    assert torch.equal(x, torch.ones(4, dtype=dtype))  # the caller's tensor is untouched


def test_the_command_module_re_exports_the_api():
    from detsim.track.divergence import cmd_diverge

    assert cmd_diverge.find_divergence is find_divergence
