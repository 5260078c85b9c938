"""The one tolerance table of the test suite.

Parity against nanoBragg.c is judged by Pearson r (the project's acceptance criterion, defined once in
:mod:`detsim.track.base.metrics`); everything else by the named bounds below, each with the reason for
its value. float64's machine epsilon is 2.2e-16: a relative bound of 1e-15 allows a few roundings,
1e-12 a few thousand. A bound used as an absolute one is for O(1) quantities unless its comment says
what it is scaled by.
"""

import torch

from detsim.track.base.metrics import PARITY_MIN_R  # noqa: F401 - the acceptance threshold of every golden case

# ---------------------------------------------------------------- one quantity computed twice in float64

# A few roundings: O(1) vectors after one or two rotations by exact angles, statistics of six numbers.
F64_ULPS = 1e-15
# The same operations, possibly reordered by a library (matrix products, determinants of rotations),
# or one value reached by the same arithmetic on two paths (the observer's pixel value and the image's).
F64_SAME_OPERATIONS = 1e-14
# Tricubic interpolation of a cubic polynomial or at table nodes: 64 Lagrange terms in nanoBragg's
# polint form, whose cancellations lose a few more bits than a plain sum.
F64_POLYNOMIAL = 1e-13
# Different formulae for the same value (cell construction, geometry, a trace against its image, an
# independent scalar reference): thousands of roundings at most.
F64_ROUNDING = 1e-12
# The engine's vectorised sums against the scalar reference loop: hundreds of terms per pixel, summed
# in a different order and multiplied by factors computed in a different order.
F64_SUMMATION = 1e-11
# Gradients by autograd through the tricubic interpolant against the exact derivative of the cubic.
F64_GRADIENT = 1e-10
# Absolute, for structure factors of up to ~300 electrons: F64_ROUNDING relative on values ~100.
F64_STRUCTURE_FACTOR_ABS = 1e-10
# nanoBragg's unreduced grating phase sin(N pi h) against the reduced one: the argument's rounding grows
# with N |h| (4e-10 relative at N = 9, |h| = 60; 1.1e-9 of the small peak 144 at N = 3, 4, |h| = 60).
F64_UNREDUCED_PHASE = 2e-9
# An angle of ~1e-3 rad recovered by acos of its cosine: acos near 1 amplifies the cosine's rounding
# by 1 / angle.
F64_ACOS_SMALL_ANGLE = 1e-9

# ---------------------------------------------------------------- comparisons across dtypes and paths

# (rtol, atol) for comparing two detsim computations that should agree up to rounding.
ALLCLOSE = {
    torch.float64: (1e-10, 1e-12),
    torch.float32: (2e-4, 1e-6),
}

# float32 against float64 images of the same case (relative to the image maximum).
FLOAT32_VS_FLOAT64_MAX_REL = 1e-3
# float32 against float64 images of the same case, as a Pearson r: rounding is ~1e-7 of each pixel.
FLOAT32_VS_FLOAT64_MIN_R = 0.999999
# One pixel in float32 against its float64 value: float32 rounding of the sums, well above 6e-8.
FLOAT32_PIXEL_REL = 1e-4
# Tricubic structure factors in float32 against float64 (rtol, atol in electrons, for F up to ~300).
FLOAT32_TRICUBIC = (1e-4, 1e-3)

# The fused lane-sum kernel against its definition written with torch ops: the same formula, the
# grating evaluated in a different order (10x the ALLCLOSE bounds).
FUSED_KERNEL = {dtype: (rtol * 10, atol) for dtype, (rtol, atol) in ALLCLOSE.items()}
# The compiled path against the eager one: the grating of the reduced index (float64 eager keeps the
# full one; past N = 8 the compiled path takes the ratio of sines) and a different summation order.
COMPILED_VS_EAGER_MIN_R = {torch.float64: 0.999999, torch.float32: 0.9999}
COMPILED_VS_EAGER_MAX_REL = {torch.float64: 1e-10, torch.float32: 1e-4}  # relative to the image maximum
# The Triton kernel against the eager path, relative to the image maximum (as above, fewer reorderings;
# the kernel's Miller indices, d . (a / lambda) - (a . i) / lambda, are some 1e-14 off the eager path's
# a . ((d - i) / lambda), nanoBragg's order: 2.2e-12 on the test case).
TRITON_VS_EAGER_MAX_REL = {torch.float64: 1e-11, torch.float32: 1e-4}
# The fused whole-image kernel against the eager path in float64, relative to the image maximum: the
# lattice factor of the reduced index with a polynomial sine (a few units of the last place) and one
# division per step, fused multiply-adds in the geometry, and each pixel's sum added one term at a time:
# 3e-13 at worst on the golden and edge cases under the interpreter. In float32 the fused image is held to
# the bound the eager float32 image is held to, FLOAT32_VS_FLOAT64_MAX_REL.
FUSED_IMAGE_FLOAT64_MAX_REL = 1e-9

# A float32 pixel whose per-pixel terms were computed among more pixels (a job of several chunks): the
# vectorised atan2 rounds the last elements of a loop differently, one float32 unit (2^-23 relative) of a
# term, which the pixel's own sum may round to two.
FLOAT32_JOB_SIZE_REL = 2.0 ** -22

# torch.autograd.gradcheck in float64.
GRADCHECK = dict(eps=1e-6, atol=1e-5, rtol=1e-4)

# The eager path's in-place grating function against its float64 definition, relative to the peak
# value prod(N**2). float64 keeps nanoBragg's unreduced phase pi*N*h (F64_UNREDUCED_PHASE); float32
# reduces the index first and loses ~1e-6 to the polynomial.
GRATING_PEAK_REL = {
    torch.float64: F64_UNREDUCED_PHASE,
    torch.float32: 5e-6,
}

# ---------------------------------------------------------------- against printed or physical values

# nanoBragg's float32 output image against detsim's float64 value of the same pixel: the output's own
# rounding (2**-24 relative) on top of a few float64 roundings of a different summation order, one float32
# unit in the last place at most (the golden README's cross-builds differ by as much).
FLOAT32_IMAGE_REL = 2.0 ** -23
# nanoBragg's printout with 4 decimals: half a unit of the last digit.
PRINTED_4_DECIMALS_ABS = 5e-5
# nanoBragg's printout with 6 significant digits ("volume = 481811 A^3"), relative.
PRINTED_6_DIGITS_REL = 1e-5
# a_i . b*_j of a -cell construction: the diagonal is a common value near 1 (1.0002 for a triclinic cell).
CELL_DUALITY_DIAGONAL_ABS = 1e-3
# Above this relative change an image has visibly changed (e.g. a -dmin cut removed signal).
VISIBLE_CHANGE_REL = 1e-6
# A beam spot's pixel index: millimetre-to-metre conversions and divisions by the pixel size, far
# below every convention's half-pixel offset.
BEAM_SPOT_PX_ABS = 1e-9
# sin^2(pi) / sin^2(pi/5) in float64: sin(pi) rounds to 1.2e-16, so the zero of the grating is ~1e-32.
GRATING_ZERO_ABS = 1e-24
# Mosaic rotation angles recovered by acos of the trace (which loses precision near 0) against the
# spread, relative (or absolute in radians for spreads of a few degrees).
MOSAIC_SPREAD_SLACK = 1e-6
# Numerical Recipes' gammln (nanoBragg's) against math.lgamma: its series is accurate to ~2e-10.
GAMMLN_VS_LGAMMA = dict(rel=1e-6, abs=1e-6)
# Standard errors allowed for sample moments of pseudo-random draws (a fixed seed: deterministic).
MOMENT_SIGMAS = 5
