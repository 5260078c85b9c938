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

MM = 1e-3
UM = 1e-6
ANGSTROM = 1e-10
MRAD = 1e-3
DEG = math.pi / 180.0
