"""Which quantity of a per-pixel trace differs first? (``detsim-track trace-diff``, docs/trace.md)"""
