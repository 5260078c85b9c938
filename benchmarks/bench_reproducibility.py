"""Reproducibility per commit: does the same input give the same bits, run after run?

``track_runs_differ`` per axis and checked golden case (``detsim/track/base/golden.py``: the axes
and ``CASES``): 0 when the two runs of the axis gave the same sha256, 1 when they did not. What is hashed is
the case's float64 image and, for a case that writes a noise image from a fixed ``-seed``, that file too.

* ``process``: this asv process's render against a fresh interpreter's (another ``PYTHONHASHSEED``,
  another allocation history), both with one torch thread;
* ``threads``: the fresh interpreter's render with 2 torch threads against its render with 1;
* ``compiled``: the compiled path's render in asv's ``setup_cache`` process against a fresh interpreter's (each
  compiles; ``common.compiled_golden_runs``, shared with ``bench_determinism.CompiledHashes``).

``detsim-track`` reports a 1 as ``NONDETERMINISTIC`` (never as a changed image) at the first commit of the
run of 1s; the image-hash tracks of such a commit are not judged as changes. asv's Regressions tab flags the
0 -> 1 step too. Nothing here writes a file outside a scratch folder.
"""

from __future__ import annotations

from .common import compiled_golden_runs, golden, reproducibility_runs, runs_differ

UNIT = "runs differ (0/1)"
VERSION = "1"


class Reproducibility:
    """The eager float64 images, along the process and threads axes."""

    params = ([name for name, axis in golden.AXES.items() if axis.mode == "eager"],
              list(golden.CHECKED_CASES))
    param_names = ["axis", "case"]
    unit, version, timeout = UNIT, VERSION, 600
    pretty_name = "runs of one input differ (eager)"

    def setup_cache(self):
        return reproducibility_runs()

    def track_runs_differ(self, runs, axis, case):
        return runs_differ(runs, axis, case)


class CompiledReproducibility:
    """The compiled path's images, rendered in two processes."""

    params = (["compiled"], list(golden.CHECKED_COMPILED_CASES))
    param_names = ["axis", "case"]
    unit, version, timeout = UNIT, VERSION, 900
    pretty_name = "runs of one input differ (compiled)"
    setup_cache = staticmethod(compiled_golden_runs)  # one setup_cache with CompiledHashes: asv runs it once

    def track_runs_differ(self, hashes, axis, case):
        return runs_differ(hashes["reproducibility"], axis, case)
