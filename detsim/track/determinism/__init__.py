"""Is a computation deterministic, and across what? (``detsim-track determinism``, docs/determinism.md)"""
