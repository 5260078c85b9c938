"""detsim's asv suite: one module per area (engine, parity, determinism, cli); see benchmarks/README.md."""
