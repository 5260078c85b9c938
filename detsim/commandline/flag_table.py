"""nanoBragg's flags: which token sets which value, in nanoBragg's own order (spec §2). The reader of an
argument list that walks this table is :mod:`detsim.commandline.argv_reader`; the help drawn from it is
:mod:`detsim.commandline.usage`.

Each :class:`Handler` is one of nanoBragg's ``strstr`` tests on a ``-`` token: its pattern(s), how many
values it reads and what it does with them (an action on :class:`~detsim.commandline.arguments.Arguments`).
Order matters because the last assignment wins. A handler reads its values through :class:`Values`: strictly
for the flag a token was meant for, as C's ``atof``/``atoi`` for the side effects of the others.

A token can fire several handlers (``-misset_seed`` also sets the misset angles, ``-twotheta_axis`` also sets
two-theta, ``-mosaic_seed`` also sets the noise seed). The handler a token was *meant* for (the longest
pattern it matches) reads its values strictly: fewer values than its arity allows (:class:`Arity`: only
``-cell`` gives a short list a meaning), or a value that is not wholly a number in C's grammar
(:mod:`detsim.fileio.c_numbers`), is an error naming the flag. Side-effect handlers read their values as C's
``atof``/``atoi`` would.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from detsim.commandline.arguments import ArgumentError, Arguments
from detsim.fileio import c_numbers
from detsim.host.threads import MAX_THREADS
from detsim.model.config import (
    MIN_CELLS, MIN_MOSAIC_DOMAINS, MIN_NANOBRAGG_THREADS, MIN_OVERSAMPLE, MIN_PIXELS, Convention, CrystalShape, Pivot,
)


class Values:
    """Reads a handler's values: strictly for the handler the flag was meant for, like C otherwise.

    Strictly, a value must be a whole number in C's grammar (:func:`detsim.fileio.c_numbers.parse_float`), so that it
    is refused rather than read differently from nanoBragg, whose ``atof``/``atoi`` read a prefix of it.
    """

    def __init__(self, argv: list[str], i: int, flag: str, strict: bool):
        self.argv, self.i, self.flag, self.strict = argv, i, flag, strict

    def text(self, k: int = 1) -> str:
        return self.argv[self.i + k]

    def float(self, k: int = 1) -> float:
        text = self.argv[self.i + k]
        if not self.strict:
            return c_numbers.atof(text)
        value = c_numbers.parse_float(text)
        if value is None:
            raise ArgumentError(f"{self.flag} expects a number, got {text!r} "
                                f"(nanoBragg would read {c_numbers.atof(text)!r})")
        if not math.isfinite(value):
            raise ArgumentError(f"{self.flag} expects a finite number, got {text!r}")
        return value

    def int(self, k: int = 1) -> int:
        text = self.argv[self.i + k]
        if not self.strict:
            return c_numbers.atoi(text)
        value = c_numbers.parse_int(text)
        if value is None:
            raise ArgumentError(f"{self.flag} expects an integer, got {text!r} "
                                f"(nanoBragg would read {c_numbers.atoi(text)})")
        if not c_numbers.C_INT_MIN <= value <= c_numbers.C_INT_MAX:
            raise ArgumentError(f"{self.flag} expects an integer that fits a C int ({c_numbers.C_INT_MIN}.."
                                f"{c_numbers.C_INT_MAX}), got {text!r} (nanoBragg would read {c_numbers.atoi(text)})")
        return value

    def vec3(self) -> tuple[float, float, float]:
        return (self.float(1), self.float(2), self.float(3))


Action = Callable[[Arguments, Values], None]

GUARD = "nanoBragg.c L511-1115"  # every handler: 'argc > i+n', then the next n tokens through atof/atoi


@dataclass(frozen=True)
class Arity:
    """How many values a flag takes when typed, and what nanoBragg makes of a shorter list.

    ``most`` values are read; ``least`` is the fewest that nanoBragg gives a meaning on purpose (its
    ``fill`` says how it fills the rest), so a flag given fewer than ``least`` is refused: nanoBragg would
    skip its handler or read the next flag as a number, i.e. silently do something else. ``source``
    cites nanoBragg.c. ``word`` stands alone for all the values (``-misset random``); with
    ``ends_at_dash`` the values end at any token that starts with '-', numbers included (``-cell``).
    """

    most: int
    least: int | None = None
    fill: str = ""
    source: str = GUARD
    word: str | None = None
    ends_at_dash: bool = False

    @property
    def fewest(self) -> int:
        return self.most if self.least is None else self.least


@dataclass(frozen=True)
class Handler:
    pattern: str
    nargs: int  # tokens that must follow for nanoBragg to run the handler (its "argc > i + nargs" guard)
    action: Action
    exact: bool = False  # strcmp instead of strstr
    length: int | None = None  # required strlen of the token
    also: tuple[str, ...] = ()  # other patterns for the same handler
    stop: bool = False  # C 'continue': no later handler sees this token
    doc: str = ""  # "VALUES|what it does" for the usage text (VALUES empty for a switch)
    values: Arity | None = None  # the values the flag takes when typed, where that is not nargs

    @property
    def arity(self) -> Arity:
        """The values the flag takes when it is the one typed (:class:`Arity`)."""
        return self.values if self.values is not None else Arity(self.nargs)

    @property
    def takes(self) -> int:
        """How many values the flag reads when it is the one typed."""
        return self.arity.most

    def matches(self, token: str) -> bool:
        if self.length is not None and len(token) != self.length:
            return any(p in token for p in self.also)
        if self.exact:
            return token == self.pattern
        return self.pattern in token or any(p in token for p in self.also)

    def specificity(self, token: str) -> int:
        """Length of the longest of this handler's patterns found in ``token``."""
        return max(len(p) for p in (self.pattern, *self.also) if p in token)


def _set(name: str, kind: str = "float", scale: float = 1.0) -> Action:
    def action(a: Arguments, v: Values) -> None:
        value = v.int() if kind == "int" else v.float() * scale
        setattr(a, name, value)
    return action


CELL = Arity(6, least=1, ends_at_dash=True, source="nanoBragg.c L531-551 (reading), L1795-1800 (defaults)",
             fill="b and c left out or <= 0 are a, each angle left out or <= 0 is 90")


def cell_with_defaults(values: list[float]) -> tuple[float, ...]:
    """The six cell values as nanoBragg completes them (:data:`CELL`'s fill, nanoBragg.c L1795-1800).

    nanoBragg keeps what an earlier ``-cell`` set for values a later one leaves out (``values`` is that
    merged list), then calls what is still 0 or less blank: b and c take a, the angles 90 degrees.
    """
    a = values[0]
    given = list(values) + [0.0] * (CELL.most - len(values))
    return tuple(v if v > 0 else d for v, d in zip(given, (a, a, a, 90.0, 90.0, 90.0)))


def _cell(a: Arguments, v: Values) -> None:
    values = []
    for k in range(1, CELL.most + 1):  # as nanoBragg reads them: up to the next '-' token
        if v.i + k >= len(v.argv) or v.argv[v.i + k].startswith("-"):
            break
        values.append(v.float(k))
    a.cell = values + a.cell[len(values):]  # values left out keep what an earlier -cell set


def _misset(a: Arguments, v: Values) -> None:
    if "rand" in v.text():
        a.misset_random = True
        return
    if v.i + 3 >= len(v.argv):
        if v.strict:
            raise ArgumentError(f"{v.flag} expects 3 angles (deg) or 'random'")
        return
    a.misset_deg = v.vec3()
    a.misset_random = False


def _vector(key: str) -> Action:
    def action(a: Arguments, v: Values) -> None:
        a.convention = Convention.CUSTOM
        a.vectors[key] = v.vec3()
    return action


def _convention(conv: Convention, pivot: Pivot) -> Action:
    def action(a: Arguments, v: Values) -> None:
        a.convention, a.pivot = conv, pivot
    return action


def _pivot_setter(name: str, pivot: Pivot, scale: float = 1.0) -> Action:
    def action(a: Arguments, v: Values) -> None:
        setattr(a, name, v.float() * scale)
        a.pivot = pivot
    return action


def _pivot(a: Arguments, v: Values) -> None:
    text = v.text()
    if "sample" in text:
        a.pivot = Pivot.SAMPLE
    if "beam" in text:
        a.pivot = Pivot.BEAM
    if v.strict and "sample" not in text and "beam" not in text:
        raise ArgumentError(f"-pivot expects 'sample' or 'beam', got {text!r}")


def _detector_abs(a: Arguments, v: Values) -> None:
    if "inf" in v.text() or v.float() == 0.0:
        a.thick_um, a.mu_per_m = 0.0, 0.0  # spec §2.3 [QUIRK]: also zeroes the thickness
        return
    length_m = v.float() * 1e-6
    if length_m == 0.0 and v.strict:
        raise ArgumentError(f"{v.flag} {v.text()}: the attenuation 1 / ({v.text()} um) overflows double precision")
    a.mu_per_m = 1.0 / length_m if length_m else math.inf  # C's 1/0


def _twotheta(a: Arguments, v: Values) -> None:
    a.twotheta_deg = v.float()
    a.pivot = Pivot.SAMPLE


def _xtal_all(a: Arguments, v: Values) -> None:
    size = v.float()
    a.xtal_size_mm = [size, size, size]


def _xtal_axis(axis: int) -> Action:
    def action(a: Arguments, v: Values) -> None:
        a.xtal_size_mm[axis] = v.float()
    return action


def _detsize(a: Arguments, v: Values) -> None:
    a.detsize_f_mm = a.detsize_s_mm = v.float()


def _flag(name: str, value) -> Action:
    def action(a: Arguments, v: Values) -> None:
        setattr(a, name, value)
    return action


def _roi(a: Arguments, v: Values) -> None:
    a.roi = (v.int(1), v.int(2), v.int(3), v.int(4))


def _polar(a: Arguments, v: Values) -> None:
    a.polarization, a.nopolar = v.float(), False


def _divergence(a: Arguments, v: Values) -> None:
    a.hdivrange_mrad = a.vdivrange_mrad = v.float()


def _divsteps(a: Arguments, v: Values) -> None:
    a.hdivsteps = a.vdivsteps = v.int()


def _energy(a: Arguments, v: Values) -> None:
    energy = v.float()
    if v.strict and energy <= 0:
        raise ArgumentError(f"-energy must be > 0 eV, got {energy}")
    a.lambda_A = 12398.42 / energy if energy else math.inf


def _text(name: str) -> Action:
    def action(a: Arguments, v: Values) -> None:
        setattr(a, name, v.text())
    return action


def _output(name: str, switch: str | None = None) -> Action:
    def action(a: Arguments, v: Values) -> None:
        setattr(a, name, v.text())
        if switch:
            setattr(a, switch, True)
    return action


def _seed(name: str) -> Action:
    def action(a: Arguments, v: Values) -> None:
        value = v.int()
        limit = c_numbers.C_INT_MAX  # nanoBragg negates the seed it reads into a C int
        if abs(value) > limit:
            if v.strict:
                raise ArgumentError(f"{v.flag} must lie in -{limit}..{limit} (a C int that can be negated), "
                                    f"got {value}")
            return  # the flag's own handler refuses the value
        setattr(a, name, value)
    return action


def _int_at_least(minimum: int, *names: str, note: str = "") -> Action:
    """Set the int fields ``names``; for the flag's own handler, a value below ``minimum`` is an error."""
    def action(a: Arguments, v: Values) -> None:
        value = v.int()
        if v.strict and value < minimum:
            raise ArgumentError(f"{v.flag} must be >= {minimum}{note}, got {value}")
        for name in names:
            setattr(a, name, value)
    return action


def _threads(a: Arguments, v: Values) -> None:
    value = v.int()
    if v.strict and not 1 <= value <= MAX_THREADS:
        raise ArgumentError(f"{v.flag} must be from 1 to {MAX_THREADS}, got {value}")
    a.threads = value


def _oversample(a: Arguments, v: Values) -> None:
    value = v.int()
    if v.strict and value < 0:  # nanoBragg would silently select the automatic value
        raise ArgumentError(f"{v.flag} must be >= {MIN_OVERSAMPLE} (or 0 to select it automatically), got {value}")
    a.oversample = value


def _positive_int(name: str) -> Action:  # detsim's own counts: -chunk_pixels
    return _int_at_least(1, name)


def _pgmscale(a: Arguments, v: Values) -> None:
    a.pgm_scale, a.write_pgm = v.float(), True


def _noop(a: Arguments, v: Values) -> None:
    return None


def _trace(a: Arguments, v: Values) -> None:
    a.trace_pixels.append((v.int(1), v.int(2)))


def _choice(name: str, options: tuple[str, ...]) -> Action:
    def action(a: Arguments, v: Values) -> None:
        text = v.text()
        if text not in options:
            raise ArgumentError(f"{v.flag} expects one of {', '.join(options)}, got {text!r}")
        setattr(a, name, text)
    return action


H = Handler
# nanoBragg's handlers in its own order (spec §2); order matters because the last assignment wins.
HANDLERS: tuple[Handler, ...] = (
    H("-Na", 1, _set("Na", "int"), stop=True, doc="N|unit cells along a"),
    H("-Nb", 1, _set("Nb", "int"), stop=True, doc="N|unit cells along b"),
    H("-Nc", 1, _set("Nc", "int"), stop=True, doc="N|unit cells along c"),
    H("-N", 1, _int_at_least(MIN_CELLS, "Na", "Nb", "Nc", note=" (0 and 1 both mean one cell)"), exact=True, stop=True, doc="N|unit cells along a, b and c"),
    H("-cell", 1, _cell, values=CELL, doc="a [b c al be ga]|unit cell (Å, degrees)"),
    H("-misset", 1, _misset, values=Arity(3, word="rand", source="nanoBragg.c L553-567"),
      doc="x y z | random|misset rotations about lab x, y, z (degrees), or random"),
    H("-samplesize", 1, _xtal_all, also=("-sample_size",), doc="mm|crystal size along x, y and z (sets N)"),
    H("-sample_thick", 1, _xtal_axis(0), also=("-sample_x",), doc="mm|crystal size along x"),
    H("-sample_width", 1, _xtal_axis(1), also=("-sample_y", "-width"), doc="mm|crystal size along y"),
    H("-sample_heigh", 1, _xtal_axis(2), also=("-sample_z", "-heigh"), doc="mm|crystal size along z (-sample_height)"),
    H("-xtalsize", 1, _xtal_all, also=("-xtal_size",), doc="mm|crystal size along x, y and z (sets N)"),
    H("-xtal_thick", 1, _xtal_axis(0), also=("-xtal_x",), doc="mm|crystal size along x"),
    H("-xtal_width", 1, _xtal_axis(1), also=("-xtal_y", "-width"), doc="mm|crystal size along y"),
    H("-xtal_heigh", 1, _xtal_axis(2), also=("-xtal_z", "-heigh"), doc="mm|crystal size along z (-xtal_height)"),
    H("-density", 1, _noop, also=("-sample_den",), doc="g/cm3|accepted and ignored, as by nanoBragg"),
    H("-MW", 1, _noop, exact=True, doc="Da|accepted and ignored, as by nanoBragg"),
    H("-molec", 1, _noop, doc="n|accepted and ignored, as by nanoBragg"),
    H("-Xbeam", 1, _pivot_setter("xbeam_mm", Pivot.BEAM), doc="mm|beam centre (BEAM pivot)"),
    H("-Ybeam", 1, _pivot_setter("ybeam_mm", Pivot.BEAM), doc="mm|beam centre (BEAM pivot)"),
    H("-Xclose", 1, _pivot_setter("xclose_mm", Pivot.SAMPLE), doc="mm|point of the detector closest to the sample (SAMPLE pivot)"),
    H("-Yclose", 1, _pivot_setter("yclose_mm", Pivot.SAMPLE), doc="mm|point of the detector closest to the sample (SAMPLE pivot)"),
    H("-ORGX", 1, _pivot_setter("orgx_px", Pivot.SAMPLE), doc="px|XDS origin (SAMPLE pivot)"),
    H("-ORGY", 1, _pivot_setter("orgy_px", Pivot.SAMPLE), doc="px|XDS origin (SAMPLE pivot)"),
    H("-pivot", 1, _pivot, doc="sample|beam|detector pivot for rotations"),
    H("-mosflm", 0, _convention(Convention.MOSFLM, Pivot.BEAM), doc="|MOSFLM convention (default)"),
    H("-xds", 0, _convention(Convention.XDS, Pivot.SAMPLE), doc="|XDS convention"),
    H("-adxv", 0, _convention(Convention.ADXV, Pivot.BEAM), doc="|ADXV convention"),
    H("-denzo", 0, _convention(Convention.DENZO, Pivot.BEAM), doc="|DENZO convention"),
    H("-dials", 0, _convention(Convention.DIALS, Pivot.BEAM), doc="|DIALS convention"),
    H("-fdet_vector", 3, _vector("fdet"), doc="x y z|fast detector axis (CUSTOM)"),
    H("-sdet_vector", 3, _vector("sdet"), doc="x y z|slow detector axis (CUSTOM)"),
    H("-odet_vector", 3, _vector("odet"), doc="x y z|detector normal (CUSTOM)"),
    H("-beam_vector", 3, _vector("beam"), doc="x y z|beam direction (CUSTOM)"),
    H("-polar_vector", 3, _vector("polar"), doc="x y z|polarization axis (CUSTOM)"),
    H("-spindle_axis", 3, _vector("spindle"), doc="x y z|spindle axis (CUSTOM)"),
    H("-twotheta_axis", 3, _vector("twotheta_axis"), doc="x y z|two-theta axis (CUSTOM; also sets -twotheta)"),
    H("-pix0_vector", 3, _vector("pix0"), doc="x y z|sets CUSTOM, otherwise no effect (as nanoBragg)"),  # spec §2.3: sets CUSTOM, otherwise no effect
    H("-distance", 1, _pivot_setter("distance_mm", Pivot.BEAM), doc="mm|sample to beam spot (BEAM pivot; default 100)"),
    H("-close_distance", 1, _pivot_setter("close_distance_mm", Pivot.SAMPLE), doc="mm|sample to detector plane (SAMPLE pivot)"),
    H("-detector_abs", 1, _detector_abs, doc="um|inf|sensor attenuation length"),
    H("-detector_thick", 1, _set("thick_um"), length=15, doc="um|sensor thickness"),
    H("-detector_thicksteps", 1, _set("thicksteps", "int"), doc="n|sensor layers"),
    H("-thicksteps", 1, _set("thicksteps", "int"), doc="n|sensor layers"),
    H("-twotheta", 1, _twotheta, doc="deg|detector two-theta (SAMPLE pivot)"),
    H("-detector_rotx", 1, lambda a, v: a.rot_deg.__setitem__(0, v.float()), doc="deg|detector rotation about x"),
    H("-detector_roty", 1, lambda a, v: a.rot_deg.__setitem__(1, v.float()), doc="deg|detector rotation about y"),
    H("-detector_rotz", 1, lambda a, v: a.rot_deg.__setitem__(2, v.float()), doc="deg|detector rotation about z"),
    H("-detsize", 1, _detsize, length=8, doc="mm|detector size (default 102.4)"),
    H("-detsize_f", 1, _set("detsize_f_mm"), doc="mm|detector size along fast"),
    H("-detsize_s", 1, _set("detsize_s_mm"), doc="mm|detector size along slow"),
    H("-detpixels", 1, _int_at_least(MIN_PIXELS, "fpixels", "spixels"), length=10, doc="n|detector pixels along fast and slow"),
    H("-detpixels_f", 1, _int_at_least(MIN_PIXELS, "fpixels"), also=("-detpixels_x",), doc="n|detector pixels along fast"),
    H("-detpixels_s", 1, _int_at_least(MIN_PIXELS, "spixels"), also=("-detpixels_y",), doc="n|detector pixels along slow"),
    H("-curved_det", 1, _flag("curved", True), doc="any|spherical detector (needs a token after it, ignored unless a flag)"),
    H("-pixel", 1, _set("pixel_mm"), doc="mm|pixel size (default 0.1)"),
    H("-point_pixel", 0, _flag("point_pixel", True), doc="|solid angle of a point pixel"),
    H("-polar", 1, _polar, length=6, doc="k|Kahn polarization factor"),
    H("-nopolar", 0, _flag("nopolar", True), doc="|no polarization correction"),
    H("-oversample_thick", 0, _flag("oversample_thick", True), stop=True, doc="|sensor absorption per subpixel"),
    H("-oversample_polar", 0, _flag("oversample_polar", True), stop=True, doc="|polarization per subpixel"),
    H("-oversample_omega", 0, _flag("oversample_omega", True), stop=True, doc="|solid angle per subpixel"),
    H("-oversample", 1, _oversample, doc="n|subpixels per pixel edge (0: automatic, the default)"),
    H("-roi", 4, _roi, doc="xmin xmax ymin ymax|render only this pixel rectangle"),
    H("-lambda", 1, _set("lambda_A"), also=("-wave",), doc="Å|wavelength (default 1)"),
    H("-energy", 1, _energy, doc="eV|photon energy (sets the wavelength)"),
    H("-fluence", 1, _set("fluence"), doc="1/m2|photons per area"),
    H("-flux", 1, _set("flux"), doc="1/s|photons per second"),
    H("-exposure", 1, _set("exposure_s"), doc="s|exposure time"),
    H("-beamsize", 1, _set("beamsize_mm"), doc="mm|beam size"),
    H("-mosaic", 1, _set("mosaic_spread_deg"), length=7, also=("-mosaici", "-mosaic_spr"), doc="deg|mosaic spread"),
    H("-mosaic_dom", 1, _int_at_least(MIN_MOSAIC_DOMAINS, "mosaic_domains"), doc="n|mosaic domains (needs -mosaic)"),
    H("-dispersion", 1, _set("dispersion_pct"), doc="%|spectral dispersion"),
    H("-dispsteps", 1, _set("dispsteps", "int"), doc="n|wavelength steps"),
    H("-divergence", 1, _divergence, doc="mrad|horizontal and vertical divergence"),
    H("-hdivrange", 1, _set("hdivrange_mrad"), doc="mrad|horizontal divergence"),
    H("-vdivrange", 1, _set("vdivrange_mrad"), doc="mrad|vertical divergence"),
    H("-hdivstep", 1, _set("hdivstep_mrad"), length=9, doc="mrad|horizontal divergence step"),
    H("-hdivsteps", 1, _set("hdivsteps", "int"), doc="n|horizontal divergence steps"),
    H("-vdivstep", 1, _set("vdivstep_mrad"), length=9, doc="mrad|vertical divergence step"),
    H("-vdivsteps", 1, _set("vdivsteps", "int"), doc="n|vertical divergence steps"),
    H("-divsteps", 1, _divsteps, doc="n|divergence steps, both directions"),
    H("-round_div", 0, _flag("round_div", True), doc="|elliptical divergence (default)"),
    H("-square_div", 0, _flag("round_div", False), doc="|rectangular divergence"),
    H("-adc", 1, _set("adc"), doc="counts|ADC offset of the SMV images (default 40)"),
    H("-phi", 1, _set("phi0_deg"), length=4, doc="deg|starting spindle angle"),
    H("-osc", 1, _set("osc_deg"), doc="deg|oscillation range"),
    H("-phistep", 1, _set("phistep_deg"), length=8, doc="deg|spindle step"),
    H("-phisteps", 1, _set("phisteps", "int"), doc="n|spindle steps"),
    H("-dmin", 1, _set("dmin_A"), doc="Å|resolution limit"),
    H("-mat", 1, _text("matrix_file"), doc="file|MOSFLM orientation matrix"),
    H("-hkl", 1, _text("hkl_file"), doc="file|h k l F structure factors"),
    H("-default_F", 1, _set("default_F"), doc="F|structure factor of unlisted reflections"),
    H("-dump", 1, _noop, doc="file|accepted and ignored"),
    H("-img", 1, _text("img_file"), doc="file|SMV image whose header sets the geometry"),
    H("-mask", 1, _text("mask_file"), doc="file|SMV mask: zero pixels are skipped"),
    H("-stolout", 1, _noop, doc="file|accepted and ignored"),
    H("-stol", 1, _text("stol_file"), length=5, doc="file|checked to exist (background not simulated)"),
    H("-4stol", 1, _text("stol_file"), length=6, doc="file|as -stol"),
    H("-Q", 1, _text("stol_file"), length=2, doc="file|as -stol"),
    H("-sourcefile", 1, _text("source_file"), doc="file|X Y Z I lambda per source"),
    H("-floatfile", 1, _output("floatfile"), also=("-floatimage",), doc="file|raw float32 image (default floatimage.bin)"),
    H("-intfile", 1, _output("intfile"), also=("-intimage",), doc="file|SMV image (default intimage.img)"),
    H("-pgmfile", 1, _output("pgmfile", "write_pgm"), also=("-pgmimage",), doc="file|PGM image (default image.pgm)"),
    H("-noisefile", 1, _output("noisefile", "write_noise"), also=("-noiseimage",), doc="file|SMV image with Poisson noise (default noiseimage.img)"),
    H("-nonoise", 0, _flag("write_noise", False), doc="|no noise image"),
    H("-nopgm", 0, _flag("write_pgm", False), doc="|no PGM image"),
    H("-scale", 1, _set("int_scale"), doc="counts|intfile counts per photon"),
    H("-pgmscale", 1, _pgmscale, doc="grey|PGM grey levels per photon"),
    H("-coherent", 0, _noop, doc="|accepted and ignored"),
    H("-printout", 0, _noop, doc="|accepted and ignored"),
    H("-noprogress", 0, _flag("progress", False), doc="|no progress bar"),
    H("-progress", 0, _flag("progress", True), doc="|progress bar"),
    H("-interpolate", 0, _flag("interpolate", True), doc="|tricubic interpolation of F"),
    H("-nointerpolate", 0, _flag("interpolate", False), doc="|no interpolation of F"),
    H("-round_xtal", 0, _flag("shape", CrystalShape.ROUND), doc="|spherical crystal"),
    H("-square_xtal", 0, _flag("shape", CrystalShape.SQUARE), doc="|parallelepiped crystal (default)"),
    H("-gauss_xtal", 0, _flag("shape", CrystalShape.GAUSS), doc="|Gaussian crystal"),
    H("-binary_spots", 0, _flag("shape", CrystalShape.TOPHAT), also=("-tophat_spots",), doc="|top-hat spots"),
    H("-fudge", 1, _set("fudge"), doc="x|shape factor fudge"),
    H("-printout_pixel", 2, _noop, doc="f s|accepted and ignored"),
    H("-seed", 1, _seed("noise_seed"), doc="n|noise seed (C int)"),
    H("-mosaic_seed", 1, _seed("mosaic_seed"), doc="n|mosaic domain seed (C int)"),
    H("-misset_seed", 1, _seed("misset_seed"), doc="n|random misset seed (C int; also sets -misset)"),
    H("-water", 1, _set("water_um"), doc="um|water background thickness"),
    # detsim's own options; none of their names contains a nanoBragg pattern.
    H("-dtype", 1, _choice("dtype", ("float64", "float32")), exact=True, doc="float64|float32|precision (default float64)"),
    H("-device", 1, _text("device"), exact=True, doc="cpu|cuda|torch device (default cpu)"),
    H("-chunk_pixels", 1, _positive_int("chunk_pixels"), exact=True, doc="n|pixels per chunk (default: from free memory)"),
    H("-physical_phi", 0, _flag("physical_phi", True), exact=True, doc="|render phi = 0 as phi = 0 (not nanoBragg's stale step)"),
    H("-nanobragg_threads", 1, _int_at_least(MIN_NANOBRAGG_THREADS, "nanobragg_threads"), exact=True, doc="n|reproduce the first pixel of each of nanoBragg's n OpenMP threads (default 1)"),
    H("-mode", 1, _choice("mode", ("eager", "compiled", "triton")), exact=True, doc="eager|compiled|triton|execution path (default eager)"),
    H("-threads", 1, _threads, exact=True, doc="n|CPU workers sharing the pixels, processes on Linux (default: OMP_NUM_THREADS, else torch's choice)"),
    H("-trace_pixel", 2, _trace, exact=True, doc="s f|print the intermediate values of a pixel; write no image"),
    H("--trace-json", 1, _text("trace_json"), exact=True, doc="file|also write the traces as JSON"),
)
