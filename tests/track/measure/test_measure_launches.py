"""The device operations of a region, counted on the CPU: the one rule of what launches a kernel, copies,
syncs, Triton launches under the interpreter and compiled graph calls."""

from __future__ import annotations

import os

import pytest
import torch

from detsim.track.measure.launches import count_render, counting, launches_a_kernel


def test_views_and_allocations_launch_nothing_and_arithmetic_does():
    x = torch.arange(12.0)
    with counting() as counts:
        y = x.view(3, 4).t()[1:].unsqueeze(0).expand(2, 3, 3).detach()  # views: no data moved
        torch.empty(5)
        z = (y * 2).sum()  # two kernels
    assert counts.kernels == 2 and counts.by_op == {"aten::mul": 1, "aten::sum": 1}
    assert not launches_a_kernel(torch.ops.aten.view.default) and launches_a_kernel(torch.ops.aten.add_.Tensor)
    with counting() as counts:
        float(z), bool(z > 0)  # two reads back to the host, one comparison kernel
    assert (counts.syncs, counts.kernels) == (2, 1)


def test_copies_between_devices_are_counted_apart_and_ops_can_be_limited_to_one_device():
    x = torch.ones(4)
    with counting() as counts:
        x.to("meta")
        x.clone()  # a copy within one device is a kernel
    assert (counts.copies, counts.kernels) == (1, 1)
    with counting("meta") as counts:
        m = x.to("meta")
        m + 1
        x + 1  # on the CPU only: not counted
    assert (counts.copies, counts.kernels) == (1, 1)


def test_a_render_counts_the_same_every_time_under_the_units_the_suite_tracks():
    from detsim.commandline.to_config import config_from_argv
    from detsim.rendering.engine import prepare, render
    from detsim.track.base.device_costs import LAUNCH_UNITS
    from detsim.track.base.workloads import reduced

    config = reduced("P2@8").config(config_from_argv)
    first, second = (count_render(prepare, render, config, "eager", torch.float32) for _ in range(2))
    assert first == second and set(LAUNCH_UNITS) <= set(first)
    assert first["launches"] == first["kernels"] == sum(first["by_op"].values()) > 50


def test_a_triton_kernel_under_the_interpreter_is_one_launch_and_its_staging_is_not_counted(monkeypatch):
    triton = pytest.importorskip("triton")
    import triton.language as tl

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    if not triton.knobs.runtime.interpret:
        pytest.skip("this Triton reads TRITON_INTERPRET only at import")

    @triton.jit
    def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    x = torch.arange(10.0)
    out = torch.empty_like(x)
    with counting() as counts:
        double[(3,)](x, out, 10, BLOCK=4)
        double[(1,)](x, out, 10, BLOCK=16)
    assert (counts.triton_launches, counts.kernels, counts.launches) == (2, 0, 2)
    assert torch.equal(out, x * 2)
    assert os.environ["TRITON_INTERPRET"] == "1"


def _counts_run_and_skipped(*paths: str) -> dict:
    """path -> {"True": counts with the Triton kernels run, "False": counted only}, from a child process under
    Triton's interpreter (tests/data/launch_counts_skipped.py)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("triton")
    tests = Path(__file__).parents[2]
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join([str(tests.parent), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(tests / "data" / "launch_counts_skipped.py"), *paths],
                          cwd=tests.parent, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_counting_triton_kernels_without_running_them_counts_the_same_on_each_path():
    counts = _counts_run_and_skipped("eager", "triton", "triton per chunk")
    assert set(counts) == {"eager", "triton", "triton per chunk"}
    for path, both in counts.items():
        assert both["True"] == both["False"], path
    assert counts["triton"]["False"]["triton_launches"] == 1  # the fused kernel: counted, not run
    assert counts["triton per chunk"]["False"]["triton_launches"] > 1  # the lane-sum kernel, per block


@pytest.mark.slow
def test_counting_triton_kernels_without_running_them_counts_the_same_on_the_compiled_path():
    both = _counts_run_and_skipped("compiled")["compiled"]  # torch.compile's warm-up: slow on a CPU
    assert both["True"] == both["False"] and both["False"]["compiled_calls"] > 0


def test_a_triton_kernel_counted_only_is_not_run(monkeypatch):
    triton = pytest.importorskip("triton")
    import triton.language as tl

    from detsim.track.measure.launches import triton_bodies_skipped

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    if not triton.knobs.runtime.interpret:
        pytest.skip("this Triton reads TRITON_INTERPRET only at import")

    @triton.jit
    def fill(out_ptr, BLOCK: tl.constexpr):
        tl.store(out_ptr + tl.arange(0, BLOCK), tl.full([BLOCK], 7.0, tl.float32))

    out = torch.zeros(4)
    with triton_bodies_skipped(), counting() as counts:
        fill[(1,)](out, BLOCK=4)
    assert counts.triton_launches == 1 and torch.equal(out, torch.zeros(4))  # counted, not run
    fill[(1,)](out, BLOCK=4)
    assert torch.equal(out, torch.full((4,), 7.0))  # outside the block it runs again
