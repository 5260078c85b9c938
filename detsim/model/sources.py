"""Incident-beam sources: divergence/dispersion grids and source files (spec §5.2).

Convention:
    A source is an incident unit direction ``incident`` (the direction photons travel, so the default
    source gives ``incident == beam``) and a wavelength in metres. Sources are listed in nanoBragg's
    order: horizontal divergence outer, vertical divergence, then wavelength innermost.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from detsim.fileio import bounded_read, c_numbers
from detsim.host import memory
from detsim.model.config import BeamConfig, SourcePoint, as_float
from detsim.model.geometry import LabFrame
from detsim.model.rotation import rotate_axis, unit
from detsim.model.sampling import Steps, resolve_dispersion, resolve_divergence
from detsim.model.units import ANGSTROM, mrad_to_rad, wavelength_m

SOURCE_DISTANCE_M = 10.0  # default source position: -10 m along the beam (spec §5.2)
SOURCE_BYTES = 512  # one source: its SourcePoint or grid point, its Python lists and float64 tensors while built


class SourceFileError(ValueError):
    """Malformed source file; the message names the file and line."""


@dataclass(frozen=True)
class Sources:
    """Resolved sources."""

    incident: Tensor  # (S, 3) unit vectors, direction of travel
    lambda_m: Tensor  # (S,) wavelengths


def grid_steps(beam: BeamConfig) -> tuple[Steps, Steps, Steps]:
    """The source grid's horizontal and vertical divergence steps (rad) and its dispersion steps (spec §5.3)."""
    h = resolve_divergence(*_mrad(beam.hdivrange_mrad, beam.hdivstep_mrad), beam.hdivsteps)
    v = resolve_divergence(*_mrad(beam.vdivrange_mrad, beam.vdivstep_mrad), beam.vdivsteps)
    return h, v, resolve_dispersion(beam.dispersion_pct / 100.0, beam.dispsteps)


def divergence_offsets(beam: BeamConfig) -> list[tuple[float, float]]:
    """(hdiv, vdiv) angle pairs (rad) kept by the grid and the elliptical cut (spec §5.2, §5.3)."""
    h, v, _ = grid_steps(beam)
    kept = []
    for ih in range(h.count):
        for iv in range(v.count):
            hdiv = h.step * ih - h.range / 2.0
            vdiv = v.step * iv - v.range / 2.0
            if beam.round_div and _outside_ellipse(hdiv, vdiv, h, v):
                continue
            kept.append((hdiv, vdiv))
    return kept


def _mrad(rng: float | None, step: float | None) -> tuple[float | None, float | None]:
    return (None if rng is None else mrad_to_rad(rng), None if step is None else mrad_to_rad(step))


def _outside_ellipse(hdiv: float, vdiv: float, h: Steps, v: Steps) -> bool:
    """nanoBragg's round-divergence cut; with a zero range the test is NaN and keeps the point."""
    with_h = (hdiv * hdiv - h.step * h.step / 4.0 * (1 - h.count % 2))
    with_v = (vdiv * vdiv - v.step * v.step / 4.0 * (1 - v.count % 2))
    try:
        test = with_h / h.range / h.range + with_v / v.range / v.range
    except ZeroDivisionError:
        return False
    return test * 4.0 > 1.1


def wavelength_factors(beam: BeamConfig) -> list[float]:
    """lambda_k / lambda0 = 1 + step*k - D/2 for each dispersion step k (spec §5.2)."""
    d = grid_steps(beam)[2]
    return [1.0 + d.step * k - d.range / 2.0 for k in range(d.count)]


def wavelengths_m(beam: BeamConfig) -> list[float]:
    """Wavelength of each dispersion step, metres."""
    lambda0 = wavelength_m(as_float(beam.lambda_A))
    return [lambda0 * factor for factor in wavelength_factors(beam)]


def build_sources(beam: BeamConfig, frame: LabFrame) -> Sources:
    """All sources as unit incident directions and wavelengths (spec §5.2)."""
    dtype, device = frame.beam.dtype, frame.beam.device
    if beam.sources is not None:
        pos = torch.as_tensor([s.position_m for s in beam.sources], dtype=dtype, device=device)
        lam = torch.as_tensor([s.lambda_A * ANGSTROM for s in beam.sources], dtype=dtype, device=device)
        return Sources(incident=-unit(pos), lambda_m=lam)
    offsets = divergence_offsets(beam)
    factors = torch.as_tensor(wavelength_factors(beam), dtype=dtype, device=device)  # (L,)
    hdiv = torch.as_tensor([o[0] for o in offsets], dtype=dtype, device=device)
    vdiv = torch.as_tensor([o[1] for o in offsets], dtype=dtype, device=device)
    start = (-SOURCE_DISTANCE_M * frame.beam).expand(len(offsets), 3)
    turned = rotate_axis(start, frame.polar.expand_as(start), vdiv)
    pos = rotate_axis(turned, frame.vert.expand_as(start), hdiv)  # (D, 3)
    # Wavelength is the inner index: source d*L + k has direction d and wavelength k (spec §5.2).
    incident = (-unit(pos))[:, None, :].expand(len(offsets), factors.numel(), 3).reshape(-1, 3)  # (D*L, 3)
    lambda0_m = wavelength_m(torch.as_tensor(beam.lambda_A, dtype=dtype, device=device))  # may carry a gradient
    lam = (lambda0_m * factors).repeat(len(offsets))  # (D*L,)
    return Sources(incident=incident, lambda_m=lam)


_SEPARATORS = re.compile(r"[ \t,;:!]+")


def _source_point(path: str | Path, number: int, line: str, filler: list[float]) -> SourcePoint | None:
    """The source on one line (None for a blank one), missing columns taken from ``filler``."""
    fields = [f for f in _SEPARATORS.split(line.strip(c_numbers.C_SPACES)) if f]
    if not fields:
        return None
    if len(fields) > 5:
        raise SourceFileError(f"{path} line {number}: expected at most 5 columns 'X Y Z I lambda', got {len(fields)}")
    values = [v for v in map(c_numbers.parse_float, fields) if v is not None]  # nanoBragg reads them with atof
    if len(values) < len(fields):
        raise SourceFileError(f"{path} line {number}: non-numeric value in {line.strip()!r}")
    if not all(math.isfinite(v) for v in values):
        raise SourceFileError(f"{path} line {number}: non-finite value in {line.strip()!r}")
    row = values + filler[len(values):]
    position = (row[0], row[1], row[2])
    if all(c == 0 for c in position):
        raise SourceFileError(f"{path} line {number}: source position is the zero vector")
    if row[4] <= 0:
        raise SourceFileError(f"{path} line {number}: wavelength must be > 0 m, got {row[4]}")
    return SourcePoint(position_m=position, lambda_A=row[4] / ANGSTROM)


def read_source_file(path: str | Path, beam_vector: tuple[float, float, float], lambda_A: float
                     ) -> tuple[SourcePoint, ...]:
    """Read a nanoBragg source file: up to 5 columns ``X Y Z I lambda`` per line (spec §5.2).

    X, Y, Z are the source position (m), I is ignored (all sources weigh the same, as in nanoBragg) and
    lambda is in metres. Missing columns default to the position -10 m along the beam and lambda0;
    on a last line without a newline nanoBragg reads missing columns as 0, and so does this reader. The file
    is read line by line (a line longer than :data:`detsim.fileio.bounded_read.MAX_LINE_BYTES` is an error), keeping
    :data:`SOURCE_BYTES` per source, which may not exceed the memory available.
    """
    default = [-SOURCE_DISTANCE_M * c for c in beam_vector] + [1.0, wavelength_m(lambda_A)]
    available = memory.available_bytes(torch.device("cpu"))
    points: list[SourcePoint] = []
    with bounded_read.open_regular(path, "source file", SourceFileError) as handle:
        for number, raw, ended in bounded_read.read_lines(handle, path, "source file", SourceFileError):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SourceFileError(f"{path} line {number}: source file is not text (byte {exc.start} of the "
                                      "line is not UTF-8)") from None
            point = _source_point(path, number, line, default if ended else [0.0] * 5)
            if point is None:
                continue
            points.append(point)
            if len(points) * SOURCE_BYTES > available:
                raise SourceFileError(f"{path}: {len(points)} sources by line {number} already need "
                                      f"{memory.gib(len(points) * SOURCE_BYTES)} of memory, more than the "
                                      f"{memory.gib(available)} available")
    if not points:
        raise SourceFileError(f"{path}: no sources in file")
    return tuple(points)
