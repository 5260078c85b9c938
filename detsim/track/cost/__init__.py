"""Deterministic cost: instructions executed in a workload's measured region, counted under valgrind.

:mod:`.counting` runs a measured region in a fresh ``valgrind --tool=callgrind`` process with callgrind's
start/stop client requests around it and reads the total; :mod:`.workloads` names the small workloads
whose count the suite records (docs/bench-gate.md, "Instruction counts").
"""
