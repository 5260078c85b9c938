"""Per-pixel traces: the intermediate quantities of chosen pixels, as ``TRACE_PY: <name> <values...>`` lines.

A trace is computed in float64 on the CPU whatever the run's dtype and device, by the engine itself: the
pixel is rendered alone (:func:`detsim.rendering.engine.restrict_pixels`) with the engine's ``observe`` hook, and
this module only decides which observed values to print, in which order, under which names. The names
form a vocabulary (:data:`VOCABULARY`, documented in ``docs/trace.md``) that any other program can print
with its own prefix (``TRACE_C:`` ...), so that ``detsim-track trace-diff`` can align the two logs.

Convention:
    * Units are SI as nanoBragg computes internally: metres, radians, 1/m for scattering vectors,
      steradians; reciprocal cell vectors in 1/Angstrom (spec §1, §4.4).
    * Printing follows nanoBragg's loop (spec §5.1): per pixel, then layer ``t`` > subpixel
      ``(subS, subF)`` > source > phi step > mosaic domain. Lines inside the loops carry their indices as
      ``key=value`` labels, e.g. ``TRACE_PY: hkl layer=0 subS=0 subF=1 source=0 phi=0 mos=3 1.5 -2.0 7.1``.
    * A value is printed where nanoBragg computes it: the solid angle at the first subpixel, the
      polarization at the first source that survives ``-dmin``, the capture fraction at the first subpixel
      of each layer (each subpixel/source with the matching ``-oversample_*`` flag); nothing after a
      source cut by ``-dmin``; no ``F_cell`` / ``I_term`` for iterations nanoBragg skips (F_latt == 0
      without water).
"""

from __future__ import annotations

import json
import platform
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, TextIO

import numpy as np
import torch

from detsim.fileio.safe_write import atomic_write
from detsim.model.config import ConfigError, CrystalShape, SimulationConfig
from detsim.model.units import R_E_SQ_M2
from detsim.rendering.engine import Setup, prepare, render, restrict_pixels

PREFIX = "TRACE_PY"
JSON_FORMAT = "detsim-trace"
JSON_VERSION = 1


@dataclass(frozen=True)
class Term:
    """One name of the trace vocabulary."""

    name: str
    scope: str  # where it is printed: pixel, source, phi, orientation, subpixel, subpixel-source, iteration, end
    meaning: str
    unit: str


VOCABULARY: tuple[Term, ...] = (
    Term("pixel", "pixel", "slow and fast index of the traced pixel (starts a pixel's block)", "px"),
    Term("rendered", "pixel", "1 if the pixel is inside -roi and not masked, else 0 (then only pixel_value follows)", "-"),
    Term("interpolate", "pixel", "1 if tricubic interpolation of F is on when the pixel starts, else 0", "-"),
    Term("fdet_vector", "pixel", "detector fast axis, after rotations and two-theta", "unit vector"),
    Term("sdet_vector", "pixel", "detector slow axis", "unit vector"),
    Term("odet_vector", "pixel", "detector normal", "unit vector"),
    Term("beam_vector", "pixel", "beam direction (direction of travel)", "unit vector"),
    Term("polar_vector", "pixel", "polarization axis", "unit vector"),
    Term("spindle_vector", "pixel", "phi rotation axis", "unit vector"),
    Term("pix0_vector", "pixel", "lab position of the outer corner of pixel (0, 0)", "m"),
    Term("pixel_size", "pixel", "pixel edge length", "m"),
    Term("close_distance", "pixel", "pix0 . odet, the distance used by the solid angle", "m"),
    Term("distance", "pixel", "close_distance / (beam . odet), used by the curved detector", "m"),
    Term("Fbeam", "pixel", "direct-beam spot along fdet from pix0 (recomputed)", "m"),
    Term("Sbeam", "pixel", "direct-beam spot along sdet from pix0 (recomputed)", "m"),
    Term("Fclose", "pixel", "-pix0 . fdet", "m"),
    Term("Sclose", "pixel", "-pix0 . sdet", "m"),
    Term("a0", "pixel", "real-space axis a at phi = 0, no mosaic, after misset", "m"),
    Term("b0", "pixel", "real-space axis b, as a0", "m"),
    Term("c0", "pixel", "real-space axis c, as a0", "m"),
    Term("a_star", "pixel", "reciprocal axis a* after misset (used by the round/gauss/tophat shapes)", "1/Å"),
    Term("b_star", "pixel", "reciprocal axis b*", "1/Å"),
    Term("c_star", "pixel", "reciprocal axis c*", "1/Å"),
    Term("N", "pixel", "unit cells along a, b, c (Na Nb Nc)", "-"),
    Term("sources", "pixel", "number of sources", "-"),
    Term("phisteps", "pixel", "number of phi steps", "-"),
    Term("mosaic_domains", "pixel", "number of mosaic domains", "-"),
    Term("oversample", "pixel", "subpixels per pixel edge (N_os)", "-"),
    Term("detector_thicksteps", "pixel", "sensor layers", "-"),
    Term("detector_thickstep", "pixel", "depth between sensor layers", "m"),
    Term("detector_mu", "pixel", "sensor attenuation coefficient (printed only with a sensor thickness)", "1/m"),
    Term("steps", "pixel", "normaliser: sources x mosaic domains x phi steps x N_os^2", "-"),
    Term("fluence", "pixel", "incident fluence", "photons/m²"),
    Term("r_e_sqr_fluence", "pixel", "r_e² x fluence (1 with the default fluence)", "-"),
    Term("I_bg", "pixel", "water background: the starting value of the sum I", "F² units"),
    Term("incident", "source", "incident direction of the source (direction of travel)", "unit vector"),
    Term("lambda", "source", "wavelength of the source", "m"),
    Term("phi", "phi", "nominal spindle angle of the phi step, phi0 + i x phistep", "rad"),
    Term("a", "orientation", "real-space axis a actually used at (phi, mos): phi rotation, then mosaic", "m"),
    Term("b", "orientation", "real-space axis b at (phi, mos)", "m"),
    Term("c", "orientation", "real-space axis c at (phi, mos)", "m"),
    Term("pixel_pos", "subpixel", "lab position of the subpixel in its sensor layer", "m"),
    Term("diffracted", "subpixel", "unit vector from the sample to the subpixel", "unit vector"),
    Term("airpath", "subpixel", "sample-to-subpixel distance", "m"),
    Term("omega_pixel", "subpixel", "solid angle, where computed (first subpixel; each with -oversample_omega)", "sr"),
    Term("capture_fraction", "subpixel", "fraction absorbed in the layer, where computed (first subpixel of "
         "each layer with a sensor thickness; each with -oversample_thick)", "-"),
    Term("scattering", "subpixel-source", "scattering vector (diffracted - incident) / lambda", "1/m"),
    Term("polar", "subpixel-source", "polarization factor, where computed (first source surviving -dmin; "
         "each with -oversample_polar; with -nopolar only under -oversample_polar)", "-"),
    Term("hkl", "iteration", "fractional Miller indices h k l = (a, b, c) . scattering", "-"),
    Term("hkl0", "iteration", "nearest integer indices, ceil(h - 0.5)", "-"),
    Term("F_latt_axes_sq", "iteration", "square crystal only: squared grating factor per axis "
         "(1 for an axis with N = 1)", "-"),
    Term("F_latt_sq", "iteration", "squared lattice factor F_latt²", "-"),
    Term("F_cell", "iteration", "structure factor amplitude (absent where nanoBragg skips the iteration)", "electrons"),
    Term("I_term", "iteration", "F_cell² x F_latt² added to I by this iteration", "F² units"),
    Term("I_sum", "end", "the accumulated sum I after all loops (including I_bg)", "F² units"),
    Term("scale", "end", "r_e² x fluence / steps", "-"),
    Term("capture_fraction_used", "end", "capture fraction multiplied in at the end (last layer; 1 with "
         "-oversample_thick)", "-"),
    Term("polar_used", "end", "polarization multiplied in at the end (1 with -oversample_polar)", "-"),
    Term("omega_used", "end", "solid angle multiplied in at the end (1 with -oversample_omega)", "sr"),
    Term("pixel_value", "end", "final pixel value: scale x I_sum x the three *_used factors", "photons"),
)

NAMES = frozenset(term.name for term in VOCABULARY)

Value = float | int


@dataclass(frozen=True)
class Record:
    """One trace line: a vocabulary name, the loop indices where it was printed, and its values."""

    name: str
    values: tuple[Value, ...]
    labels: tuple[tuple[str, int], ...] = ()

    def line(self, prefix: str = PREFIX) -> str:
        """``<prefix>: <name> [key=value ...] <values...>``; floats in shortest round-trip form."""
        parts = [f"{prefix}:", self.name]
        parts += [f"{key}={value}" for key, value in self.labels]
        parts += [_format(v) for v in self.values]
        return " ".join(parts)

    def as_json(self) -> dict:
        return {"name": self.name, "labels": dict(self.labels), "values": [_json_value(v) for v in self.values]}


def _format(value: Value) -> str:
    return str(value) if isinstance(value, int) else repr(float(value))


def _json_value(value: Value):
    """JSON has no NaN or infinity: those are written as the strings "nan", "inf", "-inf"."""
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return value


def _floats(t: torch.Tensor) -> tuple[float, ...]:
    return tuple(float(v) for v in t.reshape(-1).tolist())


def _ints(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(v) for v in t.reshape(-1).tolist())


class _Observations:
    """Everything the engine reported while rendering one pixel (P = 1), assembled per sampling axis."""

    def __init__(self, setup: Setup):
        self.pixel: dict[str, torch.Tensor] = {}  # name -> (1, ...) tensor
        self.block: dict[tuple[str, int, int], torch.Tensor] = {}  # (name, layer, subpixel) -> (S, R, ...)
        self.S, self.R = setup.sources.lambda_m.shape[0], setup.orientations.shape[0]

    def __call__(self, name: str, value: torch.Tensor, **where) -> None:
        value = value.detach().to("cpu", torch.float64 if value.is_floating_point() else value.dtype).clone()
        if "sources" not in where:
            self.pixel[name] = value
            return
        if name == "I_sum":
            self.pixel[name] = value  # running sum after each block: keep the last
            return
        key = (name, where["layer"], where["subpixel"])
        if key not in self.block:
            self.block[key] = torch.zeros((self.S, self.R) + tuple(value.shape[3:]), dtype=value.dtype)
        self.block[key][where["sources"], where["orientations"]] = value[0]

    def iteration(self, name: str, t: int, o: int) -> torch.Tensor | None:
        """(S, R, ...) values of a per-iteration quantity at layer t, subpixel o."""
        return self.block.get((name, t, o))


def _pixel_records(setup: Setup, interpolating: bool) -> list[Record]:
    """Per-pixel quantities that do not depend on the pixel (printed again in every pixel's block)."""
    g, lat, src = setup.geometry, setup.lattice, setup.sources
    frame = setup.frame
    D = setup.mosaic_domains
    recs = [
        Record("interpolate", (int(interpolating),)),
        Record("fdet_vector", _floats(g.fdet)), Record("sdet_vector", _floats(g.sdet)),
        Record("odet_vector", _floats(g.odet)), Record("beam_vector", _floats(frame.beam)),
        Record("polar_vector", _floats(frame.polar)), Record("spindle_vector", _floats(frame.spindle)),
        Record("pix0_vector", _floats(g.pix0_m)), Record("pixel_size", _floats(g.pixel_m)),
        Record("close_distance", _floats(g.close_distance_m)), Record("distance", _floats(g.distance_m)),
        Record("Fbeam", _floats(g.fbeam_m)), Record("Sbeam", _floats(g.sbeam_m)),
        Record("Fclose", _floats(g.fclose_m)), Record("Sclose", _floats(g.sclose_m)),
    ]
    recs += [Record(n, _floats(v)) for n, v in zip(("a0", "b0", "c0"), lat.real_m)]
    recs += [Record(n, _floats(v)) for n, v in zip(("a_star", "b_star", "c_star"), lat.recip_A)]
    recs += [
        Record("N", _floats(lat.N)),
        Record("sources", (src.lambda_m.shape[0],)), Record("phisteps", (setup.phi_steps.count,)),
        Record("mosaic_domains", (D,)), Record("oversample", (setup.oversample,)),
        Record("detector_thicksteps", (setup.thickness.count,)),
        Record("detector_thickstep", (float(setup.thickness.step),)),
    ]
    if setup.thickness.range > 0:
        recs.append(Record("detector_mu", (float(setup.mu_per_m),)))
    recs += [
        Record("steps", (setup.steps,)), Record("fluence", (float(setup.fluence_per_m2),)),
        Record("r_e_sqr_fluence", (R_E_SQ_M2 * float(setup.fluence_per_m2),)),
        Record("I_bg", (float(setup.water_bg),)),
    ]
    for i in range(src.lambda_m.shape[0]):
        recs.append(Record("incident", _floats(src.incident[i]), (("source", i),)))
        recs.append(Record("lambda", _floats(src.lambda_m[i]), (("source", i),)))
    for p, phi in enumerate(setup.phis_rad):
        recs.append(Record("phi", (float(phi),), (("phi", p),)))
    for r in range(setup.orientations.shape[0]):
        where = (("phi", r // D), ("mos", r % D))
        for name, axis in zip("abc", setup.orientations[r]):
            recs.append(Record(name, _floats(axis), where))
    return recs


def _loop_records(setup: Setup, obs: _Observations) -> list[Record]:
    """The nested loops of spec §5.1, printing values where nanoBragg computes them."""
    flags, crystal = setup.config.sampling, setup.config.crystal
    nopolar = setup.config.beam.nopolar
    has_thickness = setup.thickness.range > 0
    water = crystal.water_um != 0
    square = crystal.shape is CrystalShape.SQUARE
    N_os, D = setup.oversample, setup.mosaic_domains
    px = obs.pixel
    T, O = px["pixel_pos"].shape[1:3]
    polar_done = False
    recs: list[Record] = []
    for t in range(T):
        for o in range(O):
            sub = (("layer", t), ("subS", o // N_os), ("subF", o % N_os))
            recs.append(Record("pixel_pos", _floats(px["pixel_pos"][0, t, o]), sub))
            recs.append(Record("diffracted", _floats(px["diffracted"][0, t, o]), sub))
            recs.append(Record("airpath", _floats(px["airpath"][0, t, o]), sub))
            if (t == 0 and o == 0) or flags.oversample_omega:
                recs.append(Record("omega_pixel", _floats(px["solid_angle"][0, t, o]), sub))
            if (o == 0 and has_thickness) or flags.oversample_thick:
                recs.append(Record("capture_fraction", _floats(px["capture_fraction"][0, t, o]), sub))
            for s in range(obs.S):
                at_source = sub + (("source", s),)
                recs.append(Record("scattering", _floats(px["scattering"][0, t, o, s]), at_source))
                if bool(px["source_cut"][0, t, o, s]):
                    continue
                if (not nopolar and not polar_done) or flags.oversample_polar:
                    recs.append(Record("polar", _floats(px["polarization"][0, t, o, s]), at_source))
                    polar_done = True
                recs += _iteration_records(obs, t, o, s, at_source, D, square, water)
    return recs


def _iteration_records(obs: _Observations, t: int, o: int, s: int, at_source, D: int, square: bool,
                       water: bool) -> list[Record]:
    """Lines of the phi x mosaic loop of one source (values as Python lists: one conversion per source)."""
    def values(name: str):
        block = obs.iteration(name, t, o)
        return None if block is None else block[s].tolist()

    hkl, hkl0, latt = values("hkl"), values("hkl0"), values("F_latt_sq")
    axes = values("F_latt_axes_sq") if square else None
    F_cell, I_term = values("F_cell"), values("I_term")
    recs = []
    for r in range(obs.R):
        where = at_source + (("phi", r // D), ("mos", r % D))
        recs.append(Record("hkl", tuple(hkl[r]), where))
        recs.append(Record("hkl0", tuple(int(v) for v in hkl0[r]), where))
        if axes is not None:
            recs.append(Record("F_latt_axes_sq", tuple(axes[r]), where))
        recs.append(Record("F_latt_sq", (latt[r],), where))
        if latt[r] == 0.0 and not water:
            continue  # nanoBragg skips the rest of this iteration (spec §5.6)
        recs.append(Record("F_cell", (F_cell[r],), where))
        recs.append(Record("I_term", (I_term[r],), where))
    return recs


def _end_records(setup: Setup, obs: _Observations) -> list[Record]:
    flags, px = setup.config.sampling, obs.pixel
    return [
        Record("I_sum", _floats(px["I_sum"])),
        Record("scale", _floats(px["scale"])),
        Record("capture_fraction_used", (1.0,) if flags.oversample_thick else _floats(px["capture_last"])),
        Record("polar_used", (1.0,) if flags.oversample_polar else _floats(px["polarization_used"])),
        Record("omega_used", (1.0,) if flags.oversample_omega else _floats(px["solid_angle_used"])),
        Record("pixel_value", _floats(px["pixel_value"])),
    ]


def _rendered(setup: Setup, s: int, f: int) -> bool:
    """Whether nanoBragg renders the pixel (inside -roi, not masked)."""
    return bool(((setup.pixels_s == s) & (setup.pixels_f == f)).any())


def _interpolation_cutoff(setup: Setup) -> int | None:
    """Raster index s * fpixels + f of the pixel where a full render switches interpolation off (spec §5.7)."""
    if not setup.interpolate:
        return None
    _, info = render(setup)
    if info.interpolation_switched_off_at is None:
        return None
    s, f = info.interpolation_switched_off_at
    return s * setup.config.detector.fpixels + f


def check_pixels(config: SimulationConfig, pixels: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The (slow, fast) pixels as ints; raises ConfigError for one outside the detector."""
    det = config.detector
    checked = []
    for s, f in pixels:
        s, f = int(s), int(f)
        if not (0 <= s < det.spixels and 0 <= f < det.fpixels):
            raise ConfigError(f"-trace_pixel {s} {f}: outside the detector "
                              f"({det.spixels} slow x {det.fpixels} fast pixels, indices from 0)")
        checked.append((s, f))
    return checked


def trace_records(config: SimulationConfig, pixels: Iterable[tuple[int, int]]) -> Iterable[tuple[tuple[int, int], list[Record]]]:
    """Yield ``((slow, fast), records)`` for each pixel, computed in float64 on the CPU.

    Each pixel is rendered alone with the engine's observe hook. When tricubic interpolation is on, the
    whole image is rendered once first, so that a pixel after nanoBragg's global switch-off point
    (spec §5.7) is traced with interpolation off, exactly as it is rendered in the image.
    """
    pixels = check_pixels(config, pixels)
    with torch.no_grad():
        setup = prepare(config, device="cpu", dtype=torch.float64)
        cutoff = _interpolation_cutoff(setup) if pixels else None
        for s, f in pixels:
            head = [Record("pixel", (s, f))]
            if not _rendered(setup, s, f):
                yield (s, f), head + [Record("rendered", (0,)), Record("pixel_value", (0.0,))]
                continue
            raster = s * config.detector.fpixels + f
            interpolating = setup.interpolate and (cutoff is None or raster <= cutoff)
            pixel_setup = restrict_pixels(replace(setup, interpolate=interpolating), [(s, f)])
            obs = _Observations(pixel_setup)
            render(pixel_setup, observe=obs)
            records = head + [Record("rendered", (1,))]
            records += _pixel_records(pixel_setup, interpolating)
            records += _loop_records(pixel_setup, obs)
            records += _end_records(pixel_setup, obs)
            yield (s, f), records


def trace_pixels(config: SimulationConfig, pixels: Iterable[tuple[int, int]], out: TextIO = sys.stdout,
                 json_path: str | Path | None = None) -> None:
    """Print the trace of each (slow, fast) pixel as ``TRACE_PY:`` lines; optionally write it as JSON.

    Args:
        config: the simulation (any nanoBragg command line, through :func:`detsim.commandline.to_config.config_from_argv`).
        pixels: (slow, fast) indices from 0, as ``-trace_pixel S F`` gives them.
        out: text stream for the lines (flushed after each pixel).
        json_path: if given, the same records as JSON (written atomically once all pixels are done).

    Raises:
        ConfigError: a pixel outside the detector (before anything is printed).
    """
    blocks = []
    for pixel, records in trace_records(config, list(pixels)):
        out.write("".join(record.line() + "\n" for record in records))
        out.flush()
        if json_path is not None:
            blocks.append({"pixel": list(pixel), "records": [record.as_json() for record in records]})
    if json_path is not None:
        det = config.detector
        document = {
            "format": JSON_FORMAT, "version": JSON_VERSION, "prefix": PREFIX,
            "dtype": "float64", "device": "cpu", "detector": [det.spixels, det.fpixels],
            "roi": list(det.roi) if det.roi is not None else None,
            "environment": _versions(), "pixels": blocks,
        }
        text = json.dumps(document, indent=2, sort_keys=True, allow_nan=False) + "\n"
        atomic_write(Path(json_path), lambda handle: handle.write(text.encode()))


def _versions() -> dict[str, str]:
    """What a trace's numbers depend on besides the configuration: the software that computed them."""
    import detsim

    return {"detsim": detsim.__version__, "python": platform.python_version(), "torch": torch.__version__,
            "numpy": np.__version__}


__all__ = ["JSON_FORMAT", "NAMES", "PREFIX", "Record", "Term", "VOCABULARY", "check_pixels", "trace_pixels",
           "trace_records"]
