"""Render the fused whole-image kernel's scenarios under Triton's interpreter and print, as JSON, how each
compares with the eager path (tests/rendering/test_fused_kernel.py reads it).

Run in its own process (``python tests/data/fused_interpreter.py [GOLDEN_ID...]``: the edge cases and the golden
cases named, every golden case where none is named): ``TRITON_INTERPRET=1`` must be set
before any ``@triton.jit`` module is imported, and must not leak into the rest of the test session (the
compile-only check needs the real kernel object). Each scenario is rendered by ``render(mode="triton")``
in float64 and float32 and by the eager path in both; launches are counted by wrapping the interpreter's
``GridExecutor.__call__`` (Triton's launch hooks do not fire under the interpreter), and every device operation
of the fused render (its parameters packed before) by the suite's counter (detsim.track.measure.launches).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
from triton.runtime import interpreter  # noqa: E402

from detsim.commandline.to_config import config_from_argv  # noqa: E402
from detsim.rendering import fused_image  # noqa: E402
from detsim.rendering.engine import prepare, render  # noqa: E402
from detsim.rendering.setup import restrict_pixels  # noqa: E402
from detsim.track.base.golden import load_cases  # noqa: E402
from detsim.track.measure.launches import counting  # noqa: E402

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SMALL = "-cell 30 32 34 90 90 90 -misset 10 20 30 -lambda 1 -distance 40 -pixel 0.4 -detpixels 12 -oversample 1"

# Edge cases: (name, arguments, pixels: "all", a count of pixels taken in raster order, or a mask (slow, fast)).
EDGES = [
    ("one_orientation", f"-default_F 100 -N 3 {SMALL}", "all"),
    # two programs under the interpreter (1,024 pixels each), the second with 76 pixels
    ("ragged_tiles", f"-default_F 100 -N 3 {SMALL.replace('-detpixels 12', '-detpixels 34')}", 1100),
    ("roi", f"-default_F 100 -N 4 -roi 2 9 3 7 {SMALL}", "all"),
    ("layers_and_sources", f"-default_F 100 -N 4 -detector_thick 300 -detector_abs 250 -detector_thicksteps 3 "
                           f"-dispersion 2 -dispsteps 2 -hdivrange 0.5 -hdivsteps 2 {SMALL}", "all"),
    ("oversample_mosaic_phi", f"-default_F 100 -N 4 -mosaic 0.4 -mosaic_dom 2 -phi 1 -osc 0.4 -phisteps 2 "
                              f"{SMALL.replace('-oversample 1', '-oversample 2')}", "all"),
    # -dmin spares all, some or none of a pixel's six sources (its polarization is the first one spared's)
    ("dmin", f"-default_F 100 -N 4 -dmin 20 -dispersion 30 -dispsteps 3 -hdivrange 2 -hdivsteps 2 -polar 0.7 "
             f"{SMALL}", "all"),
    ("n1_axes", f"-default_F 100 -Na 1 -Nb 5 -Nc 1 {SMALL}", "all"),
    ("large_n", f"-default_F 100 -N 150 {SMALL}", "all"),
    ("kahn_water_point_pixel", f"-default_F 100 -N 4 -polar 0.8 -water 50 -point_pixel {SMALL}", "all"),
    ("nopolar", f"-default_F 100 -N 4 -nopolar {SMALL}", "all"),
    ("curved", f"-default_F 100 -N 4 -curved_det {SMALL}", "all"),
    ("gauss", f"-default_F 100 -N 4 -gauss_xtal {SMALL}", "all"),
    # stale phi with a zero step first: each nanoBragg thread's first pixel sweeps other orientations (spec §4.7)
    ("thread_first_sweep", f"-default_F 100 -N 4 -phi 0 -osc 0.6 -phisteps 3 -mosaic 1 -mosaic_dom 2 "
                           f"-nanobragg_threads 2 {SMALL}", "all"),
    # the same with -dmin cutting each thread-first pixel's first two sources: its first sweep is at the third,
    # and the threads' first pixels move past pixels whose every source is cut
    ("thread_first_sweep_dmin", f"-default_F 100 -N 4 -phi 0 -osc 0.6 -phisteps 3 -mosaic 1 -mosaic_dom 2 "
                                f"-nanobragg_threads 2 -dmin 20 -dispersion 30 -dispsteps 3 -hdivrange 2 "
                                f"-hdivsteps 2 -polar 0.7 {SMALL}", "all"),
    ("tophat", f"-default_F 100 -N 4 -tophat_spots -fudge 4 {SMALL}", "all"),
]


def _edges_with_files(scratch: Path) -> list[tuple[str, str, object]]:
    """The edge cases that need files: an HKL table over [-1, 1]^3 that the nearest indices (-3 to 3 here)
    run past on every side, and a mask."""
    table = scratch / "edges.hkl"
    table.write_text("".join(f"{h} {k} {l} {10 + h + 2 * k + 3 * l + 20}\n"
                             for h in range(-1, 2) for k in range(-1, 2) for l in range(-1, 2)))
    mask = np.ones((12, 12), dtype=np.float32)
    mask[::3, 1::2] = 0
    wide = SMALL.replace("-cell 30 32 34", "-cell 40 42 44")
    return [
        ("hkl_table_edges", f"-hkl {table} -nointerpolate -default_F 7 -N 3 {wide}", "all"),
        ("hkl_table_dmin", f"-hkl {table} -nointerpolate -N 3 -dmin 25 {wide}", "all"),
        ("mask", f"-default_F 100 -N 4 {SMALL}", mask),
    ]


class Launches:
    """Counts kernel launches under the interpreter."""

    def __init__(self):
        self.count = 0
        original = interpreter.GridExecutor.__call__

        def counted(executor, *args, **kwargs):
            self.count += 1
            return original(executor, *args, **kwargs)

        interpreter.GridExecutor.__call__ = counted


def golden_pixels(spixels: int, fpixels: int) -> list[tuple[int, int]]:
    """A 4 x 4 grid over the detector and a few pixels near its centre: enough to meet spots and background."""
    grid = [(int(s), int(f)) for s in np.linspace(0, spixels - 1, 4) for f in np.linspace(0, fpixels - 1, 4)]
    centre = [(spixels // 2 + ds, fpixels // 2 + df) for ds in (-7, 3) for df in (-5, 0, 6)]
    return sorted(set(grid + centre))


def compare(config, pixels, launches: Launches) -> dict:
    """The fused render against the eager one, in float64 and float32, on ``pixels`` ("all" or a list)."""
    out = {"seconds": {}}
    eager = {}
    for dtype in (torch.float64, torch.float32):
        setup = prepare(config, dtype=dtype)
        if pixels != "all":
            setup = restrict_pixels(setup, pixels)
        eager[dtype], _ = render(setup)
        if fused_image.unfused_reason(setup) is None:
            fused_image.fused_params(setup)  # packed once per setup: not the render's cost
        before, started = launches.count, time.perf_counter()
        with counting() as counts:
            image, info = render(setup, mode="triton")
        out["seconds"][str(dtype)[6:]] = round(time.perf_counter() - started, 3)
        out.setdefault("launches", {})[str(dtype)[6:]] = launches.count - before
        out.setdefault("operations", {})[str(dtype)[6:]] = {
            "triton_launches": counts.triton_launches, "kernels": counts.kernels, "copies": counts.copies,
            "syncs": counts.syncs}
        out["fused"], out["reason"] = info.fused, info.unfused_reason
        out["first_sweep_pixels"] = len(setup.first_sweep.positions) if setup.first_sweep is not None else 0
        out.setdefault("images", {})[str(dtype)[6:]] = image
    reference = eager[torch.float64].double()
    peak = float(reference.abs().max())
    out["peak"] = peak
    scale = peak if peak > 0 else 1.0
    out["rel"] = {name: float((image.double() - reference).abs().max()) / scale
                  for name, image in out.pop("images").items()}
    out["eager_float32_rel"] = float((eager[torch.float32].double() - reference).abs().max()) / scale
    out["pixels"] = int((reference != 0).sum()) if pixels == "all" else len(pixels)
    return out


def main(golden_ids: list[str]) -> None:
    launches = Launches()
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, args, pixels in EDGES + _edges_with_files(Path(scratch)):
            config = config_from_argv(args.split())
            if isinstance(pixels, np.ndarray):
                config = replace(config, detector=replace(config.detector, mask=pixels))
                pixels = "all"
            if isinstance(pixels, int):
                det = config.detector
                pixels = [divmod(i, det.fpixels) for i in range(pixels)]
            results[f"edge:{name}"] = compare(config, pixels, launches)
        for case in load_cases(GOLDEN):
            if golden_ids and case.id not in golden_ids:
                continue
            config = case.config(config_from_argv)
            config = replace(config, sampling=replace(config.sampling, oversample=1))  # small: one subpixel
            det = config.detector
            results[f"golden:{case.id}"] = compare(config, golden_pixels(det.spixels, det.fpixels), launches)
    print(json.dumps(results))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
