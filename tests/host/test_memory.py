"""Chunk and block sizes from the available memory."""

from __future__ import annotations

import pytest
import torch

from _tolerances import ALLCLOSE
from detsim.host import memory
from detsim.model.config import BeamConfig, CrystalConfig, DetectorConfig, SamplingConfig, SimulationConfig
from detsim.rendering.engine import prepare, render

CPU = torch.device("cpu")
MiB = 1 << 20


def test_the_available_memory_of_this_machine_is_known():
    assert 0 < memory.available_bytes(CPU) < 1 << 50


def test_a_given_chunk_size_is_kept():
    sizes = memory.plan(device=CPU, itemsize=8, fused=False, layers=1, subpixels=1, sources=1,
                        lanes_per_pixel=1, chunk_pixels=7, available=1 * MiB)
    assert sizes.chunk_pixels == 7


def test_plenty_of_memory_gives_cache_sized_blocks_of_whole_pixels():
    sizes = memory.plan(device=CPU, itemsize=8, fused=False, layers=1, subpixels=4, sources=1,
                        lanes_per_pixel=50, available=16 << 30)
    assert sizes.block_lanes == memory.CPU_BLOCK_LANES
    assert sizes.chunk_pixels == memory.CPU_BLOCK_LANES // 50


def test_little_memory_bounds_the_chunk():
    # 8 sensor layers x 64 subpixels: one pixel's terms take ~130 kB, so 64 MiB leaves room for ~90
    available = 64 * MiB
    args = dict(device=CPU, itemsize=8, fused=False, layers=8, subpixels=64, sources=1, lanes_per_pixel=1)
    sizes = memory.plan(**args, available=available)
    per_pixel = memory.bytes_per_pixel(8, 64, 1, 8)
    block = 3 * 8 * memory.BLOCK_TEMPORARIES * sizes.block_lanes
    assert 1 <= sizes.chunk_pixels < memory.CPU_BLOCK_LANES
    assert sizes.chunk_pixels * per_pixel + block <= memory.WORKING_FRACTION * available
    assert memory.plan(**args, available=4 * available).chunk_pixels > sizes.chunk_pixels
    assert memory.plan(**args, available=int(available * 1.02)).chunk_pixels == sizes.chunk_pixels


def test_gpu_blocks_grow_with_memory_but_stay_capped():
    cuda = torch.device("cuda")
    args = dict(device=cuda, itemsize=4, fused=False, layers=1, subpixels=1, sources=1, lanes_per_pixel=1)
    small = memory.plan(**args, available=256 * MiB)
    large = memory.plan(**args, available=80 << 30)
    assert memory.CPU_BLOCK_LANES <= small.block_lanes < large.block_lanes <= memory.GPU_MAX_BLOCK_LANES
    assert large.chunk_pixels == memory.GPU_MAX_CHUNK_PIXELS


def test_an_image_rendered_in_little_memory_is_the_same(monkeypatch):
    config = SimulationConfig(
        crystal=CrystalConfig(cell=(30, 32, 34, 90, 90, 90), default_F=50, Na=3, Nb=3, Nc=3),
        beam=BeamConfig(),
        detector=DetectorConfig(fpixels=64, spixels=64, pixel_mm=0.5, distance_mm=40, thick_um=200, thicksteps=2),
        sampling=SamplingConfig(oversample=3),
    )
    setup = prepare(config)
    roomy, roomy_info = render(setup)
    # room for the block and ~300 pixels' terms: the 4096 pixels then take about 14 chunks
    block = 3 * 8 * memory.BLOCK_TEMPORARIES * memory.CPU_BLOCK_LANES
    available = int((block + 300 * memory.bytes_per_pixel(2, 9, 1, 8)) / memory.WORKING_FRACTION)
    monkeypatch.setattr(memory, "available_bytes", lambda device: available)
    tight, tight_info = render(setup)
    assert roomy_info.chunk_pixels >= 64 * 64 and tight_info.chunk_pixels == 256  # 300 rounded down to 2**k
    torch.testing.assert_close(tight, roomy, rtol=ALLCLOSE[torch.float64][0], atol=0)


@pytest.mark.parametrize("chunk", [0, -5])
def test_a_chunk_size_below_one_pixel_is_refused(chunk):
    # a negative chunk used to render nothing (an all-zero image, exit 0); 0 a range() traceback
    with pytest.raises(ValueError, match=f"chunk_pixels must be >= 1, got {chunk}"):
        memory.plan(device=CPU, itemsize=8, fused=False, layers=1, subpixels=1, sources=1,
                    lanes_per_pixel=1, chunk_pixels=chunk, available=1 * MiB)


def test_simulate_refuses_a_negative_chunk_size():
    from detsim.rendering.engine import simulate
    cfg = SimulationConfig(crystal=CrystalConfig(cell=(70, 70, 70, 90, 90, 90), default_F=100, Na=3, Nb=3, Nc=3),
                           detector=DetectorConfig(fpixels=8, spixels=8))
    with pytest.raises(ValueError, match="chunk_pixels"):
        simulate(cfg, chunk_pixels=-5)


def test_a_chunk_sized_by_memory_leaves_room_for_one_chunk_at_a_time_and_a_small_one_for_many():
    args = dict(device=CPU, itemsize=8, fused=False, layers=8, subpixels=64, sources=1, lanes_per_pixel=1)
    bound = memory.plan(**args, available=64 * MiB)  # the chunk fills the working share
    assert bound.concurrent_jobs == 1
    small = memory.plan(**args, available=64 * MiB, chunk_pixels=2)
    per_chunk = 2 * memory.bytes_per_pixel(8, 64, 1, 8) + 3 * 8 * memory.BLOCK_TEMPORARIES * small.block_lanes
    assert small.concurrent_jobs == int(memory.WORKING_FRACTION * 64 * MiB) // per_chunk >= 2


def test_a_grouped_job_holds_whole_chunks_up_to_the_job_size_and_within_memory():
    args = dict(device=CPU, itemsize=8, fused=False, layers=1, subpixels=4, sources=1, lanes_per_pixel=50)
    alone = memory.plan(**args, available=64 << 30)
    grouped = memory.plan(**args, available=64 << 30, grouped=True)
    assert alone.chunks_per_job == 1 and grouped.chunk_pixels == alone.chunk_pixels == memory.CPU_BLOCK_LANES // 50
    assert grouped.chunks_per_job == memory.JOB_PIXELS // grouped.chunk_pixels > 1
    per_pixel = memory.bytes_per_pixel(1, 4, 1, 8)
    block = 3 * 8 * memory.BLOCK_TEMPORARIES * memory.CPU_BLOCK_LANES
    tight = memory.plan(**args, available=int((block + 1500 * per_pixel) / memory.WORKING_FRACTION), grouped=True)
    assert tight.chunks_per_job * tight.chunk_pixels <= 1500 and tight.concurrent_jobs == 1
