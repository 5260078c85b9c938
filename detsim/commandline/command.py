"""The ``detsim`` command: a drop-in for nanoBragg's command line (spec §2, §6.3).

``detsim -cell 100 100 100 90 90 90 -default_F 100 -floatfile img.bin`` reads the arguments as
nanoBragg does (:mod:`detsim.commandline.argv_reader`), builds a :class:`~detsim.model.config.SimulationConfig`
(:mod:`detsim.commandline.to_config`), renders the
image and writes nanoBragg's outputs (float image, SMV int image, PGM, noise image). Every input is
checked before anything is written; a bad input ends the run with a one-line error and exit code 2.
"""

from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from detsim.commandline.arguments import ArgumentError, Arguments
from detsim.commandline.usage import HELP_FLAGS, help_text
from detsim.commandline.to_config import InputError, build_config, parse_with_headers, time_seed
from detsim.fileio import images as image_files, safe_write, smv
from detsim.host.signals import Terminated, terminate_as_interrupt
from detsim.model import rng
from detsim.model.config import ConfigError
from detsim.model.units import DEG

# torch and what imports it (the engine, the image files, the noise, the traces) are imported by the run
# that needs them: help and a bad flag answer without waiting ~1.5 s for torch's import
if TYPE_CHECKING:
    import torch

    from detsim.model.config import SimulationConfig
    from detsim.rendering.engine import Setup

# What detsim prints: its own lines (these patterns), and nanoBragg's, word for word, for the rest: the convention
# and pivot, the auto-selected oversampling, the detector and sampling summary (distance, detector size, pixel,
# Xbeam/Ybeam, Fbeam/Sbeam, Fclose/Sclose, sources, mosaic domains, phi steps, oversample steps),
# mean/rms/rmsd, intfile_scale, pgm_scale and the photons on the noise image (docs/command-line.md)
OWN_LINES = (
    r"(tricubic|no) interpolation of structure factors",
    r"  \d+x\d+x\d+ cells, \w+ crystal",  # nanoBragg's names the shape its way ("parallelpiped xtal: 5x5x5 cells")
    r"  \d+ sensor layers",
    r"  \d+ steps per pixel",
    r"max_I = \S+ at pixel \(slow \d+, fast \d+\)",  # nanoBragg's gives the position in metres
    r"wrote .+",  # nanoBragg's: "writing FILE as ..." before its statistics
    r"WARNING: out of range for three point interpolation at pixel .*",
)
EXIT_BAD_INPUT = 2


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


def _outputs(args: Arguments) -> Outputs:
    return Outputs(
        floatfile=args.floatfile, intfile=args.intfile,
        pgmfile=args.pgmfile if args.write_pgm else None,
        noisefile=args.noisefile if args.write_noise else None,
        int_scale=args.int_scale, pgm_scale=args.pgm_scale, adc=args.adc,
        noise_seed=args.noise_seed if args.noise_seed is not None else time_seed(),
    )


def _output_files(args: Arguments, outputs: Outputs) -> list[tuple[str, str]]:
    """(flag, path) of every file the run writes: the traces' JSON for a trace run, the images otherwise."""
    if args.trace_pixels:
        return [("--trace-json", args.trace_json)] if args.trace_json is not None else []
    named = [("-floatfile", outputs.floatfile), ("-intfile", outputs.intfile), ("-pgmfile", outputs.pgmfile),
             ("-noisefile", outputs.noisefile)]
    return [(flag, path) for flag, path in named if path is not None]


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


def _clock(seconds: float) -> str:
    """Seconds as m:ss, or h:mm:ss from an hour on."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class _Progress:
    """A progress bar on a terminal for runs longer than a few seconds (outside the engine)."""

    def __init__(self, enabled: bool, stream=sys.stderr, delay_s: float = 2.0):
        self.enabled = enabled and stream.isatty()
        self.stream, self.delay_s, self.start = stream, delay_s, time.monotonic()
        self.shown = False

    def __call__(self, fraction: float) -> None:
        elapsed = time.monotonic() - self.start if self.enabled else 0.0
        if not self.enabled or elapsed < self.delay_s:
            return
        width = 40
        filled = int(round(width * fraction))
        left = _clock(elapsed * (1 - fraction) / fraction) if fraction > 0 else "?"
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {100 * fraction:5.1f}%  "
                          f"{_clock(elapsed)} elapsed, {left} left ")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")


def output_paths(args: Arguments) -> list[tuple[str, str]]:
    """(flag, path) of every file a run of ``args`` writes."""
    return _output_files(args, _outputs(args))


def run(argv: list[str], out=None) -> int:
    """Parse, simulate, write; returns the exit status."""
    args, mask = parse_with_headers(argv)
    return run_parsed(args, mask, out)


def run_parsed(args: Arguments, mask: np.ndarray | None, out=None, *,
               build: Callable[[Arguments, np.ndarray | None], SimulationConfig] = build_config,
               prepare: Callable[..., Setup] | None = None) -> int:
    """Simulate and write what ``args`` (read by :func:`parse_with_headers`) asks; returns the exit status.

    ``build`` and ``prepare`` (default: :func:`~detsim.rendering.engine.prepare`) make the configuration and
    the setup; ``detsim batch`` passes versions that reuse an unchanged one.
    """
    out = sys.stdout if out is None else out
    if args.trace_json is not None and not args.trace_pixels:
        raise ConfigError("--trace-json needs at least one -trace_pixel S F")
    outputs = _outputs(args)
    safe_write.check_outputs(_output_files(args, outputs), args.input_files())
    config = build(args, mask)
    if args.trace_pixels:  # diagnosis run: print the traces (float64, CPU) and write no image
        from detsim.diagnostics.pixel_trace import trace_pixels

        trace_pixels(config, args.trace_pixels, out=out, json_path=args.trace_json)
        return 0
    import torch

    from detsim.rendering import engine

    dtype = torch.float32 if args.dtype == "float32" else torch.float64
    try:
        device = torch.device(args.device)
    except RuntimeError:
        raise ConfigError(f"-device: unknown device {args.device!r}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError("-device cuda: no CUDA device is available")
    if args.mode == "triton":
        try:
            engine.check_triton(device)
        except ValueError as exc:
            raise ConfigError(f"-mode triton: {exc}") from None
    setup = (engine.prepare if prepare is None else prepare)(config, device=device, dtype=dtype)
    print("\n".join(_summary(setup)), file=out)
    progress = _Progress(args.progress)
    image, info = engine.render(setup, chunk_pixels=args.chunk_pixels, progress=progress, mode=args.mode,
                         threads=args.threads)
    progress.close()
    _require_finite_image(image)
    if info.interpolation_switched_off_at is not None:
        s, f = info.interpolation_switched_off_at
        print(f"WARNING: out of range for three point interpolation at pixel (slow {s}, fast {f}); "
              "interpolation switched off from there on", file=out)
    write_outputs(setup, _float32_image(image), outputs, out)
    return 0


def _require_finite_image(image: torch.Tensor) -> None:
    """An image with NaN or infinite pixels comes from an impossible geometry: refuse it before writing."""
    import torch

    bad = ~torch.isfinite(image.detach())
    if bool(bad.any()):
        s, f = (int(i) for i in torch.nonzero(bad)[0])
        raise ConfigError(f"the simulation gives NaN or infinite values (first at pixel slow {s}, fast {f}): "
                          "the geometry or crystal is impossible in double precision")


def _float32_image(image: torch.Tensor) -> np.ndarray:
    """The image as the float32 every output is made from; a value beyond float32's range is refused."""
    values = image.detach().cpu().numpy()
    with np.errstate(over="ignore"):
        image32 = values.astype(np.float32)
    beyond = ~np.isfinite(image32)
    if beyond.any():
        s, f = (int(i) for i in np.argwhere(beyond)[0])
        raise ConfigError(f"the image's value at pixel slow {s}, fast {f} ({values[s, f]:g} photons) overflows the "
                          "float32 of the output images: a value on the command line is too large")
    return image32


def _roi_mask(setup: Setup) -> np.ndarray:
    """The -roi rectangle (masked pixels included: they count as 0 in the statistics, spec §6.2)."""
    det = setup.config.detector
    xmin, xmax, ymin, ymax = det.roi if det.roi is not None else (0, det.fpixels - 1, 0, det.spixels - 1)
    mask = np.zeros(det.shape, dtype=bool)
    mask[ymin:ymax + 1, xmin:xmax + 1] = True
    return mask


def write_outputs(setup: Setup, image: np.ndarray, outputs: Outputs, out) -> None:
    """Write float, int, PGM and noise images, all or none (spec §6.3), and report them in nanoBragg's order.

    Every image is staged to a temporary file first; the files are replaced only once all are written
    (:class:`~detsim.fileio.safe_write.StagedOutputs`), and the report is printed after that.
    """
    roi = _roi_mask(setup)
    mask = setup.config.detector.mask
    pixel_mask = None if mask is None else np.asarray(mask) != 0
    stats = image_files.image_statistics(image, roi, pixel_mask)
    s_max, f_max = np.unravel_index(int(np.argmax(np.where(roi, image, -np.inf))), image.shape)
    report = [f"max_I = {stats['max_I']:g} at pixel (slow {s_max}, fast {f_max})",
              f"mean= {stats['mean']:g} rms= {stats['rms']:g} rmsd= {stats['rmsd']:g}"]
    header = _header_fields(setup)
    with safe_write.StagedOutputs() as staged:
        staged.add(outputs.floatfile, image_files.float_image_writer(image))
        report.append(f"wrote {outputs.floatfile}")
        ints, scale = image_files.int_image(image, outputs.int_scale if outputs.int_scale > 0 else None, outputs.adc, roi)
        report.append(f"intfile_scale = {scale:g}")
        staged.add(outputs.intfile, smv.smv_writer(ints, header))
        report.append(f"wrote {outputs.intfile}")
        if outputs.pgmfile is not None:
            pgm, pgm_scale = image_files.pgm_image(image, outputs.pgm_scale if outputs.pgm_scale > 0 else None, scale, roi,
                                          pixel_mask)
            staged.add(outputs.pgmfile, image_files.pgm_writer(pgm, pgm_scale))
            report.append(f"pgm_scale = {pgm_scale:g}\nwrote {outputs.pgmfile}")
        if outputs.noisefile is not None:
            noisy, overloads = rng.poisson_noise_image(image, outputs.noise_seed, outputs.adc,
                                                       setup.config.detector.roi)
            staged.add(outputs.noisefile, smv.smv_writer(noisy, header))
            report.append(f"{int(noisy[roi].astype(np.int64).sum() - outputs.adc * roi.sum()):d} photons on noise "
                          f"image ({overloads} overloads)\nwrote {outputs.noisefile}")
    print("\n".join(report), file=out)


def _header_fields(setup: Setup) -> dict:
    geom, cfg = setup.geometry, setup.config
    pix0 = geom.pix0_m.detach().cpu().double()
    mm = 1e3
    return smv.smv_header_fields(
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
    asked = next((i for i, token in enumerate(argv) if token in HELP_FLAGS), None)
    if asked is not None:  # the tokens after the help flag name what to explain (flag_help)
        try:
            sys.stdout.write(help_text(argv[asked + 1:]))
        except ArgumentError as exc:
            print(f"detsim: error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        return 0
    try:
        with terminate_as_interrupt():  # SIGTERM unwinds like an interrupt: temporary files removed
            return run(argv)
    except (ArgumentError, ConfigError, InputError, safe_write.OutputError) as exc:
        return _bad_input(exc)
    except (OverflowError, ZeroDivisionError) as exc:  # a last resort: the checks name the flag where they can
        reason = exc.args[-1] if exc.args and isinstance(exc.args[-1], str) else str(exc)
        print(f"detsim: error: a number derived from the command line is out of double precision's range ({reason})",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:  # a write that failed after every check passed (disk full, a path removed meanwhile)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"detsim: error: cannot write {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except Terminated:
        print("detsim: terminated (SIGTERM); no file was left half-written", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("detsim: interrupted; no file was left half-written", file=sys.stderr)
        return 130
    except _input_file_errors() as exc:  # last: evaluated only for what no clause above took
        return _bad_input(exc)


def _bad_input(exc: Exception) -> int:
    print(f"detsim: error: {exc}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _input_file_errors() -> tuple[type[Exception], ...]:
    """The -hkl and -source files' errors (bad input), from their readers' modules: these import torch, and
    are imported by :func:`build_config` before either error can be raised."""
    from detsim.model.sources import SourceFileError
    from detsim.model.structure_factors import HKLError

    return HKLError, SourceFileError


if __name__ == "__main__":
    from detsim.host.shutdown import skip_final_collection

    skip_final_collection()
    sys.exit(main())


__all__ = ["main", "output_paths", "run", "run_parsed"]
