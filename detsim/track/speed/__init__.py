"""detsim's paths against nanoBragg.c on the named workloads: measurements and tables."""
