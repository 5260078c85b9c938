"""The machine's facts, as the probe job gives them."""

from pathlib import Path

import torch

from detsim.track.gpu.probe import probe_job

ROOT = Path(__file__).resolve().parents[3]


def test_the_probe_names_the_software_and_says_whether_there_is_a_cuda_device():
    data = probe_job({"root": str(ROOT)})
    assert data["environment"]["torch"] == torch.__version__ and data["environment"]["cpu_count"] >= 1
    assert (data["cuda"] is None) == (not torch.cuda.is_available())
