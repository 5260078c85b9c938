"""Run the planted Triton scenarios under the interpreter and print their divergence reports as JSON.

Run in its own process (``python tests/data/triton_scenarios.py``): ``TRITON_INTERPRET=1`` must be set
before any ``@triton.jit`` module is imported, and must not leak into the rest of the test session.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))

import planted_triton  # noqa: E402

from detsim.track.compare.firstdiff import find_divergence  # noqa: E402


def detsim_triton_mode():
    """detsim's own Triton path on a tiny detector (skipped when the engine has no such mode)."""
    import torch

    import detsim
    from detsim.commandline.to_config import config_from_argv
    from detsim.rendering.engine import MODES

    if "triton" not in MODES:
        return None
    config = config_from_argv("-cell 30 32 34 90 90 90 -default_F 50 -N 3 -misset 10 20 30 "
                              "-detpixels 6 -pixel 4 -distance 40 -oversample 1".split())
    # each run prepares afresh: a setup reused from the first run's cache would take another path of ops
    return find_divergence(lambda: detsim.render(detsim.prepare(config, dtype=torch.float32, reuse=False),
                                                 mode="triton")[0], label="detsim-triton")


def main() -> None:
    reports = {name: find_divergence(getattr(planted_triton, name)).to_dict()
               for name in ("stale_read", "retuned_sum", "steady", "padded_output", "unmasked_total")}
    engine = detsim_triton_mode()
    reports["detsim_triton"] = engine.to_dict() if engine is not None else None
    print(json.dumps(reports, default=str))


if __name__ == "__main__":
    main()
