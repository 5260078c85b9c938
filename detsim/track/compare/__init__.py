"""Do two runs differ, and where first? (``detsim-track determinism``, ``diverge``, ``trace-diff``, and what
``explain`` says about image-hash, reproducibility and parity changes; docs/determinism.md, docs/trace.md)

Inputs: a target (a golden case, a nanoBragg command line, a callable, a module or a script) run here or in
a fresh interpreter, at one commit's package or two (:mod:`.runs`); or two per-pixel trace logs, whatever
printed them (:mod:`.traces`).

The record of a run (:mod:`.record`): tensor digests (the sha256 of native bytes, never-written memory left
out; the matrix adds the float32 bytes' sha256), and, when recorded op by op (:mod:`.recorder`,
:mod:`.triton_hooks`), the events in order, each with its tensors' digests; a :class:`.record.RunRecord`
round-trips through JSON, so runs recorded apart compare.

Outputs: which runs agree bit for bit across repeats, threads, dtypes, devices and modes (:mod:`.matrix`);
the first divergent event of two records and why, with its victims (:mod:`.firstdiff`, :mod:`.divergences`,
:mod:`.diagnosis`), in words for ``explain`` (:mod:`.op_streams`); the first traced quantity that differs
(:mod:`.traces`). The matrix and the two comparisons each carry a verdict line and an exit code (0 agree,
1 differ, 2 nothing comparable or a run crashed).

Not here: the reproducibility axes and cases (``detsim/track/base/golden.py``: the asv suite loads
``base`` from the working tree beside any commit, without torch) and the status page's commit-to-commit
image states (``detsim/track/publish/fingerprints.py``, drawn from the recorded history).
"""
