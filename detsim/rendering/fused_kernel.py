"""The whole image in one Triton kernel launch (spec §3.4, §5.1-§5.8), for CUDA.

Each program owns BLOCK_P pixels of the setup's list of rendered pixels and runs every loop of nanoBragg's
pixel in registers, in its order: layer t > subpixel (i_s, i_f) > source > orientation (phi step, mosaic
domain). Per subpixel it computes the position, the distance and the diffracted direction from the
packed geometry (:mod:`detsim.rendering.fused_image`); per source the scattering vector and the ``-dmin``
cut; per orientation the Miller indices, the lattice factor and F, adding F² F_latt² to the pixel's sum I,
which starts at the water background. Each pixel's sum runs in one program, in one order: no atomics, one
store per pixel, so an image is the same bits run to run. The finish factors are nanoBragg's: the capture
fraction of the last layer (§5.8), the polarization at the first surviving source (§5.5), the solid angle
of the first subpixel of layer 0 (§5.4), and r_e² Φ / steps.

nanoBragg's thread-first pixels (spec §4.7; :mod:`detsim.rendering.thread_first_sweep`) are the kernel's too,
in its ``HAS_FIRST_SWEEP`` variant: such a pixel sweeps the first sweep's orientation table at its first
(layer, subpixel, source) in loop order that ``-dmin`` does not cut (``detsim.rendering.paths.first_sweep_of``),
the regular table after. A block holding none of those pixels at a step runs the common loop; the other picks
each axis per pixel, once per (layer, subpixel, source) until its first sweep is done.

The lattice factor needs no sine call: with f = h - round(h) and g = N f - round(N f) (N an integer),
sin²(N π h) / sin²(π h) = sin²(π g) / sin²(π f), both arguments in [-π/2, π/2], where an odd polynomial
in f (the Taylor series of sin(π f), to f^21 in float64, f^13 in float32) is accurate to a few units of the
last place; N² where f == 0 (nanoBragg's limit). Triton's float64 sine is an out-of-line call with a large
stack. The curved detector's rotations take their sines and cosines from the same polynomial, the angle
reduced first.

On a CPU the kernel runs only under Triton's interpreter (``TRITON_INTERPRET=1`` set before this module is
imported), which is how the tests check it.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl
from torch import Tensor

from detsim.rendering import fused_image as fi, lattice_factor
from detsim.rendering.fused_image import FusedParams
from detsim.rendering.setup import Setup

BLOCK_P = 128  # pixels per program: one a thread
NUM_WARPS = 4  # 128 threads a program
# Pixels per program under Triton's interpreter (a CPU), which pays per program and per operation, not per
# pixel: fewer, larger programs. A pixel's arithmetic does not depend on its block, so neither do the bits.
INTERPRETER_BLOCK_P = 1024

# The geometry vector's layout (detsim.rendering.fused_image), as the kernel's constants.
_PIX0, _FDET, _SDET, _ODET = tl.constexpr(fi.PIX0), tl.constexpr(fi.FDET), tl.constexpr(fi.SDET), tl.constexpr(fi.ODET)
_PIXEL, _SUBPIXEL = tl.constexpr(fi.PIXEL), tl.constexpr(fi.SUBPIXEL)
_CLOSE, _LAYER_STEP = tl.constexpr(fi.CLOSE_DISTANCE), tl.constexpr(fi.LAYER_STEP)
_CAP_NEAR, _CAP_FAR, _CELLS = tl.constexpr(fi.CAPTURE_NEAR), tl.constexpr(fi.CAPTURE_FAR), tl.constexpr(fi.CELLS)
_DEFAULT_F, _WATER_BG = tl.constexpr(fi.DEFAULT_F), tl.constexpr(fi.WATER_BG)
_SCALE, _DMIN, _KAHN = tl.constexpr(fi.SCALE), tl.constexpr(fi.DMIN), tl.constexpr(fi.KAHN)
_FUDGE, _CELLS_PRODUCT, _RECIP = tl.constexpr(fi.FUDGE), tl.constexpr(fi.CELLS_PRODUCT), tl.constexpr(fi.RECIPROCAL)
_DISTANCE, _BEAM = tl.constexpr(fi.DISTANCE), tl.constexpr(fi.BEAM)
_SRC = tl.constexpr(fi.SOURCE_FIELDS)

# Taylor coefficients of sin(pi f) / f in powers of f², (-1)^k pi^(2k+1) / (2k+1)!: to f^21 in float64 (the
# next term is under 2e-18 at f = 1/2), to f^13 in float32 (under 7e-10).
_C0, _C1, _C2, _C3, _C4, _C5 = (tl.constexpr((-1) ** k * math.pi ** (2 * k + 1) / math.factorial(2 * k + 1))
                                for k in range(6))
_C6, _C7, _C8, _C9, _C10 = (tl.constexpr((-1) ** k * math.pi ** (2 * k + 1) / math.factorial(2 * k + 1))
                            for k in range(6, 11))
_GAUSS_WIDTH = tl.constexpr(lattice_factor.GAUSS_WIDTH)  # spec §5.6
_TOPHAT_RADIUS_SQ = tl.constexpr(lattice_factor.TOPHAT_RADIUS_SQ)


@triton.jit
def _sin_pi(f, F64: tl.constexpr):
    """sin(pi f) for |f| <= 1/2, as an odd polynomial in f (no call)."""
    u = f * f
    if F64:
        p = _C10 * u + _C9
        p = p * u + _C8
        p = p * u + _C7
        p = p * u + _C6
        p = p * u + _C5
    else:
        p = _C6 * u + _C5
    p = p * u + _C4
    p = p * u + _C3
    p = p * u + _C2
    p = p * u + _C1
    p = p * u + _C0
    return f * p


@triton.jit
def _grating_terms(h, n, F64: tl.constexpr):
    """(numerator, denominator) of sin(N pi h) / sin(pi h) for the fractional index h: (N, 1) where h is an
    integer (nanoBragg's only special case, spec §5.6), else sin(pi g) and sin(pi f), equal to the ratio up to
    its sign, which the square drops."""
    f = h - tl.floor(h + 0.5)
    g = n * f
    g = g - tl.floor(g + 0.5)
    on_node = f == 0.0
    return tl.where(on_node, n, _sin_pi(g, F64)), tl.where(on_node, 1.0, _sin_pi(f, F64))


@triton.jit
def _square_lattice_sq(h, k, l, na, nb, nc, F64: tl.constexpr):
    """F_latt² of a parallelepiped crystal: the product of the three gratings squared, one division per step.
    An axis with N = 1 puts the same sin(pi f) above and below (g == f), so no axis is skipped."""
    num_h, den_h = _grating_terms(h, na, F64)
    num_k, den_k = _grating_terms(k, nb, F64)
    num_l, den_l = _grating_terms(l, nc, F64)
    ratio = (num_h * num_k * num_l) / (den_h * den_k * den_l)
    return ratio * ratio


@triton.jit
def _sin_cos(angle, F64: tl.constexpr):
    """(sin, cos) of any angle (rad): t = angle / pi reduced to [-1/2, 1/2) by an integer q, whose parity
    gives the sign; cos x = sin(x + pi/2)."""
    t = angle * (1.0 / _C0)
    q = tl.floor(t + 0.5)
    sign = 1.0 - 2.0 * (q - 2.0 * tl.floor(q * 0.5))
    t2 = t + 0.5
    q2 = tl.floor(t2 + 0.5)
    sign2 = 1.0 - 2.0 * (q2 - 2.0 * tl.floor(q2 * 0.5))
    return sign * _sin_pi(t - q, F64), sign2 * _sin_pi(t2 - q2, F64)


@triton.jit
def _rotate(vx, vy, vz, ax, ay, az, angle, F64: tl.constexpr):
    """(vx, vy, vz) rotated by ``angle`` (rad) about the unit axis (ax, ay, az), as rotate_axis does."""
    s, c = _sin_cos(angle, F64)
    along = ((ax * vx + ay * vy) + az * vz) * (1.0 - c)
    return (ax * along + vx * c + (ay * vz - az * vy) * s, ay * along + vy * c + (az * vx - ax * vz) * s,
            az * along + vz * c + (ax * vy - ay * vx) * s)


@triton.jit
def _position(fdet, sdet, odet, g_ptr, CURVED: tl.constexpr, F64: tl.constexpr):
    """Lab position of a subpixel at (Fdet, Sdet, Odet), m: nanoBragg's sum, left to right; on the curved
    detector, distance x beam rotated about sdet by y / distance, then about fdet by z / distance (spec §3.4)."""
    px = fdet * tl.load(g_ptr + _FDET) + sdet * tl.load(g_ptr + _SDET) + odet * tl.load(g_ptr + _ODET) \
        + tl.load(g_ptr + _PIX0)
    py = fdet * tl.load(g_ptr + _FDET + 1) + sdet * tl.load(g_ptr + _SDET + 1) \
        + odet * tl.load(g_ptr + _ODET + 1) + tl.load(g_ptr + _PIX0 + 1)
    pz = fdet * tl.load(g_ptr + _FDET + 2) + sdet * tl.load(g_ptr + _SDET + 2) \
        + odet * tl.load(g_ptr + _ODET + 2) + tl.load(g_ptr + _PIX0 + 2)
    if CURVED:
        distance = tl.load(g_ptr + _DISTANCE)
        zero = px * 0.0
        bx = zero + distance * tl.load(g_ptr + _BEAM)
        by = zero + distance * tl.load(g_ptr + _BEAM + 1)
        bz = zero + distance * tl.load(g_ptr + _BEAM + 2)
        tx, ty, tz = _rotate(bx, by, bz, tl.load(g_ptr + _SDET), tl.load(g_ptr + _SDET + 1),
                             tl.load(g_ptr + _SDET + 2), py / distance, F64)
        px, py, pz = _rotate(tx, ty, tz, tl.load(g_ptr + _FDET), tl.load(g_ptr + _FDET + 1),
                             tl.load(g_ptr + _FDET + 2), pz / distance, F64)
    return px, py, pz


@triton.jit
def _polarization(dx, dy, dz, src_ptr, s, kahn, POLAR: tl.constexpr):
    """Polarization factor of source ``s`` along (dx, dy, dz) (spec §5.5); cos 2psi = (x² - y²) / (x² + y²)
    for psi = -atan2(y, x), so no arc tangent is taken."""
    base = src_ptr + s * _SRC
    c = dx * tl.load(base) + dy * tl.load(base + 1) + dz * tl.load(base + 2)  # cos 2theta
    c2 = c * c
    factor = 1.0 + c2
    if POLAR == 2:
        y = dx * tl.load(base + 4) + dy * tl.load(base + 5) + dz * tl.load(base + 6)  # d . B_in
        x = dx * tl.load(base + 7) + dy * tl.load(base + 8) + dz * tl.load(base + 9)  # d . E_in
        r2 = x * x + y * y
        cos2psi = tl.where(r2 == 0.0, 1.0, (x * x - y * y) / tl.where(r2 == 0.0, 1.0, r2))
        factor = factor - kahn * cos2psi * (1.0 - c2)
    return 0.5 * factor


@triton.jit
def _axis(axis, first, use_first, i):
    """Element ``i`` of an orientation's row-major axes: the first sweep's where ``use_first`` (spec §4.7)."""
    return tl.where(use_first, tl.load(first + i), tl.load(axis + i))


@triton.jit
def _orientation_sum(total, sx, sy, sz, weight, alive, live, axes_ptr, first_ptr, use_first, n_orient, g_ptr,
                     table_ptr, na, nb, nc, default_f, fudge, n_prod, h_min, k_min, l_min, h_range, k_range, l_range,
                     SHAPE: tl.constexpr, TABLE: tl.constexpr, DMIN: tl.constexpr, F64: tl.constexpr,
                     MIXED: tl.constexpr):
    """``total`` plus F² F_latt² of every orientation (phi step, mosaic domain) at the scattering vector S
    (1/m); ``alive``: where -dmin spares the source (DMIN only). ``MIXED``: a pixel where ``use_first`` takes its
    orientations from the first sweep's table (``first_ptr``), the others from ``axes_ptr``."""
    for r in range(0, n_orient):
        axis = axes_ptr + r * 9
        if MIXED:
            first = first_ptr + r * 9
            h = _axis(axis, first, use_first, 0) * sx + _axis(axis, first, use_first, 1) * sy \
                + _axis(axis, first, use_first, 2) * sz
            k = _axis(axis, first, use_first, 3) * sx + _axis(axis, first, use_first, 4) * sy \
                + _axis(axis, first, use_first, 5) * sz
            l = _axis(axis, first, use_first, 6) * sx + _axis(axis, first, use_first, 7) * sy \
                + _axis(axis, first, use_first, 8) * sz
        else:
            h = tl.load(axis) * sx + tl.load(axis + 1) * sy + tl.load(axis + 2) * sz
            k = tl.load(axis + 3) * sx + tl.load(axis + 4) * sy + tl.load(axis + 5) * sz
            l = tl.load(axis + 6) * sx + tl.load(axis + 7) * sy + tl.load(axis + 8) * sz
        if SHAPE == 0:
            latt = _square_lattice_sq(h, k, l, na, nb, nc, F64)
        if TABLE or SHAPE != 0:
            h0 = tl.ceil(h - 0.5)  # nearest integer, ties down (spec §5.6)
            k0 = tl.ceil(k - 0.5)
            l0 = tl.ceil(l - 0.5)
        if SHAPE != 0:
            fh = h - h0
            fk = k - k0
            fl = l - l0
            ex = fh * tl.load(g_ptr + _RECIP) + fk * tl.load(g_ptr + _RECIP + 3) \
                + fl * tl.load(g_ptr + _RECIP + 6)
            ey = fh * tl.load(g_ptr + _RECIP + 1) + fk * tl.load(g_ptr + _RECIP + 4) \
                + fl * tl.load(g_ptr + _RECIP + 7)
            ez = fh * tl.load(g_ptr + _RECIP + 2) + fk * tl.load(g_ptr + _RECIP + 5) \
                + fl * tl.load(g_ptr + _RECIP + 8)
            rad = (ex * ex + ey * ey + ez * ez) * (n_prod * n_prod)  # rad*, 1/A² (spec §5.6)
            if SHAPE == 2:
                value = n_prod * tl.exp(-rad / _GAUSS_WIDTH * fudge)
            else:
                value = tl.where(rad * fudge < _TOPHAT_RADIUS_SQ, n_prod, 0.0)
            latt = value * value
        if TABLE:
            inside = (h0 >= h_min) & (h0 < h_min + h_range) & (k0 >= k_min) \
                & (k0 < k_min + k_range) & (l0 >= l_min) & (l0 < l_min + l_range)
            ih = tl.where(inside, h0 - h_min, 0.0).to(tl.int32)
            ik = tl.where(inside, k0 - k_min, 0.0).to(tl.int32)
            il = tl.where(inside, l0 - l_min, 0.0).to(tl.int32)
            cell = tl.load(table_ptr + (ih * k_range + ik) * l_range + il, mask=inside & live,
                           other=default_f)  # F, electrons (spec §5.7)
            cell = tl.where(inside, cell, default_f)
            if DMIN:
                cell = tl.where(alive, cell, 0.0)
            total += cell * cell * latt
        else:
            total += weight * latt
    return total


@triton.jit
def fused_image_kernel(s_ptr, f_ptr, out_ptr, g_ptr, src_ptr, axes_ptr, table_ptr, first_ptr, first_pos_ptr,
                       P, n_layers, n_os, n_sources, n_orient, fpixels, n_first,
                       h_min, k_min, l_min, h_range, k_range, l_range,
                       SHAPE: tl.constexpr, TABLE: tl.constexpr, DMIN: tl.constexpr, POLAR: tl.constexpr,
                       SENSOR: tl.constexpr, POINT_PIXEL: tl.constexpr, CURVED: tl.constexpr, F64: tl.constexpr,
                       HAS_FIRST_SWEEP: tl.constexpr, BLOCK_P: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_P + tl.arange(0, BLOCK_P)
    live = offs < P
    s_idx = tl.load(s_ptr + offs, mask=live, other=0)
    f_idx = tl.load(f_ptr + offs, mask=live, other=0)
    sub = tl.load(g_ptr + _SUBPIXEL)
    layer_step = tl.load(g_ptr + _LAYER_STEP)
    na = tl.load(g_ptr + _CELLS)
    nb = tl.load(g_ptr + _CELLS + 1)
    nc = tl.load(g_ptr + _CELLS + 2)
    default_f = tl.load(g_ptr + _DEFAULT_F)
    kahn = tl.load(g_ptr + _KAHN)
    dmin = tl.load(g_ptr + _DMIN)
    fudge = tl.load(g_ptr + _FUDGE)
    n_prod = tl.load(g_ptr + _CELLS_PRODUCT)
    f_sq = default_f * default_f
    zero = sub * 0.0
    half_sub = sub / 2.0

    found = tl.zeros([BLOCK_P], dtype=sub.dtype)  # 1 once a pixel has met a source that -dmin spares
    polar = found  # the polarization at that source (-dmin only; else taken after the loops)
    alive = live  # where -dmin spares the current source (DMIN only)
    pending = offs < 0  # a thread-first pixel whose first sweep is still to come (HAS_FIRST_SWEEP only)
    if HAS_FIRST_SWEEP:
        for j in range(0, n_first):
            pending = pending | (offs == tl.load(first_pos_ptr + j))

    total = found + tl.load(g_ptr + _WATER_BG)  # I starts at the water background (spec §6.1)
    subpixels = n_os * n_os
    for sp in range(0, n_layers * subpixels):  # layer t > subpixel i_s > subpixel i_f, as one loop
        t = sp // subpixels
        i_s = (sp % subpixels) // n_os
        i_f = sp % n_os
        sdet = sub * (s_idx * n_os + i_s).to(sub.dtype) + half_sub
        fdet = sub * (f_idx * n_os + i_f).to(sub.dtype) + half_sub
        px, py, pz = _position(fdet, sdet, layer_step * t, g_ptr, CURVED, F64)
        air = tl.sqrt(px * px + py * py + pz * pz)
        dx = px / air
        dy = py / air
        dz = pz / air
        for src in range(0, n_sources):
            base = src_ptr + src * _SRC
            wavelength = tl.load(base + 3)
            sx = (dx - tl.load(base)) / wavelength  # scattering vector S, 1/m (spec §5.5)
            sy = (dy - tl.load(base + 1)) / wavelength
            sz = (dz - tl.load(base + 2)) / wavelength
            weight = f_sq + zero
            if DMIN:
                stol = 0.5 * tl.sqrt(sx * sx + sy * sy + sz * sz)
                alive = ~((stol > 0.0) & (dmin > 0.5 / stol))
                if POLAR != 0:
                    here = _polarization(dx, dy, dz, src_ptr, src, kahn, POLAR)
                else:
                    here = found * 0.0 + 1.0
                polar = tl.where(alive & (found == 0.0), here, polar)
                found = tl.where(alive, 1.0, found)
                weight = tl.where(alive, weight, 0.0)
            if HAS_FIRST_SWEEP:  # a thread-first pixel's first sweep takes the first sweep's orientations
                if DMIN:
                    use_first = pending & alive
                else:
                    use_first = pending
                if tl.max(use_first.to(tl.int32), axis=0) > 0:
                    total = _orientation_sum(total, sx, sy, sz, weight, alive, live, axes_ptr, first_ptr, use_first,
                                             n_orient, g_ptr, table_ptr, na, nb, nc, default_f, fudge, n_prod,
                                             h_min, k_min, l_min, h_range, k_range, l_range,
                                             SHAPE, TABLE, DMIN, F64, True)
                else:
                    total = _orientation_sum(total, sx, sy, sz, weight, alive, live, axes_ptr, first_ptr, use_first,
                                             n_orient, g_ptr, table_ptr, na, nb, nc, default_f, fudge, n_prod,
                                             h_min, k_min, l_min, h_range, k_range, l_range,
                                             SHAPE, TABLE, DMIN, F64, False)
                pending = pending & ~use_first
            else:
                total = _orientation_sum(total, sx, sy, sz, weight, alive, live, axes_ptr, first_ptr, pending,
                                         n_orient, g_ptr, table_ptr, na, nb, nc, default_f, fudge, n_prod,
                                         h_min, k_min, l_min, h_range, k_range, l_range,
                                         SHAPE, TABLE, DMIN, F64, False)
    # The finish factors (spec §5.4, §5.5, §5.8), after the loops so that nothing of them is live across them:
    # the solid angle and (without -dmin) the polarization at the first subpixel of layer 0, the capture
    # fraction at the first subpixel of the last layer.
    sdet0 = sub * (s_idx * n_os).to(sub.dtype) + half_sub
    fdet0 = sub * (f_idx * n_os).to(sub.dtype) + half_sub
    px, py, pz = _position(fdet0, sdet0, zero, g_ptr, CURVED, F64)
    air = tl.sqrt(px * px + py * py + pz * pz)
    if POINT_PIXEL:
        omega = 1.0 / (air * air)
    else:
        pixel = tl.load(g_ptr + _PIXEL)
        omega = pixel * pixel / air / air * tl.load(g_ptr + _CLOSE) / air
    if not DMIN:
        if POLAR == 0:
            polar = omega * 0.0 + 1.0
        else:
            polar = _polarization(px / air, py / air, pz / air, src_ptr, 0, kahn, POLAR)
    if SENSOR:
        qx, qy, qz = _position(fdet0, sdet0, layer_step * (n_layers - 1), g_ptr, CURVED, F64)
        q_air = tl.sqrt(qx * qx + qy * qy + qz * qz)
        cos_in = (qx / q_air) * tl.load(g_ptr + _ODET) + (qy / q_air) * tl.load(g_ptr + _ODET + 1) \
            + (qz / q_air) * tl.load(g_ptr + _ODET + 2)
        capture = tl.exp(tl.load(g_ptr + _CAP_NEAR) / cos_in) - tl.exp(tl.load(g_ptr + _CAP_FAR) / cos_in)
    else:
        capture = omega * 0.0 + 1.0
    value = total * tl.load(g_ptr + _SCALE) * capture * polar * omega
    tl.store(out_ptr + s_idx * fpixels + f_idx, value, mask=live)


def block_pixels(device: torch.device) -> int:
    """Pixels per program on ``device``: :data:`BLOCK_P` on CUDA, :data:`INTERPRETER_BLOCK_P` elsewhere."""
    return BLOCK_P if device.type == "cuda" else INTERPRETER_BLOCK_P


def render_fused(setup: Setup, params: FusedParams, block_p: int | None = None) -> Tensor:
    """(slow, fast) image of ``setup`` by one launch of :func:`fused_image_kernel`, the thread-first pixels' first
    sweeps included (spec §4.7); 0 outside the ROI and mask.
    ``block_p``: pixels per program (default :func:`block_pixels`)."""
    if block_p is None:
        block_p = block_pixels(setup.device)
    det = setup.config.detector
    # raster order; when every pixel is rendered the kernel writes each one, so no fill is launched
    image = (torch.empty if setup.raster else torch.zeros)(det.spixels * det.fpixels, dtype=setup.dtype,
                                                           device=setup.device)
    P = setup.pixels_s.numel()
    first = params.first_positions  # the thread-first pixels (spec §4.7); None: none
    if P:
        grid = (triton.cdiv(P, block_p),)
        fused_image_kernel[grid](
            setup.pixels_s, setup.pixels_f, image, params.geometry, params.sources, params.axes, params.table,
            params.axes if first is None else params.first_axes,
            setup.pixels_s if first is None else params.first_positions,
            P, setup.thickness.count, setup.oversample, params.sources.shape[0], params.axes.shape[0],
            det.fpixels, 0 if first is None else params.first_positions.shape[0], *params.table_box,
            SHAPE=params.shape, TABLE=params.has_table, DMIN=params.has_dmin, POLAR=params.polar,
            SENSOR=params.sensor, POINT_PIXEL=params.point_pixel, CURVED=params.curved,
            F64=setup.dtype == torch.float64, HAS_FIRST_SWEEP=first is not None,
            BLOCK_P=block_p, num_warps=NUM_WARPS)
    return image.reshape(det.spixels, det.fpixels)


__all__ = ["BLOCK_P", "INTERPRETER_BLOCK_P", "NUM_WARPS", "block_pixels", "fused_image_kernel", "render_fused"]
