"""One render on a path: timed, hashed, its launches counted."""

import numpy as np
import torch

from detsim.track.base.hashing import image_sha256
from detsim.track.gpu.plan import GpuPath
from detsim.track.gpu.renders import fused, launches, ready, render, workload_config


def test_a_render_is_the_engine_image_with_its_hash():
    config = workload_config("P2@8")
    device = ready("cpu")
    done = render(config, GpuPath("eager", "float32"), device)
    assert done.image.shape == (8, 8) and done.image.dtype == np.float64 and done.seconds > 0
    assert done.sha256 == image_sha256(done.image)
    assert render(config, GpuPath("eager", "float64"), device).sha256 != done.sha256  # the dtype is the path's


def test_only_a_compiled_or_triton_path_uses_the_fused_kernel():
    config = workload_config("P2@8")
    assert fused(config, GpuPath("compiled", "float32"), torch.device("cpu"))
    assert not fused(config, GpuPath("eager", "float32"), torch.device("cpu"))


def test_launches_count_the_aten_calls_and_leave_kernels_to_cuda():
    counts = launches(workload_config("P1@8"), GpuPath("eager", "float32"), torch.device("cpu"))
    assert counts["aten_ops"] > 10 and counts["kernels"] is None and counts["memory_ops"] is None
