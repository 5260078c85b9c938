"""detsim's execution paths against nanoBragg.c on the reference workloads: ``detsim-track speed``."""
