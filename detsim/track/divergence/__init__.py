"""Where do two runs of one computation first differ, and why? (``detsim-track diverge``, docs/determinism.md)"""
