"""The ``detsim`` command: a drop-in for nanoBragg's command line (spec §2, §6.3).

``detsim -cell 100 100 100 90 90 90 -default_F 100 -floatfile img.bin`` reads the arguments as
nanoBragg does (:mod:`detsim.argv`), builds a :class:`~detsim.config.SimulationConfig`, renders the
image and writes nanoBragg's outputs (float image, SMV int image, PGM, noise image). Every input is
checked before anything is written; a bad input ends the run with a one-line error and exit code 2.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from detsim import io, rng
from detsim.argv import ArgumentError, Arguments, parse_argv
from detsim.config import (
    BeamConfig, ConfigError, Convention, CrystalConfig, DetectorConfig, SamplingConfig, SimulationConfig,
)
from detsim.engine import Setup, check_triton, prepare, render
from detsim.geometry import CONVENTION_AXES
from detsim.sources import SourceFileError, read_source_file
from detsim.structure import HKLError, read_hkl
from detsim.units import DEFAULT_FLUENCE_PER_M2, DEG

EXIT_BAD_INPUT = 2


class InputError(ValueError):
    """A file named on the command line is missing or malformed."""


@dataclass(frozen=True)
class Outputs:
    """Files to write and how (spec §2.4)."""

    floatfile: str
    intfile: str
    pgmfile: str | None
    noisefile: str | None
    int_scale: float
    pgm_scale: float
    adc: float
    noise_seed: int


def read_matrix_file(path: str) -> tuple[float, ...]:
    """First 9 numbers of a MOSFLM orientation matrix file (spec §4.2)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(f"{path}: cannot read matrix file ({exc.strerror})") from None
    numbers = []
    for token in text.split():
        try:
            numbers.append(float(token))
        except ValueError:
            raise InputError(f"{path}: non-numeric token {token!r} in matrix file") from None
        if len(numbers) == 9:
            break
    if len(numbers) < 9:
        raise InputError(f"{path}: matrix file needs 9 numbers (3 rows of a*, b*, c* components), found {len(numbers)}")
    if not all(np.isfinite(numbers)):
        raise InputError(f"{path}: non-finite value in matrix file")
    if abs(np.linalg.det(np.reshape(numbers, (3, 3)))) == 0:
        raise InputError(f"{path}: matrix is singular (describes no lattice)")
    return tuple(numbers)


def build_config(args: Arguments, mask: np.ndarray | None = None) -> SimulationConfig:
    """Turn raw arguments into a validated configuration (units stay the user's; spec §2)."""
    custom = args.convention is Convention.CUSTOM
    vec = args.vectors if custom else {}
    if not args.cell and args.matrix_file is None:
        raise ConfigError("a unit cell (-cell a b c alpha beta gamma) or a matrix file (-mat) is required")
    if args.hkl_file is None and args.default_F == 0.0:
        raise ConfigError("no structure factors: give -hkl FILE or a non-zero -default_F")
    cell = None
    if args.cell:
        a = args.cell[0]
        defaults = [a, a, a, 90.0, 90.0, 90.0]
        values = args.cell + defaults[len(args.cell):]
        cell = tuple(v if v > 0 else d for v, d in zip(values, defaults))  # nanoBragg's "blank" defaults
    hkl = read_hkl(args.hkl_file, args.default_F) if args.hkl_file is not None else None
    if hkl is not None and hkl.count == 0:
        hkl = None
    crystal = CrystalConfig(
        cell=cell,
        a_matrix=read_matrix_file(args.matrix_file) if args.matrix_file else None,
        misset_deg=args.misset_deg or (0.0, 0.0, 0.0),
        misset_random=args.misset_random,
        misset_seed=args.misset_seed if args.misset_seed is not None else _time_seed(),
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
    fpixels = int(np.ceil(detsize_f / args.pixel_mm - 0.5))
    spixels = int(np.ceil(detsize_s / args.pixel_mm - 0.5))
    detector = DetectorConfig(
        convention=args.convention, pivot=args.pivot, fpixels=fpixels, spixels=spixels,
        pixel_mm=args.pixel_mm, detsize_f_mm=detsize_f, detsize_s_mm=detsize_s,
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
        stale_phi=not args.physical_phi,
    )
    return SimulationConfig(crystal=crystal, beam=beam, detector=detector, sampling=sampling)


def _beam_axis(args: Arguments) -> tuple[float, float, float]:
    if args.convention is Convention.CUSTOM and "beam" in args.vectors:
        v = np.asarray(args.vectors["beam"], dtype=float)
        return tuple(v / np.linalg.norm(v))
    return CONVENTION_AXES[args.convention].beam


def _time_seed() -> int:
    """nanoBragg's default seed: the current time (so runs differ unless -seed is given)."""
    return int(time.time())


def _outputs(args: Arguments) -> Outputs:
    return Outputs(
        floatfile=args.floatfile, intfile=args.intfile,
        pgmfile=args.pgmfile if args.write_pgm else None,
        noisefile=args.noisefile if args.write_noise else None,
        int_scale=args.int_scale, pgm_scale=args.pgm_scale, adc=args.adc,
        noise_seed=args.noise_seed if args.noise_seed is not None else _time_seed(),
    )


def _check_inputs(args: Arguments) -> None:
    for flag, path in (("-stol", args.stol_file), ("-img", args.img_file), ("-mask", args.mask_file)):
        if path is not None and not Path(path).is_file():
            raise InputError(f"{flag} {path}: no such file")


def _read_header_image(flag: str, path: str) -> tuple[dict[str, str], np.ndarray]:
    try:
        return io.read_smv(path)
    except (OSError, ValueError) as exc:
        raise InputError(f"{flag} {exc}") from None


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
            try:
                return float(header[key])
            except ValueError:
                raise InputError(f"{flag} {path}: header {key}={header[key]!r} is not a number") from None

        args.spixels, args.fpixels = data.shape
        args.pixel_mm = value("PIXEL_SIZE") or args.pixel_mm
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


def _summary(setup: Setup) -> list[str]:
    cfg, geom = setup.config, setup.geometry
    det = cfg.detector
    lines = [
        f"{det.convention.value} convention selected.",
        "pivoting detector around " + ("sample" if geom.pivot.value == "sample" else "direct beam spot"),
    ]
    if cfg.crystal.hkl is not None:
        lines.append("tricubic interpolation of structure factors" if setup.interpolate
                     else "no interpolation of structure factors")
    if setup.oversample_auto:
        lines.append(f"auto-selected {setup.oversample}-fold oversampling")
    n = setup.lattice.N.tolist()
    lines += [
        f"  {int(n[0])}x{int(n[1])}x{int(n[2])} cells, {cfg.crystal.shape.value} crystal",
        f"  distance={float(geom.distance_m):g} detsize={geom.detsize_f_m:g}x{geom.detsize_s_m:g}  "
        f"pixel={float(geom.pixel_m):g} meters ({det.fpixels}x{det.spixels} pixels)",
        f"  Xbeam={geom.xbeam_m:g} Ybeam={geom.ybeam_m:g}",
        f"  Fbeam={float(geom.fbeam_m):g} Sbeam={float(geom.sbeam_m):g}",
        f"  Fclose={float(geom.fclose_m):g} Sclose={float(geom.sclose_m):g}",
        f"  {setup.sources.lambda_m.shape[0]} sources",
        f"  {setup.mosaic_domains} mosaic domains over mosaic spread of {cfg.crystal.mosaic_spread_deg:g} degrees",
        f"  {setup.phi_steps.count} phi steps from {cfg.sampling.phi0_deg:g} to "
        f"{cfg.sampling.phi0_deg + setup.phi_steps.range / DEG:g} degrees",
        f"  {setup.oversample}x{setup.oversample} pixel oversample steps",
        f"  {setup.thickness.count} sensor layers",
        f"  {setup.steps} steps per pixel",
    ]
    return lines


class _Progress:
    """A progress bar on a terminal for runs longer than a few seconds (outside the engine)."""

    def __init__(self, enabled: bool, stream=sys.stderr, delay_s: float = 2.0):
        self.enabled = enabled and stream.isatty()
        self.stream, self.delay_s, self.start = stream, delay_s, time.monotonic()
        self.shown = False

    def __call__(self, fraction: float) -> None:
        if not self.enabled or time.monotonic() - self.start < self.delay_s:
            return
        width = 40
        filled = int(round(width * fraction))
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {100 * fraction:5.1f}%")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")


def run(argv: list[str], out=None) -> int:
    """Parse, simulate, write; returns the exit status."""
    out = sys.stdout if out is None else out
    args = parse_argv(argv)
    _check_inputs(args)
    mask = None
    if args.img_file is not None or args.mask_file is not None:
        initial, mask = header_arguments(args.img_file, args.mask_file)
        args = parse_argv(argv, initial)
    config = build_config(args, mask)
    if args.trace_json is not None and not args.trace_pixels:
        raise ConfigError("--trace-json needs at least one -trace_pixel S F")
    if args.trace_pixels:  # diagnosis run: print the traces (float64, CPU) and write no image
        from detsim.track.trace import trace_pixels
        trace_pixels(config, args.trace_pixels, out=out, json_path=args.trace_json)
        return 0
    outputs = _outputs(args)
    dtype = torch.float32 if args.dtype == "float32" else torch.float64
    try:
        device = torch.device(args.device)
    except RuntimeError:
        raise ConfigError(f"-device: unknown device {args.device!r}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError("-device cuda: no CUDA device is available")
    if args.mode == "triton":
        try:
            check_triton(device)
        except ValueError as exc:
            raise ConfigError(f"-mode triton: {exc}") from None
    setup = prepare(config, device=device, dtype=dtype)
    print("\n".join(_summary(setup)), file=out)
    progress = _Progress(args.progress)
    image, info = render(setup, chunk_pixels=args.chunk_pixels, progress=progress, mode=args.mode)
    progress.close()
    if info.interpolation_switched_off_at is not None:
        s, f = info.interpolation_switched_off_at
        print(f"WARNING: out of range for three point interpolation at pixel (slow {s}, fast {f}); "
              "interpolation switched off from there on", file=out)
    write_outputs(setup, image.detach().cpu().numpy().astype(np.float32), outputs, out)
    return 0


def _roi_mask(setup: Setup) -> np.ndarray:
    """The -roi rectangle (masked pixels included: they count as 0 in the statistics, spec §6.2)."""
    det = setup.config.detector
    xmin, xmax, ymin, ymax = det.roi if det.roi is not None else (0, det.fpixels - 1, 0, det.spixels - 1)
    mask = np.zeros(det.shape, dtype=bool)
    mask[ymin:ymax + 1, xmin:xmax + 1] = True
    return mask


def write_outputs(setup: Setup, image: np.ndarray, outputs: Outputs, out) -> None:
    """Write float, int, PGM and noise images, in nanoBragg's order (spec §6.3)."""
    roi = _roi_mask(setup)
    mask = setup.config.detector.mask
    pixel_mask = None if mask is None else np.asarray(mask) != 0
    stats = io.image_statistics(image, roi, pixel_mask)
    s_max, f_max = np.unravel_index(int(np.argmax(np.where(roi, image, -np.inf))), image.shape)
    print(f"max_I = {stats['max_I']:g} at pixel (slow {s_max}, fast {f_max})", file=out)
    print(f"mean= {stats['mean']:g} rms= {stats['rms']:g} rmsd= {stats['rmsd']:g}", file=out)
    header = _header_fields(setup)
    io.write_float_image(outputs.floatfile, image)
    print(f"wrote {outputs.floatfile}", file=out)
    ints, scale = io.int_image(image, outputs.int_scale if outputs.int_scale > 0 else None, outputs.adc, roi)
    print(f"intfile_scale = {scale:g}", file=out)
    io.write_smv(outputs.intfile, ints, header)
    print(f"wrote {outputs.intfile}", file=out)
    if outputs.pgmfile is not None:
        pgm, pgm_scale = io.pgm_image(image, outputs.pgm_scale if outputs.pgm_scale > 0 else None, scale, roi,
                                      pixel_mask)
        io.write_pgm(outputs.pgmfile, pgm, pgm_scale)
        print(f"pgm_scale = {pgm_scale:g}\nwrote {outputs.pgmfile}", file=out)
    if outputs.noisefile is not None:
        noisy, overloads = rng.poisson_noise_image(image, outputs.noise_seed, outputs.adc,
                                                   setup.config.detector.roi)
        io.write_smv(outputs.noisefile, noisy, header)
        print(f"{int(noisy[roi].astype(np.int64).sum() - outputs.adc * roi.sum()):d} photons on noise image "
              f"({overloads} overloads)\nwrote {outputs.noisefile}", file=out)


def _header_fields(setup: Setup) -> dict:
    geom, cfg = setup.geometry, setup.config
    pix0 = geom.pix0_m.detach().cpu().double()
    mm = 1e3
    return io.smv_header_fields(
        fpixels=cfg.detector.fpixels, spixels=cfg.detector.spixels,
        pixel_mm=float(geom.pixel_m) * mm, distance_mm=float(geom.distance_m) * mm,
        wavelength_A=cfg.beam.lambda_A,
        xbeam_mm=geom.xbeam_m * mm, ybeam_mm=geom.ybeam_m * mm,
        fbeam_mm=float(geom.fbeam_m) * mm, sbeam_mm=float(geom.sbeam_m) * mm,
        detsize_s_mm=geom.detsize_s_m * mm,
        dials_origin_mm=(float(pix0[2]) * mm, float(pix0[1]) * mm, -float(pix0[0]) * mm),
        orgx=float(geom.fclose_m / geom.pixel_m) + 0.5, orgy=float(geom.sclose_m / geom.pixel_m) + 0.5,
        close_distance_mm=float(geom.close_distance_m) * mm,
        phi0_deg=cfg.sampling.phi0_deg, osc_deg=setup.phi_steps.range / DEG,
        twotheta_deg=cfg.detector.twotheta_deg,
    )


def main(argv: list[str] | None = None) -> int:
    """Console entry point."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        return run(argv)
    except (ArgumentError, ConfigError, InputError, HKLError, SourceFileError) as exc:
        print(f"detsim: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["build_config", "main", "parse_argv", "read_matrix_file", "run"]
