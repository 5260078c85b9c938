"""Hashed evidence bundles of test runs (``detsim-track evidence``, docs/evidence.md)."""
