"""Typed simulation configuration.

A simulation is described by four frozen dataclasses, grouped in :class:`SimulationConfig`:

* :class:`BeamConfig` - wavelength, fluence, sources (divergence, dispersion, source list), polarization.
* :class:`DetectorConfig` - convention, geometry, sensor thickness, region of interest.
* :class:`CrystalConfig` - unit cell or orientation matrix, misset, size, lattice shape, structure
  factors, mosaicity, background water.
* :class:`SamplingConfig` - oversampling and its per-subpixel flags, spindle sweep.

Fields carry the units a nanoBragg user types (mm, Angstrom, degrees, mrad, percent, micrometres) in
their names; :mod:`detsim.model.geometry`, :mod:`detsim.model.crystal` and :mod:`detsim.model.sources` convert them once
to the internal SI units (spec §1). Step counts follow nanoBragg's range/step/count rules (spec §5.3):
a ``None`` field means "not given", exactly like an unset nanoBragg flag.

Values are validated here, at the edge (``__post_init__``): first each field's type (:data:`TAKES`: a
number field takes a Python or NumPy number or a 0-d tensor, which may carry a gradient; a count takes an
int; ``hkl`` an :class:`~detsim.model.structure_factors.HKLTable`), then its range, with the same limits as
the command line (the ``MIN_*`` constants, which :mod:`detsim.commandline.flag_table` imports). Errors are
:class:`ConfigError` with a one-line message naming the field or flag.
"""

from __future__ import annotations

import math
import numbers
import sys
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Callable, TypeVar

from detsim.errors import ConfigError  # noqa: F401 - the model's error, defined below every sub-package
from detsim.fileio.c_numbers import C_INT_MAX
from detsim.model.units import DEFAULT_FLUENCE_PER_M2, deg_to_rad

Vec3 = tuple[float, float, float]
T = TypeVar("T")
FLOAT32_OVERFLOW = 2.0**128 - 2.0**103  # doubles from here up round to an infinite float32

# The least value of each count, for this module and the command line's flags alike
MIN_CELLS = 0  # -N, -Na, -Nb, -Nc: 0 and 1 both mean one cell
MIN_PIXELS = 1  # -detpixels, -detpixels_f, -detpixels_s
MIN_MOSAIC_DOMAINS = 1  # -mosaic_dom
MIN_OVERSAMPLE = 1  # -oversample (the command line's 0 is "automatic": None here)
MIN_NANOBRAGG_THREADS = 1  # -nanobragg_threads
MIN_STEPS = 0  # -hdivsteps, -vdivsteps, -dispsteps, -phisteps, -detector_thicksteps


class Convention(Enum):
    """Detector/beam frame convention (spec §3.1)."""

    MOSFLM = "mosflm"
    DENZO = "denzo"
    ADXV = "adxv"
    XDS = "xds"
    DIALS = "dials"
    CUSTOM = "custom"


class Pivot(Enum):
    """Point the detector rotates about (spec §3.3)."""

    BEAM = "beam"
    SAMPLE = "sample"


class CrystalShape(Enum):
    """Lattice (spot) shape model (spec §5.6)."""

    SQUARE = "square"
    ROUND = "round"
    GAUSS = "gauss"
    TOPHAT = "tophat"


def as_float(value) -> float:
    """A Python float from a number or a 0-d tensor (which may carry a gradient)."""
    return float(value.detach()) if hasattr(value, "detach") else float(value)


def derived(what: str, compute: Callable[[], T]) -> T:
    """A quantity derived from the configuration, refused naming ``what`` when double precision cannot hold it.

    Where C's arithmetic gives an infinity, Python raises: OverflowError for a power or for an infinity made
    an integer, ZeroDivisionError for a divisor that underflowed to 0. Those, and a float result that is not
    finite, raise :class:`ConfigError` "``what`` overflows double precision".
    """
    try:
        value = compute()
    except (OverflowError, ZeroDivisionError):
        value = math.inf
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{what} overflows double precision")
    return value


def _finite(name: str, value: float | None) -> None:
    if value is not None and not math.isfinite(as_float(value)):
        raise ConfigError(f"{name} must be a finite number, got {value}")


def _positive(name: str, value: float | None) -> None:
    _finite(name, value)
    if value is not None and value <= 0:
        raise ConfigError(f"{name} must be > 0, got {value}")


def _vector(name: str, value: Vec3 | None) -> None:
    if value is None:
        return
    if len(value) != 3:
        raise ConfigError(f"{name} needs 3 components, got {len(value)}")
    for v in value:
        _finite(name, v)
    if all(v == 0 for v in value):
        raise ConfigError(f"{name} must not be the zero vector")


def _count(name: str, value: int | None, minimum: int = 0) -> None:
    if value is not None and value < minimum:
        raise ConfigError(f"{name} must be >= {minimum}, got {value}")


def _is_scalar_tensor(value) -> bool:
    return hasattr(value, "detach") and getattr(value, "ndim", None) == 0


def _is_number(value) -> bool:
    return (isinstance(value, numbers.Real) and not isinstance(value, bool)) or _is_scalar_tensor(value)


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _numbers(n: int) -> Callable[[object], bool]:
    def accepts(value) -> bool:
        return not isinstance(value, (str, bytes)) and _has_len(value, n) and all(_is_number(v) for v in value)
    return accepts


def _ints(n: int) -> Callable[[object], bool]:
    def accepts(value) -> bool:
        return not isinstance(value, (str, bytes)) and _has_len(value, n) and all(_is_int(v) for v in value)
    return accepts


def _has_len(value, n: int) -> bool:
    try:
        return len(value) == n
    except TypeError:
        return False


def _is_hkl_table(value) -> bool:
    # only an HKLTable made by the (torch-importing) structure_factors module qualifies: if that module is not
    # loaded, no HKLTable exists, and this module stays free of torch
    module = sys.modules.get("detsim.model.structure_factors")
    return module is not None and isinstance(value, module.HKLTable)


def _is_sources(value) -> bool:
    return isinstance(value, tuple) and all(isinstance(v, SourcePoint) for v in value)


def _is_2d_array(value) -> bool:
    return len(tuple(getattr(value, "shape", ()))) == 2


@dataclass(frozen=True)
class Takes:
    """What a configuration field takes: ``what`` in words (for the message), ``accepts`` the test."""

    what: str
    accepts: Callable[[object], bool]
    optional: bool = False  # None is accepted too ("not given")


NUMBER = Takes("a number (int, float or a 0-d tensor)", _is_number)
OPTIONAL_NUMBER = Takes(NUMBER.what, _is_number, optional=True)
INT = Takes("an int", _is_int)
OPTIONAL_INT = Takes(INT.what, _is_int, optional=True)
CELLS = Takes("a whole number (an int, or a 0-d tensor to differentiate)", lambda v: _is_int(v) or _is_scalar_tensor(v))
SWITCH = Takes("True or False", lambda v: isinstance(v, bool))
VEC3 = Takes("3 numbers (a tuple of ints, floats or 0-d tensors)", _numbers(3))
OPTIONAL_VEC3 = Takes(VEC3.what, _numbers(3), optional=True)


def _enum(kind: type[Enum]) -> Takes:
    return Takes(f"a {kind.__name__} ({', '.join(f'{kind.__name__}.{m.name}' for m in kind)})",
                 lambda v: isinstance(v, kind))


def _shown(value) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def check_types(config: object, takes: dict[str, Takes]) -> None:
    """Refuse, naming the field and what it takes, the first field of ``config`` whose value ``takes`` rejects."""
    for item in fields(config):
        value, rule = getattr(config, item.name), takes[item.name]
        if value is None and rule.optional:
            continue
        if not rule.accepts(value):
            optional = " or None" if rule.optional else ""
            raise ConfigError(f"{type(config).__name__}.{item.name} takes {rule.what}{optional}, "
                              f"got {_shown(value)}")


@dataclass(frozen=True)
class SourcePoint:
    """One explicit source (a ``-sourcefile`` row, spec §5.2).

    Attributes:
        position_m: source position relative to the sample (m); only its direction matters.
        lambda_A: wavelength (Angstrom).
    """

    position_m: Vec3
    lambda_A: float

    def __post_init__(self) -> None:
        check_types(self, SOURCE_TAKES)
        _vector("source position", self.position_m)
        _positive("source wavelength", self.lambda_A)


@dataclass(frozen=True)
class BeamConfig:
    """Incident beam (spec §2.2, §5.2).

    The divergence grid and dispersion use nanoBragg's range/step/count triples; ``None`` means the flag
    was not given. ``sources`` (a source file) replaces the grid entirely.
    """

    lambda_A: float = 1.0
    fluence_per_m2: float = DEFAULT_FLUENCE_PER_M2
    flux_per_s: float = 0.0  # if > 0 with exposure > 0: fluence = flux * exposure / beamsize^2 (spec §1)
    exposure_s: float = 1.0
    beamsize_mm: float = 0.1
    hdivrange_mrad: float | None = None
    hdivstep_mrad: float | None = None
    hdivsteps: int | None = None
    vdivrange_mrad: float | None = None
    vdivstep_mrad: float | None = None
    vdivsteps: int | None = None
    round_div: bool = True
    dispersion_pct: float = 0.0
    dispsteps: int | None = None
    sources: tuple[SourcePoint, ...] | None = None
    polarization_kahn: float = 0.0
    nopolar: bool = False
    beam_vector: Vec3 | None = None  # CUSTOM convention only (spec §3.1)
    polar_vector: Vec3 | None = None  # CUSTOM convention only

    def __post_init__(self) -> None:
        check_types(self, BEAM_TAKES)
        _positive("lambda_A (-lambda/-energy)", self.lambda_A)
        _finite("fluence (-fluence)", self.fluence_per_m2)
        if self.fluence_per_m2 < 0:
            raise ConfigError(f"fluence (-fluence) must be >= 0, got {self.fluence_per_m2}")
        for name in ("flux_per_s", "exposure_s", "dispersion_pct", "polarization_kahn"):
            _finite(name, getattr(self, name))
        _positive("beamsize (-beamsize)", self.beamsize_mm)
        for name in ("hdivrange_mrad", "hdivstep_mrad", "vdivrange_mrad", "vdivstep_mrad"):
            _finite(name, getattr(self, name))
        for name in ("hdivsteps", "vdivsteps", "dispsteps"):
            _count(name, getattr(self, name), MIN_STEPS)
        if self.sources is not None and len(self.sources) == 0:
            raise ConfigError("sources: the source list is empty")
        _vector("beam_vector (-beam_vector)", self.beam_vector)
        _vector("polar_vector (-polar_vector)", self.polar_vector)

    @property
    def effective_fluence_per_m2(self) -> float:
        """Fluence after the flux/exposure/beamsize rule (spec §1): flux overrides -fluence."""
        if self.flux_per_s != 0.0 and self.exposure_s > 0.0:
            beamsize_m = self.beamsize_mm * 1e-3
            return self.flux_per_s * self.exposure_s / beamsize_m**2
        return self.fluence_per_m2


@dataclass(frozen=True)
class DetectorConfig:
    """Flat (or curved) pixel-array detector (spec §2.3, §3).

    Beam-centre inputs follow nanoBragg: ``xbeam_mm``/``ybeam_mm`` are used by the BEAM pivot,
    ``orgx_px``/``orgy_px`` (1-based pixels) and ``xclose_mm``/``yclose_mm`` by the SAMPLE pivot; unset
    values take the convention's default (spec §3.1). ``pivot`` only matters for CUSTOM: every other
    convention forces its own pivot.
    """

    convention: Convention = Convention.MOSFLM
    pivot: Pivot = Pivot.BEAM
    fpixels: int = 1024
    spixels: int = 1024
    pixel_mm: float = 0.1
    detsize_f_mm: float | None = None  # raw -detsize (used for default beam centres); None = pixels * pixel
    detsize_s_mm: float | None = None
    distance_mm: float = 100.0
    close_distance_mm: float | None = None
    xbeam_mm: float | None = None
    ybeam_mm: float | None = None
    xclose_mm: float | None = None
    yclose_mm: float | None = None
    orgx_px: float | None = None
    orgy_px: float | None = None
    rotx_deg: float = 0.0
    roty_deg: float = 0.0
    rotz_deg: float = 0.0
    twotheta_deg: float = 0.0
    twotheta_axis: Vec3 | None = None  # CUSTOM only; not normalized (spec §2.3)
    fdet_vector: Vec3 | None = None  # CUSTOM only
    sdet_vector: Vec3 | None = None
    odet_vector: Vec3 | None = None
    curved: bool = False
    point_pixel: bool = False
    thick_um: float = 0.0
    thicksteps: int | None = None
    mu_per_m: float | None = None  # sensor attenuation coefficient; None = 1/thickness (spec §5.3)
    roi: tuple[int, int, int, int] | None = None  # xmin, xmax, ymin, ymax: fast/slow, 0-based, inclusive
    mask: object | None = field(default=None, compare=False, repr=False)  # (slow, fast) array; 0 = skip pixel

    def __post_init__(self) -> None:
        check_types(self, DETECTOR_TAKES)
        _count("fpixels (-detpixels_f)", self.fpixels, MIN_PIXELS)
        _count("spixels (-detpixels_s)", self.spixels, MIN_PIXELS)
        _positive("pixel size (-pixel)", self.pixel_mm)
        _positive("detector size (-detsize_f)", self.detsize_f_mm)
        _positive("detector size (-detsize_s)", self.detsize_s_mm)
        _positive("distance (-distance)", self.distance_mm)
        _positive("close distance (-close_distance)", self.close_distance_mm)
        for name in (
            "xbeam_mm", "ybeam_mm", "xclose_mm", "yclose_mm", "orgx_px", "orgy_px",
            "rotx_deg", "roty_deg", "rotz_deg", "twotheta_deg", "mu_per_m",
        ):
            _finite(name, getattr(self, name))
        _finite("thick_um (-detector_thick)", self.thick_um)
        if self.thick_um < 0:
            raise ConfigError(f"sensor thickness (-detector_thick) must be >= 0, got {self.thick_um}")
        _count("thicksteps (-detector_thicksteps)", self.thicksteps, MIN_STEPS)
        for name in ("twotheta_axis", "fdet_vector", "sdet_vector"):
            _vector(name, getattr(self, name))
        if self.odet_vector is not None:
            _vector("odet_vector", self.odet_vector)
        if self.roi is not None:
            xmin, xmax, ymin, ymax = self.roi
            if not (0 <= xmin <= xmax < self.fpixels and 0 <= ymin <= ymax < self.spixels):
                raise ConfigError(
                    f"-roi {xmin} {xmax} {ymin} {ymax} lies outside the {self.fpixels}x{self.spixels} detector "
                    f"(need 0 <= xmin <= xmax < {self.fpixels} and 0 <= ymin <= ymax < {self.spixels})"
                )

        if self.mask is not None and tuple(getattr(self.mask, "shape", ())) != (self.spixels, self.fpixels):
            raise ConfigError(
                f"-mask image is {tuple(getattr(self.mask, 'shape', ()))} (slow, fast) but the detector is "
                f"{(self.spixels, self.fpixels)}"
            )

    @property
    def shape(self) -> tuple[int, int]:
        """Image shape (slow, fast)."""
        return (self.spixels, self.fpixels)


@dataclass(frozen=True)
class CrystalConfig:
    """Crystal, structure factors and sample (spec §2.1, §4).

    Exactly one of ``cell`` and ``a_matrix`` is usually given; with both, the matrix orientation is kept
    and the cell lengths are forced (spec §4.2). ``a_matrix`` holds the first 9 numbers of a MOSFLM
    matrix file, row-wise (rows x, y, z; columns a*, b*, c*), wavelength folded in.
    """

    cell: tuple[float, float, float, float, float, float] | None = None  # a b c (A), alpha beta gamma (deg)
    a_matrix: tuple[float, ...] | None = None
    misset_deg: Vec3 = (0.0, 0.0, 0.0)
    misset_random: bool = False
    misset_seed: int = 0
    Na: int = 1
    Nb: int = 1
    Nc: int = 1
    xtal_size_mm: Vec3 = (0.0, 0.0, 0.0)  # x, y, z sizes; a size > 0 sets N = ceil(size/|axis|)
    shape: CrystalShape = CrystalShape.SQUARE
    fudge: float = 1.0
    default_F: float = 0.0
    hkl: object | None = None  # detsim.model.structure_factors.HKLTable
    interpolate: bool | None = None  # None: automatic (spec §2.1)
    mosaic_spread_deg: float = 0.0
    mosaic_domains: int | None = None
    mosaic_seed: int = 12345678
    spindle_axis: Vec3 | None = None  # CUSTOM only
    dmin_A: float = 0.0
    water_um: float = 0.0

    def __post_init__(self) -> None:
        check_types(self, CRYSTAL_TAKES)
        if self.cell is None and self.a_matrix is None:
            raise ConfigError("a unit cell (-cell) or an orientation matrix (-mat) is required")
        if self.cell is not None:
            if len(self.cell) != 6:
                raise ConfigError(f"-cell needs a b c alpha beta gamma, got {len(self.cell)} values")
            for v in self.cell:
                _finite("-cell", v)
            a, b, c, alpha, beta, gamma = (as_float(v) for v in self.cell)
            if min(a, b, c) <= 0:
                raise ConfigError(f"-cell lengths must be > 0, got {a} {b} {c}")
            if not all(0 < x < 180 for x in (alpha, beta, gamma)):
                raise ConfigError(f"-cell angles must lie in (0, 180) degrees, got {alpha} {beta} {gamma}")
            ca, cb, cg = (math.cos(math.radians(x)) for x in (alpha, beta, gamma))
            if 1 - ca * ca - cb * cb - cg * cg + 2 * ca * cb * cg <= 1e-12:  # (V / abc)^2
                raise ConfigError(
                    f"-cell angles {alpha} {beta} {gamma} describe no lattice (each angle must be less "
                    "than the sum of the other two, and their sum less than 360)"
                )
        if self.a_matrix is not None:
            if len(self.a_matrix) != 9:
                raise ConfigError(f"orientation matrix needs 9 numbers, got {len(self.a_matrix)}")
            for v in self.a_matrix:
                _finite("orientation matrix", v)
        for v in self.misset_deg:
            _finite("-misset", v)
        for name in ("Na", "Nb", "Nc"):
            _finite(name, getattr(self, name))
            if getattr(self, name) < MIN_CELLS:
                raise ConfigError(f"-{name} must be >= 0 (0 and 1 both mean one cell), got {getattr(self, name)}")
        for v in self.xtal_size_mm:
            _finite("-xtalsize", v)
        _finite("-fudge", self.fudge)
        _finite("-default_F", self.default_F)
        _finite("-mosaic", self.mosaic_spread_deg)
        if self.mosaic_spread_deg < 0:
            raise ConfigError(f"-mosaic spread must be >= 0, got {self.mosaic_spread_deg}")
        if deg_to_rad(as_float(self.mosaic_spread_deg)) >= FLOAT32_OVERFLOW:  # nanoBragg's mosaic angle is a float
            raise ConfigError(f"-mosaic {self.mosaic_spread_deg:g} degrees overflows the float32 of the mosaic angle")
        _count("-mosaic_domains", self.mosaic_domains, MIN_MOSAIC_DOMAINS)
        for flag, seed in (("-mosaic_seed (mosaic_seed)", self.mosaic_seed),
                           ("-misset_seed (misset_seed)", self.misset_seed)):
            if abs(seed) > C_INT_MAX:
                raise ConfigError(f"{flag} must lie in -{C_INT_MAX}..{C_INT_MAX} (nanoBragg's seeds are C ints, "
                                  f"negated), got {seed}")
        _vector("spindle_axis (-spindle_axis)", self.spindle_axis)
        _finite("-dmin", self.dmin_A)
        _finite("-water", self.water_um)


@dataclass(frozen=True)
class SamplingConfig:
    """Oversampling and spindle sweep (spec §4.5, §5.3, §5.8)."""

    oversample: int | None = None  # None (or <= 0 on the CLI): automatic (spec §4.5)
    oversample_thick: bool = False
    oversample_polar: bool = False
    oversample_omega: bool = False
    phi0_deg: float = 0.0
    osc_deg: float | None = None
    phistep_deg: float | None = None
    phisteps: int | None = None
    stale_phi: bool = True  # reproduce nanoBragg's reuse of the previous orientation at phi == 0 (spec §4.7)
    # nanoBragg's OpenMP threads, whose first pixels' first sweep starts unrotated (with stale_phi; spec §4.7)
    nanobragg_threads: int = 1

    def __post_init__(self) -> None:
        check_types(self, SAMPLING_TAKES)
        _count("-oversample", self.oversample, MIN_OVERSAMPLE)
        _count("-nanobragg_threads", self.nanobragg_threads, MIN_NANOBRAGG_THREADS)
        for name in ("phi0_deg", "osc_deg", "phistep_deg"):
            _finite(name, getattr(self, name))
        _count("-phisteps", self.phisteps, MIN_STEPS)


@dataclass(frozen=True)
class SimulationConfig:
    """Everything :func:`detsim.simulate` needs."""

    crystal: CrystalConfig
    beam: BeamConfig = field(default_factory=BeamConfig)
    detector: DetectorConfig = field(default_factory=DetectorConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)

    def __post_init__(self) -> None:
        check_types(self, SIMULATION_TAKES)


SOURCE_TAKES = {"position_m": VEC3, "lambda_A": NUMBER}
BEAM_TAKES = {
    **dict.fromkeys(["lambda_A", "fluence_per_m2", "flux_per_s", "exposure_s", "beamsize_mm", "dispersion_pct",
                     "polarization_kahn"], NUMBER),
    **dict.fromkeys(["hdivrange_mrad", "hdivstep_mrad", "vdivrange_mrad", "vdivstep_mrad"], OPTIONAL_NUMBER),
    **dict.fromkeys(["hdivsteps", "vdivsteps", "dispsteps"], OPTIONAL_INT),
    **dict.fromkeys(["round_div", "nopolar"], SWITCH),
    "sources": Takes("a tuple of SourcePoint (detsim.model.sources.read_source_file reads a -sourcefile into one)",
                     _is_sources, optional=True),
    **dict.fromkeys(["beam_vector", "polar_vector"], OPTIONAL_VEC3),
}
DETECTOR_TAKES = {
    "convention": _enum(Convention),
    "pivot": _enum(Pivot),
    **dict.fromkeys(["fpixels", "spixels"], INT),
    **dict.fromkeys(["pixel_mm", "distance_mm", "rotx_deg", "roty_deg", "rotz_deg", "twotheta_deg", "thick_um"],
                    NUMBER),
    **dict.fromkeys(["detsize_f_mm", "detsize_s_mm", "close_distance_mm", "xbeam_mm", "ybeam_mm", "xclose_mm",
                     "yclose_mm", "orgx_px", "orgy_px", "mu_per_m"], OPTIONAL_NUMBER),
    **dict.fromkeys(["twotheta_axis", "fdet_vector", "sdet_vector", "odet_vector"], OPTIONAL_VEC3),
    **dict.fromkeys(["curved", "point_pixel"], SWITCH),
    "thicksteps": OPTIONAL_INT,
    "roi": Takes("4 ints (xmin, xmax, ymin, ymax)", _ints(4), optional=True),
    "mask": Takes("a 2-d (slow, fast) array or tensor, 0 where a pixel is skipped", _is_2d_array, optional=True),
}
CRYSTAL_TAKES = {
    "cell": Takes("6 numbers (a, b, c in Angstrom; alpha, beta, gamma in degrees)", _numbers(6), optional=True),
    "a_matrix": Takes("9 numbers (a MOSFLM matrix, row-wise)", _numbers(9), optional=True),
    "misset_deg": VEC3,
    "xtal_size_mm": VEC3,
    "misset_random": SWITCH,
    **dict.fromkeys(["misset_seed", "mosaic_seed"], INT),
    **dict.fromkeys(["Na", "Nb", "Nc"], CELLS),
    "shape": _enum(CrystalShape),
    **dict.fromkeys(["fudge", "default_F", "mosaic_spread_deg", "dmin_A", "water_um"], NUMBER),
    "hkl": Takes("an HKL table (detsim.read_hkl(path) reads an h k l F file into one)", _is_hkl_table,
                 optional=True),
    "interpolate": Takes("True or False (or None: automatic)", lambda v: isinstance(v, bool), optional=True),
    "mosaic_domains": OPTIONAL_INT,
    "spindle_axis": OPTIONAL_VEC3,
}
SAMPLING_TAKES = {
    "oversample": Takes(f"an int >= {MIN_OVERSAMPLE} (or None: automatic)", _is_int, optional=True),
    **dict.fromkeys(["oversample_thick", "oversample_polar", "oversample_omega", "stale_phi"], SWITCH),
    "phi0_deg": NUMBER,
    **dict.fromkeys(["osc_deg", "phistep_deg"], OPTIONAL_NUMBER),
    "phisteps": OPTIONAL_INT,
    "nanobragg_threads": INT,
}
SIMULATION_TAKES = {
    "crystal": Takes("a CrystalConfig", lambda v: isinstance(v, CrystalConfig)),
    "beam": Takes("a BeamConfig", lambda v: isinstance(v, BeamConfig)),
    "detector": Takes("a DetectorConfig", lambda v: isinstance(v, DetectorConfig)),
    "sampling": Takes("a SamplingConfig", lambda v: isinstance(v, SamplingConfig)),
}
# what every field of every configuration type takes, by type (a test checks that no field is left out)
TAKES = {SourcePoint: SOURCE_TAKES, BeamConfig: BEAM_TAKES, DetectorConfig: DETECTOR_TAKES, CrystalConfig: CRYSTAL_TAKES,
         SamplingConfig: SAMPLING_TAKES, SimulationConfig: SIMULATION_TAKES}
