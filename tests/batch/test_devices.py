"""``detsim batch --device cuda``: one worker per visible GPU, each started pinned to its GPU, and each CUDA frame
asking a worker for one GPU; planned here with a faked GPU count (no GPU, no cluster started)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from detsim.batch import cluster, devices
from detsim.batch.devices import GPU_RESOURCE, PINNING_VARIABLE, GpuWorker, gpu_workers
from detsim.batch.frames import BatchFrame, BatchInputError
from detsim.batch.plan import FrameJob
from detsim.entry import main

LINE = "-detpixels 16 -nonoise -nopgm"


def test_each_visible_gpu_gets_one_worker_pinned_to_it():
    assert gpu_workers(3, None) == (GpuWorker("gpu0", "0", {PINNING_VARIABLE: "0"}),
                                    GpuWorker("gpu1", "1", {PINNING_VARIABLE: "1"}),
                                    GpuWorker("gpu2", "2", {PINNING_VARIABLE: "2"}))
    # this process sees GPUs 4 and 6 of the machine: its workers are pinned to those, not to 0 and 1
    assert [(g.name, g.env[PINNING_VARIABLE]) for g in gpu_workers(2, "4,6")] == [("gpu0", "4"), ("gpu1", "6")]
    assert [g.gpu for g in gpu_workers(1, "GPU-8c1f")] == ["GPU-8c1f"]
    assert [g.gpu for g in gpu_workers(2, "3,5", workers=1)] == ["3"]  # --workers N: the first N GPUs


@pytest.mark.parametrize("count, workers, message", [
    (0, None, "--device cuda: no CUDA device is visible here"),
    (2, 3, "--workers 3 with --device cuda: one worker per GPU, and 2 GPUs are visible"),
])
def test_no_gpu_or_more_workers_than_gpus_is_refused(count, workers, message):
    with pytest.raises(BatchInputError, match=message):
        gpu_workers(count, None, workers)


def test_the_embedded_clusters_gpu_workers_are_nanny_processes_with_their_pinning_and_one_gpu_each():
    distributed = pytest.importorskip("distributed")
    template = {"cls": distributed.Worker, "options": {"host": "127.0.0.1", "nthreads": 1, "silence_logs": 50}}
    specs = cluster.gpu_worker_specs(template, gpu_workers(2, "4,6"))
    assert sorted(specs) == ["gpu0", "gpu1"]
    for name, gpu in (("gpu0", "4"), ("gpu1", "6")):
        assert specs[name]["cls"] is distributed.Nanny  # a process of its own: the pinning is its environment
        assert specs[name]["options"] == {"host": "127.0.0.1", "nthreads": 1, "silence_logs": 50,
                                          "env": {PINNING_VARIABLE: gpu}, "resources": {GPU_RESOURCE: 1}}
    frame = BatchFrame("line0001", "l:1", tuple(LINE.split()))
    assert cluster.task_resources(FrameJob(frame, "/o", "/c", "cuda")) == {GPU_RESOURCE: 1}
    assert cluster.task_resources(FrameJob(frame, "/o", "/c", "cpu")) is None
    assert cluster.task_resources(FrameJob(frame, "/o", "/c")) is None


@pytest.fixture
def no_cluster(monkeypatch) -> dict:
    """``detsim batch`` with its cluster replaced: what it would start the cluster with, and the jobs."""
    pytest.importorskip("distributed")
    seen: dict = {}

    @contextlib.contextmanager
    def client_for(workers, scheduler, gpus=(), cuda=False):
        seen.update(workers=workers, scheduler=scheduler, gpus=gpus, cuda=cuda)
        yield None

    monkeypatch.setattr(cluster, "client_for", client_for)
    monkeypatch.setattr(cluster, "render_all", lambda client, jobs, *a: seen.update(jobs=jobs))
    return seen


def test_device_cuda_starts_one_worker_per_gpu_and_renders_every_frame_on_cuda(tmp_path, monkeypatch, no_cluster):
    monkeypatch.chdir(tmp_path)
    Path("lines.txt").write_text(f"{LINE}\n{LINE} -device cpu\n")
    monkeypatch.setattr(devices, "visible_gpus", lambda: 2)
    monkeypatch.setenv(PINNING_VARIABLE, "1,3")
    assert main(["batch", "lines.txt", "--device", "cuda"]) == 0
    assert [g.env for g in no_cluster["gpus"]] == [{PINNING_VARIABLE: "1"}, {PINNING_VARIABLE: "3"}]
    assert no_cluster["cuda"] and [job.device for job in no_cluster["jobs"]] == ["cuda", "cuda"]
    assert main(["batch", "lines.txt", "--out", "cpu"]) == 0  # without --device: each line's own, CPU workers
    assert no_cluster["gpus"] == () and [job.device for job in no_cluster["jobs"]] == [None, None]


def test_device_cuda_without_a_gpu_is_one_line_exit_2(tmp_path, monkeypatch, capsys, no_cluster):
    monkeypatch.chdir(tmp_path)
    Path("lines.txt").write_text(f"{LINE}\n")
    monkeypatch.setattr(devices, "visible_gpus", lambda: 0)
    assert main(["batch", "lines.txt", "--device", "cuda"]) == 2
    assert capsys.readouterr().err.startswith("detsim batch: error: --device cuda: no CUDA device is visible here")
    assert "jobs" not in no_cluster and not (tmp_path / "batch-out").exists()
    assert main(["batch", "lines.txt", "--device", "cuda", "--scheduler", "tcp://127.0.0.1:1"]) == 0
    assert no_cluster["cuda"] and no_cluster["gpus"] == ()  # an existing cluster's workers declare their GPUs


def test_an_existing_cluster_without_gpu_workers_is_refused_rather_than_waited_on():
    class Scheduler:
        def __init__(self, *resources):
            self.workers = {f"tcp://w{i}": {"resources": r} for i, r in enumerate(resources)}

        def scheduler_info(self):
            return {"workers": self.workers}

    with pytest.raises(BatchInputError, match="no worker of tcp://h:8786 offers the resource GPU"):
        cluster._check_gpu_workers(Scheduler({}, {"MEM": 4}), "tcp://h:8786")
    cluster._check_gpu_workers(Scheduler({}, {GPU_RESOURCE: 1}), "tcp://h:8786")  # one GPU worker is enough
