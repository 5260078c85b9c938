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
