"""Reproducibility: the same input gives the same bits, run after run, along the axes two runs are varied.

What each axis can and cannot see: docs/determinism.md.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Axis:
    name: str
    runs: str  # the two runs, in words
    mode: str  # the execution path rendered: "eager" or "compiled"
    threads: tuple[int, int]  # torch threads of run A and run B
    hash_seeds: tuple[str, str]  # PYTHONHASHSEED of run A and run B (each run is a fresh process)


AXES = {axis.name: axis for axis in (
    Axis("process", "a render in a second fresh process against the first", "eager", (1, 1), ("0", "1")),
    Axis("threads", "a render with 2 torch threads against 1", "eager", (1, 2), ("0", "0")),
    Axis("compiled", "the compiled path's render in a second fresh process against the first", "compiled",
         (1, 1), ("0", "1")),
)}
EAGER_AXES = tuple(name for name, axis in AXES.items() if axis.mode == "eager")

# the golden cases checked per commit: a plain crystal, random mosaic domains (-mosaic_seed streams), a
# noise image (-seed: the Poisson stream), a combination of absorption, mosaic and phi steps
CASES = ("a01_cubic_mosflm_center", "k01_mosaic_10dom", "s01_noise_intfile_scale", "z02_combo_xds_abs_mosaic_phi")
COMPILED_CASES = ("a01_cubic_mosflm_center",)  # the compiled path compiles per process: one case only
