"""nanoBragg arguments -> a validated :class:`~detsim.model.config.SimulationConfig` (spec §2, §2.5).

:func:`detsim.commandline.argv_reader.parse_argv` reads the command line into :class:`~detsim.commandline.arguments.Arguments`; this module
turns those into a configuration: it reads the files they name (``-mat``, the ``-img``/``-mask`` SMV
headers, whose values apply before any flag) and checks what only makes sense as a whole. It is the one
place that knows how a nanoBragg command line becomes a simulation, used by the ``detsim`` command, the
tracking suite and the tests alike (:func:`config_from_argv`).
"""

from __future__ import annotations

import math
import re
import time

import numpy as np

from detsim.commandline.arguments import Arguments
from detsim.commandline.argv_reader import parse_argv
from detsim.commandline.flag_table import cell_with_defaults
from detsim.fileio import bounded_read, c_numbers, smv
from detsim.model.config import (
    BeamConfig, ConfigError, Convention, CrystalConfig, DetectorConfig, SamplingConfig, SimulationConfig, derived,
)
from detsim.model.units import DEFAULT_FLUENCE_PER_M2


class InputError(ValueError):
    """A file named on the command line is missing or malformed."""


MATRIX_MAX_BYTES = 4096  # where a matrix file's 9 numbers must lie: they take a few hundred bytes at most
_FIELD = re.compile(rb"[^ \t\n\v\f\r]+")  # between C spaces, the only ones fscanf skips


def read_matrix_file(path: str) -> tuple[float, ...]:
    """First 9 numbers of a MOSFLM orientation matrix file (spec §4.2), from its first 4096 bytes."""
    raw, more = bounded_read.read_prefix(path, "matrix file", MATRIX_MAX_BYTES, InputError)
    numbers: list[float] = []
    for field in _FIELD.finditer(raw):
        if len(numbers) == 9:
            break
        if more and field.end() == len(raw):
            break  # it may go on past the prefix
        try:
            token = field.group().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: matrix file is not text (byte {field.start() + exc.start} is not UTF-8)") from None
        number = c_numbers.parse_float(token)  # nanoBragg reads them with fscanf's %lg
        if number is None:
            raise InputError(f"{path}: non-numeric token {token!r} in matrix file")
        numbers.append(number)
    if len(numbers) < 9 and more:
        raise InputError(f"{path}: a matrix file's 9 numbers must lie within its first {MATRIX_MAX_BYTES} bytes, "
                         f"found {len(numbers)}")
    if len(numbers) < 9:
        raise InputError(f"{path}: matrix file needs 9 numbers (3 rows of a*, b*, c* components), found {len(numbers)}")
    if not all(np.isfinite(numbers)):
        raise InputError(f"{path}: non-finite value in matrix file")
    if abs(np.linalg.det(np.reshape(numbers, (3, 3)))) == 0:
        raise InputError(f"{path}: matrix is singular (describes no lattice)")
    return tuple(numbers)


def time_seed() -> int:
    """nanoBragg's default seed: the current time (so runs differ unless a seed is given)."""
    return int(time.time())


def build_config(args: Arguments, mask: np.ndarray | None = None) -> SimulationConfig:
    """Turn raw arguments into a validated configuration (units stay the user's; spec §2)."""
    custom = args.convention is Convention.CUSTOM
    vec = args.vectors if custom else {}
    if not args.cell and args.matrix_file is None:
        raise ConfigError("a unit cell (-cell a b c alpha beta gamma) or a matrix file (-mat) is required")
    if args.hkl_file is None and args.default_F == 0.0:
        raise ConfigError("no structure factors: give -hkl FILE or a non-zero -default_F")
    # the readers of the -hkl and -source files bring torch: imported once the flags have been read
    from detsim.model.sources import read_source_file
    from detsim.model.structure_factors import read_hkl

    cell = cell_with_defaults(args.cell) if args.cell else None
    hkl = read_hkl(args.hkl_file, args.default_F) if args.hkl_file is not None else None
    if hkl is not None and hkl.count == 0:
        hkl = None
    crystal = CrystalConfig(
        cell=cell,
        a_matrix=read_matrix_file(args.matrix_file) if args.matrix_file else None,
        misset_deg=args.misset_deg or (0.0, 0.0, 0.0),
        misset_random=args.misset_random,
        # the clock only where the seed draws the misset (-misset random), so one command line is one config
        misset_seed=args.misset_seed if args.misset_seed is not None else time_seed() if args.misset_random else 0,
        Na=args.Na, Nb=args.Nb, Nc=args.Nc,
        xtal_size_mm=tuple(args.xtal_size_mm),
        shape=args.shape, fudge=args.fudge, default_F=args.default_F, hkl=hkl,
        interpolate=args.interpolate,
        mosaic_spread_deg=args.mosaic_spread_deg or 0.0,
        mosaic_domains=args.mosaic_domains if args.mosaic_spread_deg is not None else None,
        mosaic_seed=args.mosaic_seed,
        spindle_axis=vec.get("spindle"),
        dmin_A=args.dmin_A, water_um=args.water_um,
    )
    sources = None
    beam_axis = _beam_axis(args)
    if args.source_file is not None:
        sources = read_source_file(args.source_file, beam_axis, args.lambda_A)
    beam = BeamConfig(
        lambda_A=args.lambda_A,
        fluence_per_m2=args.fluence if args.fluence is not None else DEFAULT_FLUENCE_PER_M2,
        flux_per_s=args.flux, exposure_s=args.exposure_s, beamsize_mm=args.beamsize_mm,
        hdivrange_mrad=args.hdivrange_mrad, hdivstep_mrad=args.hdivstep_mrad, hdivsteps=args.hdivsteps,
        vdivrange_mrad=args.vdivrange_mrad, vdivstep_mrad=args.vdivstep_mrad, vdivsteps=args.vdivsteps,
        round_div=args.round_div, dispersion_pct=args.dispersion_pct, dispsteps=args.dispsteps,
        sources=sources, polarization_kahn=args.polarization, nopolar=args.nopolar,
        beam_vector=vec.get("beam"), polar_vector=vec.get("polar"),
    )
    for name, value in (("-pixel", args.pixel_mm), ("-detsize_f", args.detsize_f_mm),
                        ("-detsize_s", args.detsize_s_mm), ("-distance", args.distance_mm)):
        if not value > 0:
            raise ConfigError(f"{name} must be > 0, got {value}")
    for name, value in (("-detpixels_f", args.fpixels), ("-detpixels_s", args.spixels)):
        if value < 0:
            raise ConfigError(f"{name} must be > 0, got {value}")
    # spec §2.3: given pixel counts define the size; a size alone is rounded to whole pixels.
    detsize_f = args.pixel_mm * args.fpixels if args.fpixels else args.detsize_f_mm
    detsize_s = args.pixel_mm * args.spixels if args.spixels else args.detsize_s_mm
    fpixels = derived("the number of pixels along fast (-detsize_f / -pixel, or -pixel x -detpixels_f)",
                      lambda: int(np.ceil(detsize_f / args.pixel_mm - 0.5)))
    spixels = derived("the number of pixels along slow (-detsize_s / -pixel, or -pixel x -detpixels_s)",
                      lambda: int(np.ceil(detsize_s / args.pixel_mm - 0.5)))
    detector = DetectorConfig(
        convention=args.convention, pivot=args.pivot, fpixels=fpixels, spixels=spixels,
        # given pixel counts: the size is pixel (m) x count, as nanoBragg.c L1119-L1124 computes it (None)
        pixel_mm=args.pixel_mm, detsize_f_mm=None if args.fpixels else detsize_f,
        detsize_s_mm=None if args.spixels else detsize_s,
        distance_mm=args.distance_mm, close_distance_mm=args.close_distance_mm,
        xbeam_mm=args.xbeam_mm, ybeam_mm=args.ybeam_mm, xclose_mm=args.xclose_mm, yclose_mm=args.yclose_mm,
        orgx_px=args.orgx_px, orgy_px=args.orgy_px,
        rotx_deg=args.rot_deg[0], roty_deg=args.rot_deg[1], rotz_deg=args.rot_deg[2],
        twotheta_deg=args.twotheta_deg, twotheta_axis=vec.get("twotheta_axis"),
        fdet_vector=vec.get("fdet"), sdet_vector=vec.get("sdet"), odet_vector=vec.get("odet"),
        curved=args.curved, point_pixel=args.point_pixel,
        thick_um=args.thick_um, thicksteps=args.thicksteps, mu_per_m=args.mu_per_m, roi=args.roi,
        mask=mask,
    )
    sampling = SamplingConfig(
        oversample=args.oversample if args.oversample > 0 else None,
        oversample_thick=args.oversample_thick, oversample_polar=args.oversample_polar,
        oversample_omega=args.oversample_omega,
        phi0_deg=args.phi0_deg, osc_deg=args.osc_deg, phistep_deg=args.phistep_deg, phisteps=args.phisteps,
        stale_phi=not args.physical_phi, nanobragg_threads=args.nanobragg_threads,
    )
    return SimulationConfig(crystal=crystal, beam=beam, detector=detector, sampling=sampling)


def _beam_axis(args: Arguments) -> tuple[float, float, float]:
    if args.convention is Convention.CUSTOM and "beam" in args.vectors:
        v = np.asarray(args.vectors["beam"], dtype=float)
        return tuple(v / np.linalg.norm(v))
    from detsim.model.geometry import CONVENTION_AXES

    return CONVENTION_AXES[args.convention].beam


_EXPECTED = {"-stol": "a file", "-img": "an SMV image", "-mask": "an SMV image"}


def check_inputs(args: Arguments) -> None:
    """The files of -stol, -img and -mask exist and are regular files (an -img/-mask one not empty).

    Raises :class:`InputError` saying what the path is instead: "no such file", "is a directory, not an SMV
    image", "is a character device, not an SMV image" (``/dev/zero``, ``/dev/null``), "is an empty file, ...".
    """
    for flag, path in (("-stol", args.stol_file), ("-img", args.img_file), ("-mask", args.mask_file)):
        problem = bounded_read.describe(path) if path is not None else None
        if problem is None or (problem == "an empty file" and flag == "-stol"):  # -stol's file is never read
            continue
        if problem.startswith(("no such", "cannot")):
            raise InputError(f"{flag} {path}: {problem}")
        raise InputError(f"{flag} {path}: is {problem}, not {_EXPECTED[flag]}")


def _read_header_image(flag: str, path: str) -> tuple[dict[str, str], np.ndarray]:
    try:
        return smv.read_smv(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"{flag} {exc}") from None


_POSITIVE_HEADER_KEYS = ("PIXEL_SIZE", "DISTANCE", "CLOSE_DISTANCE", "WAVELENGTH")


def header_arguments(img_file: str | None, mask_file: str | None) -> tuple[Arguments, np.ndarray | None]:
    """Starting values from the ``-mask`` then ``-img`` SMV headers, applied before any flag (spec §2.5).

    Returns the arguments and the mask image (None without ``-mask``).
    """
    args = Arguments()
    mask = None
    for flag, path in (("-mask", mask_file), ("-img", img_file)):
        if path is None:
            continue
        header, data = _read_header_image(flag, path)
        if flag == "-mask":
            mask = data

        def value(key: str) -> float | None:
            if key not in header:
                return None
            number = c_numbers.parse_float(header[key])  # nanoBragg reads header values with atof
            if number is None:
                raise InputError(f"{flag} {path}: header {key}={header[key]!r} is not a number "
                                 f"(nanoBragg would read {c_numbers.atof(header[key])!r})")
            if not math.isfinite(number):
                raise InputError(f"{flag} {path}: header {key}={header[key]!r} is not a finite number")
            if key in _POSITIVE_HEADER_KEYS and not number > 0:
                raise InputError(f"{flag} {path}: header {key}={header[key]} must be > 0")
            return number

        args.spixels, args.fpixels = data.shape
        pixel = value("PIXEL_SIZE")
        args.pixel_mm = pixel if pixel is not None else args.pixel_mm
        args.detsize_f_mm, args.detsize_s_mm = args.pixel_mm * args.fpixels, args.pixel_mm * args.spixels
        for key, name in (("DISTANCE", "distance_mm"), ("CLOSE_DISTANCE", "close_distance_mm"),
                          ("WAVELENGTH", "lambda_A"), ("BEAM_CENTER_X", "xbeam_mm"), ("ORGX", "orgx_px"),
                          ("ORGY", "orgy_px"), ("PHI", "phi0_deg"), ("OSC_RANGE", "osc_deg")):
            if value(key) is not None:
                setattr(args, name, value(key))
        ybeam = value("BEAM_CENTER_Y")
        if ybeam is not None:  # a mask's header counts Y from the other edge
            args.ybeam_mm = args.detsize_s_mm - ybeam if flag == "-mask" else ybeam
    return args, mask


def parse_with_headers(argv: list[str]) -> tuple[Arguments, np.ndarray | None]:
    """The arguments of ``argv`` on top of the ``-mask``/``-img`` header values, and the mask image.

    Input files named by flags are checked first (a missing one raises :class:`InputError`).
    """
    args = parse_argv(argv)
    check_inputs(args)
    if args.img_file is None and args.mask_file is None:
        return args, None
    initial, mask = header_arguments(args.img_file, args.mask_file)
    return parse_argv(argv, initial), mask


def config_from_argv(argv: list[str]) -> SimulationConfig:
    """A configuration from a nanoBragg argument list (files relative to the working directory)."""
    args, mask = parse_with_headers(argv)
    return build_config(args, mask)


__all__ = ["InputError", "build_config", "check_inputs", "config_from_argv", "header_arguments",
           "parse_with_headers", "read_matrix_file"]
