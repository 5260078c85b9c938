"""What runs inside a side's fresh interpreter: ``python -P -m detsim.track.explain.worker JOB ...``.

Jobs (each writes one file):

* ``image W OUT.npy``: the float64 CPU eager image of workload ``W`` (``P1@64`` or a golden case id);
* ``ops W OUT.json``: the aten ops of one render of ``W`` (after a warm-up), counted per op and call site
  (:mod:`.opcount`);
* ``trace W S F OUT.log``: the ``TRACE_PY:`` lines of pixel (S, F) of ``W`` (:func:`detsim.trace.trace_pixels`).

``--golden-dir D`` says where golden cases are. The side's own ``detsim`` core does the work; this
module and the workload definitions are the suite's (:mod:`.sides`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def config_of(workload: str, golden: Path | None):
    """The configuration of a reduced reference workload (``P1@64``) or of a golden case id."""
    from detsim.argconfig import config_from_argv
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detsim.track.explain.worker")
    parser.add_argument("job", choices=("image", "ops", "trace"))
    parser.add_argument("workload")
    parser.add_argument("rest", nargs="+")
    parser.add_argument("--golden-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    config = config_of(args.workload, args.golden_dir)
    out = Path(args.rest[-1])
    if args.job == "image":
        import numpy as np

        np.save(out, render(config).detach().cpu().numpy())
    elif args.job == "ops":
        from detsim.track.explain.opcount import count_ops

        render(config)  # warm-up: lazy imports and caches are not counted
        out.write_text(json.dumps(count_ops(lambda: render(config)), indent=1, sort_keys=True) + "\n")
    else:
        from detsim.trace import trace_pixels

        s, f = (int(v) for v in args.rest[:2])
        with open(out, "w") as handle:
            trace_pixels(config, [(s, f)], out=handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
