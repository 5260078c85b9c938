"""The one tolerance table of the test suite.

Parity against nanoBragg.c is judged by Pearson r (the project's acceptance criterion); everything
else by (rtol, atol) per dtype.
"""

import torch

PARITY_MIN_R = 0.9995  # acceptance threshold for every golden case, float64 and float32 alike

# (rtol, atol) for comparing two detsim computations that should agree up to rounding.
ALLCLOSE = {
    torch.float64: (1e-10, 1e-12),
    torch.float32: (2e-4, 1e-6),
}

# float32 against float64 images of the same case (relative to the image maximum).
FLOAT32_VS_FLOAT64_MAX_REL = 1e-3

# torch.autograd.gradcheck in float64.
GRADCHECK = dict(eps=1e-6, atol=1e-5, rtol=1e-4)

# The eager path's in-place grating function against its float64 definition, relative to the peak
# value prod(N**2). float64 keeps nanoBragg's unreduced phase pi*N*h, whose rounding grows with N*|h|
# (4e-10 at N = 9, |h| = 60); float32 reduces the index first and loses ~1e-6 to the polynomial.
GRATING_PEAK_REL = {
    torch.float64: 1e-9,
    torch.float32: 5e-6,
}
