"""Count one render's device operations on each path with the Triton kernels run and counted only, and print
both, as JSON (tests/track/measure/test_measure_launches.py reads it).

Run in its own process: ``TRITON_INTERPRET=1`` must be set before any ``@triton.jit`` module is imported and
must not leak into the rest of the test session. Paths: eager, compiled, triton (the fused whole-image kernel,
a small P2's phi sweep from 0 with its thread-first pixel), and triton per chunk (the lane-sum kernel: a
non-integer cell count, which the fused kernel leaves to it). ``python launch_counts_skipped.py MODE...``: only
those.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

from detsim.commandline.to_config import config_from_argv  # noqa: E402
from detsim.rendering.engine import prepare, render  # noqa: E402
from detsim.track.base.workloads import reduced  # noqa: E402
from detsim.track.measure.launches import count_render  # noqa: E402


def _scenarios(config) -> dict:
    """name -> (mode, configuration)."""
    fractional = replace(config, crystal=replace(config.crystal, Nb=torch.tensor(config.crystal.Nb + 0.5)))
    return {"eager": ("eager", config), "compiled": ("compiled", config), "triton": ("triton", config),
            "triton per chunk": ("triton", fractional)}


def main(names: list[str]) -> None:
    # P2 on 4² pixels with 2 mosaic domains and 2 phi steps (not 10 and 5): its phi sweep from 0 still has a
    # thread-first pixel, and the interpreter runs a twelfth of the loop
    config = replace(reduced("P2@4"), mosaic_domains=2, phi_steps=2).config(config_from_argv)
    out = {}
    for name, (mode, scenario) in _scenarios(config).items():
        if names and name not in names:
            continue
        out[name] = {str(run): count_render(prepare, render, scenario, mode, torch.float32, run_triton=run)
                     for run in (True, False)}
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
