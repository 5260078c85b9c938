"""What runs inside a side's fresh interpreter (:func:`.sides.run_side_job`), on the side's own core.

Jobs (``job["job"]``), each writing ``job["out"]``: ``image`` (the float64 CPU eager image of ``workload``, a
``P1@64``-style workload or a golden case id, as .npy), ``ops`` (its aten ops per call site, :mod:`.profile`,
as JSON) and ``trace`` (the ``TRACE_PY:`` lines of ``pixel`` (slow, fast)).
"""

from __future__ import annotations

import json
from pathlib import Path

JOBS = ("image", "ops", "trace")


def config_of(workload: str, golden: Path | None):
    """The configuration of a reduced reference workload (``P1@64``) or of a golden case id."""
    from detsim.commandline.to_config import config_from_argv
    from detsim.track.base.workloads import reduced

    reference = reduced(workload)
    if reference is not None:
        return reference.config(config_from_argv)
    from detsim.track.base.golden import find_case

    return find_case(workload, golden).config(config_from_argv)


def render(config):
    import torch

    import detsim

    torch.set_num_threads(1)
    return detsim.simulate(config, device="cpu", dtype=torch.float64)


def run(job: dict) -> dict:
    """Do ``job`` (see the module docstring); the file written."""
    golden = job.get("golden_dir")
    config = config_of(job["workload"], Path(golden) if golden else None)
    out = Path(job["out"])
    if job["job"] == "image":
        import numpy as np

        np.save(out, render(config).detach().cpu().numpy())
    elif job["job"] == "ops":
        from detsim.track.explain.profile import count_ops

        render(config)  # warm-up: lazy imports and caches are not counted
        out.write_text(json.dumps(count_ops(lambda: render(config)), indent=1, sort_keys=True) + "\n")
    elif job["job"] == "trace":
        from detsim.diagnostics.pixel_trace import trace_pixels

        with open(out, "w") as handle:
            trace_pixels(config, [tuple(job["pixel"])], out=handle)
    else:
        raise ValueError(f"no side job {job['job']!r} (one of {', '.join(JOBS)})")
    return {"out": str(out)}
