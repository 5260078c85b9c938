"""detsim against the reference images (docs/parity.md)."""
