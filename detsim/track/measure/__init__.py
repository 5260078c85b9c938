"""What the suite measures outside asv, each by its own command or gate: instruction counts under valgrind
(:mod:`.cost`; inputs: a region or a counted workload, output: a count), detsim's paths against nanoBragg.c
(:mod:`.speed`, ``detsim-track speed``; inputs: workloads, modes, dtypes, threads, output: rows and their
table) and detsim against the reference images (:mod:`.parity`, ``detsim-track parity``; inputs: cases,
output: case results, pictures and pages)."""
