"""Deterministic cost: instructions executed in a workload's measured region, counted under valgrind.

:mod:`.counting` runs a measured region in a fresh ``valgrind --tool=callgrind`` process with callgrind's
start/stop client requests around it and reads the total (the script, command and parse are
:mod:`detsim.track.base.callgrind`'s, which the asv suite shares); :mod:`.specs` names the small workloads
whose count the suite records (docs/bench-gate.md, "Instruction counts").
"""
