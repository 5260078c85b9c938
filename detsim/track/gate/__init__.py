"""The CI gate over pytest-benchmark runs (docs/bench-gate.md)."""
