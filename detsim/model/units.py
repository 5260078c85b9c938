"""Physical constants and unit conversions (spec §1).

Internal units are SI: metres, radians, seconds. The one exception is the reciprocal cell vectors
``a*, b*, c*``, which stay in inverse Angstrom because the lattice shape factors use them that way
(spec §4.4, §5.6). Every value below is the one nanoBragg.c uses, so images agree to the last bits.
"""

import math

R_E_SQ_M2 = 7.94079248018965e-30  # Thomson cross-section r_e^2 (m^2)
DEFAULT_FLUENCE_PER_M2 = 1.25932015286227086e29  # photons/m^2; chosen so that r_e^2 * fluence = 1
AVOGADRO = 6.02214179e23
WATER_F = 2.57  # forward scattering amplitude of a water molecule (electrons)
WATER_MW_G_PER_MOL = 18.0
HC_EV_A = 12398.42  # lambda[A] = HC_EV_A / E[eV]

ANGSTROM = 1e-10  # Å -> m where nanoBragg multiplies: cell axes (nanoBragg.c L2050), -dmin (L957)
DEG = math.pi / 180.0  # for reporting angles in degrees; typed angles go through deg_to_rad
M_1_PI = 0.318309886183790671537767526745028724  # C's M_1_PI, the double nearest 1/pi
RTD = 180.0 * M_1_PI  # nanoBragg's degrees per radian (nanoBragg.c L349)


# Typed values become SI exactly as nanoBragg.c computes them: x / 1000.0 and x * 1e-3 are different doubles
# for many x (11.108 / 1000.0 != 11.108 * 1e-3), and one rounding apart in an input can move a pixel across
# a float32 rounding boundary. Each works on floats and tensors alike.

def mm_to_m(x):
    """Lengths typed in mm: ``atof(..)/1000.0`` (nanoBragg.c L570-L875)."""
    return x / 1000.0


def deg_to_rad(x):
    """Angles typed in degrees: ``atof(..)/RTD`` (nanoBragg.c L545-L949)."""
    return x / RTD


def mrad_to_rad(x):
    """Divergences typed in mrad: ``atof(..)/1000.0`` (nanoBragg.c L895-L915)."""
    return x / 1000.0


def wavelength_m(x):
    """A wavelength in Å: ``/1.0e10`` (-lambda, -energy: nanoBragg.c L855, L859)."""
    return x / 1.0e10


def sensor_um_to_m(x):
    """Sensor thickness and attenuation length typed in µm: ``atof(..)*1e-6`` (nanoBragg.c L749, L754)."""
    return x * 1e-6


def water_um_to_m(x):
    """The water thickness typed in µm: ``atof(..)/1e6`` (nanoBragg.c L1113)."""
    return x / 1e6
