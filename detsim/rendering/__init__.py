"""The engine: a configuration prepared once, then the image rendered chunk by chunk by one of its paths.

In: a :class:`~detsim.model.config.SimulationConfig`. Out: the image tensor (slow, fast). ``engine`` holds
``prepare``/``render``/``simulate`` and the execution modes; ``setup`` what is resolved once (with
``thread_first_sweep``); ``pixel_terms`` a chunk's per-pixel terms; ``lane_blocks`` the sampling loops in blocks
and their Miller indices; ``paths`` the four maths paths of a chunk; ``observed_path`` the GENERAL path with a
diagnosis hook (its :class:`~detsim.rendering.observed_path.Observer` protocol, which :mod:`detsim.diagnostics`
implements); ``interpolation`` nanoBragg's tricubic switch; ``lattice_factor`` the lattice factor in every
path's form (``lattice_factor_triton``: its Triton kernel).
"""
