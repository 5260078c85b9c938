"""nanoBragg's random number streams, reproduced bit for bit (spec §4.3, §4.6, §6.3).

nanoBragg draws all its random numbers from Numerical Recipes' ``ran1`` and derives three things from them:
the random misset orientation, the mosaic domain rotations and the Poisson noise image. This module
reproduces each of them exactly, including the places where the C code rounds to single precision.

Conventions:
    * Seeds. nanoBragg stores every seed negated (``-seed 5`` is kept as ``-5``). :class:`Ran1` takes that
      stored value; the convenience functions (:func:`mosaic_umats`, :func:`random_misset_angles`,
      :func:`poisson_noise_image`) take the value the user typed and negate it themselves.
    * Precision. Plain Python floats are C doubles. Where the C code stores a result in a ``float``,
      the value is rounded to float32 and kept in a Python float. Every single-precision operation is
      emulated as "compute in double, round once to float32", which is exact for +, -, *, / and sqrt
      because a double carries more than twice the float32 significand.
    * Angles are in radians, rotation matrices are right-handed and act on column vectors.

numpy is used only for array bookkeeping; nothing here is on the differentiable path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import operator
import struct
from typing import Callable

import numpy as np

__all__ = [
    "Ran1",
    "gammln",
    "gaussdev",
    "mosaic_rotation",
    "mosaic_umats",
    "poidev",
    "poisson_noise_image",
    "random_misset_angles",
]

# Park-Miller "minimal standard" generator with a Bays-Durham shuffle (spec §4.6).
_IA = 16807
_IM = 2147483647
_AM = 1.0 / _IM
_NTAB = 32
_NDIV = 1 + (_IM - 1) // _NTAB
_RNMX = 1.0 - 1.2e-7
_WARMUP = 8
_BLOCK = 256
_MAX_SEED = 2**31

_FLOAT32 = struct.Struct("<f")


def _f32(x: float) -> float:
    """Round a double to the nearest float32 (ties to even), as a C ``float`` assignment does."""
    try:
        return _FLOAT32.unpack(_FLOAT32.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


_RNMX_F32 = _f32(_RNMX)
_ONE_THIRD_F32 = _f32(1.0 / 3.0)


def _load_powf() -> Callable[[float, float], float]:
    """Return the C library's single-precision ``powf``.

    The mosaic angle is computed with ``powf``, which is not correctly rounded: glibc's result differs by one
    float32 ulp from the correctly rounded power for roughly 0.07% of arguments. Calling the same libm keeps
    the domains bit-exact. Without a loadable libm the correctly rounded value is used instead.
    """
    try:
        libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
        powf = libm.powf
    except (OSError, AttributeError):
        return lambda base, exponent: _f32(math.pow(base, exponent))
    powf.argtypes = (ctypes.c_float, ctypes.c_float)
    powf.restype = ctypes.c_float
    return powf


_powf = _load_powf()


class Ran1:
    """Numerical Recipes ``ran1``: uniform deviates in (0, 1) as nanoBragg draws them (spec §4.6).

    The integer state advances as ``idum <- 16807 * idum mod (2**31 - 1)``. The C code evaluates this with
    Schrage's factorisation to avoid 32-bit overflow; with Python integers the plain modulus gives the same
    value for every reachable state. Each draw passes through a 32-entry shuffle table and is returned as
    ``float32(iy / (2**31 - 1))``, capped at ``float32(1 - 1.2e-7)``.

    In C the shuffle table is a single global shared by all streams. Every nanoBragg stream starts from a
    negative seed, which forces a reload of the table on its first draw, and the streams are used one after
    another (misset, then mosaic, then noise). One table per object is therefore equivalent. The exception
    is a non-negative stored seed (a user seed <= 0): C reuses whatever table the previous stream left behind,
    whereas here, as in C when it is the first stream of the run, it starts over from ``idum = 1``.

    The object also holds the spare deviate of :func:`gaussdev`, which C keeps in a static variable.

    Args:
        seed: the stored (already negated) seed, ``idum`` in C. ``-mosaic_seed 5`` is ``Ran1(-5)``.
            Must satisfy ``|seed| <= 2**31``, the range of a C ``int`` seed after negation.

    Raises:
        ValueError: if the seed is out of range.
    """

    __slots__ = ("_idum", "_iy", "_table", "_buffer", "_next_index", "_gauss_spare")

    def __init__(self, seed: int) -> None:
        seed = operator.index(seed)
        if abs(seed) > _MAX_SEED:
            raise ValueError(f"ran1 seed {seed} is outside the C int range (|seed| <= 2**31)")
        self._idum = seed
        self._iy = 0
        self._table = [0] * _NTAB
        self._buffer: list[float] = []
        self._next_index = 0
        self._gauss_spare: float | None = None

    def next(self) -> float:
        """Return the next deviate: a Python float that holds a float32 value in (0, 1).

        The degenerate stored seed ``-(2**31 - 1)`` drives the state to 0; its first draw is then exactly 0.0 and
        the stream restarts from ``idum = 1``, as in C.
        """
        index = self._next_index
        if index == len(self._buffer):
            self._refill()
            index = 0
        self._next_index = index + 1
        return self._buffer[index]

    def _refill(self) -> None:
        """Advance the integer state by one block of draws and convert them to float32 in bulk.

        The conversion depends only on the drawn integers, so computing a block ahead is invisible to callers.
        """
        idum, iy, table = self._idum, self._iy, self._table
        multiplier, modulus, divisor = _IA, _IM, _NDIV
        shuffled: list[int] = []
        keep = shuffled.append
        for _ in range(_BLOCK):
            if idum <= 0 or iy == 0:
                idum, iy = _load_shuffle_table(idum, table)
            idum = idum * multiplier % modulus
            slot = iy // divisor
            iy = table[slot]
            table[slot] = idum
            keep(iy)
        self._idum, self._iy = idum, iy
        single = (np.array(shuffled, dtype=np.float64) * _AM).astype(np.float32)
        capped = np.where(single.astype(np.float64) > _RNMX, np.float32(_RNMX_F32), single)
        self._buffer = capped.tolist()


def _load_shuffle_table(idum: int, table: list[int]) -> tuple[int, int]:
    """Reseed and refill the shuffle table in place (``ran1``'s initialisation branch, spec §4.6).

    Args:
        idum: the current state; reseeding starts from ``max(1, -idum)``.
        table: the 32-entry shuffle table, overwritten.

    Returns:
        The new (idum, iy).
    """
    idum = max(1, -idum)
    for slot in range(_NTAB + _WARMUP - 1, -1, -1):
        idum = idum * _IA % _IM
        if slot < _NTAB:
            table[slot] = idum
    return idum, table[0]


def mosaic_rotation(spread_rad: float, gen: Ran1) -> np.ndarray:
    """Random rotation on a spherical cap, nanoBragg's ``mosaic_rotation_umat`` (spec §4.6).

    Three deviates r1, r2, r3 (in that order) are mapped to [-1, 1]. The axis is
    ``(sqrt(1 - r2**2) sin(pi r1), sqrt(1 - r2**2) cos(pi r1), r2)`` and the angle is
    ``float32(spread) * powf(1 - r3**2, 1/3)``, evaluated in single precision.

    Args:
        spread_rad: cap size in radians; rounded to float32 as the C prototype does. 90 rad gives an isotropic
            random orientation.
        gen: the stream to draw from; three deviates are consumed.

    Returns:
        (3, 3) float64 right-handed rotation matrix ``U = cos(a) I + (1 - cos(a)) v v^T + sin(a) [v]x``.
    """
    r1 = 2.0 * gen.next() - 1.0
    r2 = 2.0 * gen.next() - 1.0
    r3 = 2.0 * gen.next() - 1.0

    xyrad = math.sqrt(1.0 - r2 * r2)
    angle = _f32(_f32(spread_rad) * _powf(_f32(1.0 - r3 * r3), _ONE_THIRD_F32))
    vx = xyrad * math.sin(math.pi * r1)
    vy = xyrad * math.cos(math.pi * r1)
    vz = r2

    c = math.cos(angle)
    s = math.sin(angle)
    t = 1.0 - c
    tx = t * vx
    ty = t * vy
    return np.array(
        [
            [c + t * (vx * vx), tx * vy - s * vz, tx * vz + s * vy],
            [tx * vy + s * vz, c + t * (vy * vy), ty * vz - s * vx],
            [tx * vz - s * vy, ty * vz + s * vx, c + t * (vz * vz)],
        ],
        dtype=np.float64,
    )


def mosaic_umats(spread_rad: float, domains: int, seed: int) -> np.ndarray:
    """Rotation matrices of the mosaic domains (spec §4.6).

    All domains draw from one stream, ``Ran1(-seed)``. Domain 0 is replaced by the identity after its three
    deviates have been consumed, so domain m > 0 is the same whatever the domain count.

    Args:
        spread_rad: mosaic spread in radians.
        domains: number of domains, >= 1.
        seed: the user's ``-mosaic_seed`` value (nanoBragg's default is 12345678); it is negated here.

    Returns:
        (domains, 3, 3) float64 array; element m rotates a lab-frame column vector for domain m.

    Raises:
        ValueError: if ``domains`` < 1.
    """
    domains = operator.index(domains)
    if domains < 1:
        raise ValueError(f"need at least one mosaic domain, got {domains}")
    gen = Ran1(-seed)
    umats = np.stack([mosaic_rotation(spread_rad, gen) for _ in range(domains)])
    umats[0] = np.eye(3)
    return umats


def _normalise_rows(rows: list[list[float]]) -> list[list[float]]:
    """Scale each non-zero row to unit length, summing the squares in index order as the C code does."""
    result = []
    for x, y, z in rows:
        norm = math.sqrt(x * x + y * y + z * z)
        result.append([x / norm, y / norm, z / norm] if norm > 0 else [x, y, z])
    return result


def _umat_to_misset(umat: np.ndarray) -> tuple[float, float, float]:
    """Misset angles (rx, ry, rz) of a rotation matrix, as nanoBragg's ``umat2misset`` extracts them (spec §4.3).

    The C routine normalises the rows twice (before and after a repair step that only acts on zero rows,
    which a rotation never has); both passes are kept because each can change the last bit.
    """
    rows = _normalise_rows(_normalise_rows([[float(v) for v in row] for row in umat]))
    (uxx, uxy, _), (uyx, uyy, _), (uzx, uzy, uzz) = rows
    if uzx * uzx < 1.0:
        return (
            math.atan2(uzy, uzz),
            math.atan2(-uzx, math.sqrt(uzy * uzy + uzz * uzz)),
            math.atan2(uyx, uxx),
        )
    return math.pi, math.pi / 2.0, math.atan2(uxy, -uyy)


def random_misset_angles(seed: int) -> tuple[float, float, float]:
    """The ``-misset random`` orientation as misset angles (spec §4.3).

    A rotation is drawn with :func:`mosaic_rotation` over a 90 rad cap (an isotropic orientation) from
    ``Ran1(-seed)`` and converted to angles; nanoBragg prints these in degrees and applies them with its
    usual x, y, z misset rotation.

    Args:
        seed: the user's ``-misset_seed`` value; it is negated here.

    Returns:
        (rx, ry, rz) in radians.
    """
    return _umat_to_misset(mosaic_rotation(90.0, Ran1(-seed)))


_GAMMLN_COEFFICIENTS = (
    76.18009172947146,
    -86.50532032941677,
    24.01409824083091,
    -1.231739572450155,
    0.1208650973866179e-2,
    -0.5395239384953e-5,
)


def gammln(xx: float) -> float:
    """ln Gamma(xx) by Lanczos' six-term series (Numerical Recipes ``gammln``), as nanoBragg evaluates it.

    Args:
        xx: argument > 0; rounded to float32 first (the C parameter is a ``float``).

    Returns:
        ln Gamma(xx), computed in double and rounded to float32.
    """
    x = _f32(xx)
    y = x
    tmp = x + 5.5
    tmp -= (x + 0.5) * math.log(tmp)
    series = 1.000000000190015
    for coefficient in _GAMMLN_COEFFICIENTS:
        y += 1.0
        series += coefficient / y
    return _f32(-tmp + math.log(2.5066282746310005 * series / x))


def gaussdev(gen: Ran1) -> float:
    """Standard normal deviate by the polar Box-Muller method (Numerical Recipes ``gasdev``).

    Each accepted pair of uniforms yields two deviates; the second is kept on ``gen`` and returned by the
    next call without drawing.

    Args:
        gen: the stream to draw from.

    Returns:
        A float32 value held in a Python float.
    """
    spare = gen._gauss_spare
    if spare is not None:
        gen._gauss_spare = None
        return spare
    while True:
        v1 = _f32(2.0 * gen.next() - 1.0)
        v2 = _f32(2.0 * gen.next() - 1.0)
        rsq = _f32(_f32(v1 * v1) + _f32(v2 * v2))
        if 0.0 < rsq < 1.0:
            break
    factor = _f32(math.sqrt(-2.0 * math.log(rsq) / rsq))
    gen._gauss_spare = _f32(v1 * factor)
    return _f32(v2 * factor)


def poidev(xm: float, gen: Ran1) -> float:
    """Poisson deviate with mean ``xm``, nanoBragg's single-precision ``poidev`` (spec §6.3).

    * ``xm > 1e6``: Gaussian approximation ``xm + sqrt(xm) * gaussdev`` (not an integer).
    * ``xm < 12``: multiply uniforms until the product drops to ``exp(-xm)`` or below; the result is the
      number of factors minus one. ``xm <= 0`` therefore costs one draw and returns 0.
    * otherwise: rejection from a Lorentzian comparison function.

    The C routine caches its per-``xm`` constants between calls; that only saves time and is not done here.

    Args:
        xm: mean photon count; rounded to float32 first.
        gen: the stream to draw from.

    Returns:
        The deviate as a float32 value held in a Python float.
    """
    xm = _f32(xm)
    if xm > 1.0e6:
        return _f32(xm + math.sqrt(xm) * gaussdev(gen))

    if xm < 12.0:
        threshold = _f32(math.exp(-xm))
        count = 0
        product = _f32(gen.next())
        while product > threshold:
            count += 1
            product = _f32(product * gen.next())
        return float(count)

    sq = _f32(math.sqrt(2.0 * xm))
    log_xm = _f32(math.log(xm))
    g = _f32(_f32(xm * log_xm) - gammln(xm + 1.0))
    while True:
        while True:
            y = _f32(math.tan(math.pi * gen.next()))
            em = _f32(_f32(sq * y) + xm)
            if not em < 0.0:
                break
        em = float(math.floor(em))
        exponent = _f32(_f32(_f32(em * log_xm) - gammln(em + 1.0)) - g)
        ratio = _f32(0.9 * (1.0 + _f32(y * y)) * math.exp(exponent))
        if not gen.next() > ratio:
            return em


def _roi_slices(roi: tuple[int, int, int, int] | None, shape: tuple[int, int]) -> tuple[slice, slice]:
    """Convert an inclusive ``(xmin, xmax, ymin, ymax)`` ROI (x = fast, y = slow) to (slow, fast) slices."""
    spixels, fpixels = shape
    if roi is None:
        return slice(0, spixels), slice(0, fpixels)
    xmin, xmax, ymin, ymax = (operator.index(v) for v in roi)
    fast = slice(min(max(xmin, 0), fpixels), min(max(xmax + 1, 0), fpixels))
    slow = slice(min(max(ymin, 0), spixels), min(max(ymax + 1, 0), spixels))
    return slow, fast


def poisson_noise_image(
    image: np.ndarray,
    seed: int,
    adc: float = 40.0,
    roi: tuple[int, int, int, int] | None = None,
) -> tuple[np.ndarray, int]:
    """nanoBragg's noise image: one Poisson deviate per ROI pixel plus the ADC offset (spec §6.3).

    Pixels are visited in raster order (slow outer, fast inner) and each calls :func:`poidev` once on the
    float32 pixel value, all from the stream ``Ran1(-seed)``. Masked pixels hold 0 in the float image and still
    consume one draw, as in C. Each value ``n + adc`` is clipped to 65535 (counted as an overload) and truncated
    to an integer. Values below 0 (possible only with a negative ``adc``) are clipped to 0; the C cast is
    undefined there.

    Args:
        image: (S, F) expected photons per pixel, float32 or float64 (rounded to float32 first).
        seed: the user's ``-seed`` value; it is negated here.
        adc: ADC offset added to every ROI pixel (nanoBragg's default is 40).
        roi: inclusive ``(xmin, xmax, ymin, ymax)`` pixel bounds, x = fast, y = slow; ``None`` for all pixels.

    Returns:
        (noise, overloads): the (S, F) uint16 image, with 0 outside the ROI, and the number of clipped pixels.

    Raises:
        ValueError: if the image is not 2-D or holds a non-finite value inside the ROI.
    """
    values = np.asarray(image, dtype=np.float32)
    if values.ndim != 2:
        raise ValueError(f"expected a 2-D (slow, fast) image, got shape {values.shape}")
    slow, fast = _roi_slices(roi, values.shape)
    region = values[slow, fast]
    if not np.isfinite(region).all():
        raise ValueError("image holds non-finite values inside the ROI; cannot draw Poisson noise")

    gen = Ran1(-seed)
    draw = gen.next
    deviate = poidev
    adc = float(adc)
    overloads = 0
    counts = []
    for row in region.tolist():
        out_row = []
        for xm in row:
            if xm <= 0.0:
                draw()
                value = adc
            else:
                value = deviate(xm, gen) + adc
            if value > 65535.0:
                value = 65535.0
                overloads += 1
            elif value < 0.0:
                value = 0.0
            out_row.append(int(value))
        counts.append(out_row)

    noise = np.zeros(values.shape, dtype=np.uint16)
    if region.size:
        noise[slow, fast] = np.array(counts, dtype=np.uint16)
    return noise, overloads
