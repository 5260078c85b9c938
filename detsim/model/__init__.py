"""The physical model: the typed configuration and what it resolves to, independent of pixels and chunks.

In: a :class:`~detsim.model.config.SimulationConfig` (``config``, with ``units``). Out: detector geometry
(``geometry``, ``rotation``), the crystal lattice and its orientations (``crystal``), step counts
(``sampling``), the incident sources (``sources``), structure factors (``structure_factors``),
nanoBragg's random streams (``rng``) and the per-pixel physics kernels (``physics``).
"""
