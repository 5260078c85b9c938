"""detsim against the reference images: per-case comparison and the report with pictures."""
