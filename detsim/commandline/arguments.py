"""The raw values of a nanoBragg command line (spec §2.0).

:class:`Arguments` holds what the flags set, in the units the user typed (``None`` = not given);
:mod:`detsim.commandline.flag_table` says which flag sets what (reading numbers with :mod:`detsim.fileio.c_numbers`),
:mod:`detsim.commandline.argv_reader` walks the command line, and :mod:`detsim.commandline.to_config` turns the result into a
:class:`~detsim.model.config.SimulationConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from detsim.model.config import Convention, CrystalShape, Pivot


class ArgumentError(ValueError):
    """Bad command line; the message names the flag."""


@dataclass
class Arguments:
    """Raw values from argv in the units the user typed; ``None`` = not given."""

    convention: Convention = Convention.MOSFLM
    pivot: Pivot = Pivot.BEAM
    cell: list[float] = field(default_factory=list)
    matrix_file: str | None = None
    hkl_file: str | None = None
    default_F: float = 0.0
    misset_deg: tuple[float, float, float] | None = None
    misset_random: bool = False
    misset_seed: int | None = None
    mosaic_seed: int = 12345678
    noise_seed: int | None = None
    Na: int = 1
    Nb: int = 1
    Nc: int = 1
    xtal_size_mm: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    shape: CrystalShape = CrystalShape.SQUARE
    fudge: float = 1.0
    interpolate: bool | None = None
    mosaic_spread_deg: float | None = None
    mosaic_domains: int | None = None
    phi0_deg: float = 0.0
    osc_deg: float | None = None
    phistep_deg: float | None = None
    phisteps: int | None = None
    dmin_A: float = 0.0
    water_um: float = 0.0
    lambda_A: float = 1.0
    fluence: float | None = None
    flux: float = 0.0
    exposure_s: float = 1.0
    beamsize_mm: float = 0.1
    dispersion_pct: float = 0.0
    dispsteps: int | None = None
    hdivrange_mrad: float | None = None
    vdivrange_mrad: float | None = None
    hdivstep_mrad: float | None = None
    vdivstep_mrad: float | None = None
    hdivsteps: int | None = None
    vdivsteps: int | None = None
    round_div: bool = True
    source_file: str | None = None
    polarization: float = 0.0
    nopolar: bool = False
    vectors: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    pixel_mm: float = 0.1
    detsize_f_mm: float = 102.4
    detsize_s_mm: float = 102.4
    fpixels: int = 0
    spixels: int = 0
    distance_mm: float = 100.0
    close_distance_mm: float | None = None
    xbeam_mm: float | None = None
    ybeam_mm: float | None = None
    xclose_mm: float | None = None
    yclose_mm: float | None = None
    orgx_px: float | None = None
    orgy_px: float | None = None
    rot_deg: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    twotheta_deg: float = 0.0
    curved: bool = False
    point_pixel: bool = False
    thick_um: float = 0.0
    mu_per_m: float | None = None
    thicksteps: int | None = None
    oversample: int = 0
    oversample_thick: bool = False
    oversample_polar: bool = False
    oversample_omega: bool = False
    roi: tuple[int, int, int, int] | None = None
    floatfile: str = "floatimage.bin"
    intfile: str = "intimage.img"
    pgmfile: str = "image.pgm"
    noisefile: str = "noiseimage.img"
    write_pgm: bool = True
    write_noise: bool = True
    int_scale: float = 0.0
    pgm_scale: float = 0.0
    adc: float = 40.0
    progress: bool = True
    stol_file: str | None = None
    img_file: str | None = None
    mask_file: str | None = None
    # detsim's own options (no nanoBragg counterpart)
    dtype: str = "float64"
    device: str = "cpu"
    chunk_pixels: int | None = None
    mode: str = "eager"
    threads: int | None = None  # None: torch's intra-op thread count (OMP_NUM_THREADS)
    physical_phi: bool = False
    nanobragg_threads: int = 1  # the OpenMP threads of the nanoBragg run to reproduce (spec §4.7)
    trace_pixels: list[tuple[int, int]] = field(default_factory=list)
    trace_json: str | None = None

    def input_files(self) -> list[tuple[str, str]]:
        """(flag, path) of every file the command line names for reading."""
        named = (("-mat", self.matrix_file), ("-hkl", self.hkl_file), ("-sourcefile", self.source_file),
                 ("-stol", self.stol_file), ("-img", self.img_file), ("-mask", self.mask_file))
        return [(flag, path) for flag, path in named if path is not None]
