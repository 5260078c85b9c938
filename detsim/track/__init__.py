"""The tracking suite: performance, parity and determinism of detsim, commit by commit.

``detsim-track`` (:mod:`detsim.track.cli`) dispatches to one module per job; :mod:`detsim.track.common`
holds what they share (environment records, UTC stamps, atomic files and bundle folders).
"""
