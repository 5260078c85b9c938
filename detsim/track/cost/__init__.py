"""Deterministic cost: instructions executed in a workload's measured region, counted under valgrind
(docs/bench-gate.md, "Instruction counts")."""
