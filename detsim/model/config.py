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

Values are validated here, at the edge (``__post_init__``): inner code trusts them. Errors are
:class:`ConfigError` with a one-line message naming the field or flag.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, TypeVar

from detsim.fileio.c_numbers import C_INT_MAX
from detsim.model.units import DEFAULT_FLUENCE_PER_M2, deg_to_rad

Vec3 = tuple[float, float, float]
T = TypeVar("T")
FLOAT32_OVERFLOW = 2.0**128 - 2.0**103  # doubles from here up round to an infinite float32


class ConfigError(ValueError):
    """Invalid configuration value; the message names the offending field or flag."""


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
            _count(name, getattr(self, name))
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
        _count("fpixels (-detpixels_f)", self.fpixels, 1)
        _count("spixels (-detpixels_s)", self.spixels, 1)
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
        _count("thicksteps (-detector_thicksteps)", self.thicksteps)
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
            if getattr(self, name) < 0:
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
        _count("-mosaic_domains", self.mosaic_domains, 1)
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
        _count("-oversample", self.oversample, 1)
        _count("-nanobragg_threads", self.nanobragg_threads, 1)
        for name in ("phi0_deg", "osc_deg", "phistep_deg"):
            _finite(name, getattr(self, name))
        _count("-phisteps", self.phisteps)


@dataclass(frozen=True)
class SimulationConfig:
    """Everything :func:`detsim.simulate` needs."""

    crystal: CrystalConfig
    beam: BeamConfig = field(default_factory=BeamConfig)
    detector: DetectorConfig = field(default_factory=DetectorConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
