"""Do two runs differ, and where first? (``detsim-track determinism``, ``diverge``, ``trace-diff``,
``evidence``, and what ``explain`` says about image-hash, reproducibility and parity changes;
docs/determinism.md, docs/trace.md, docs/evidence.md)

Inputs: a target (a golden case, a nanoBragg command line, a callable, a module or a script) run here or in
a fresh interpreter, at one commit's package or two (:mod:`.runs`); two per-pixel trace logs, whatever
printed them (:mod:`.traces`); a pytest selection run on every device, and the area's earlier bundles
(:mod:`.bundle`).

The one record of a run (:mod:`.record`): what ran and where (label, :class:`~.record.RunConfig`, threads,
settings), its results' digests (the sha256 of native bytes, never-written memory left out; a matrix run
adds its float32 bytes' sha256 and keeps the tensors for diffs) and, when recorded op by op
(:mod:`.recorder`: aten ops and Triton launches), the events in order, each with its tensors' digests. A
:class:`~.record.RunRecord` round-trips through JSON, so runs recorded apart compare.

One comparer, :func:`~.outputs.compare_outputs`, answers "is each named output the same in both, and which
differs first?" for every record here, each read as named outputs: a run's results
(:func:`~.firstdiff.compare_results`: the matrix's cells, and the divergence finder's
:func:`~.firstdiff.compare_records`), a trace's quantities per pixel (:mod:`.traces`), an evidence bundle's
tests, warnings, runs and stable artifacts against the previous bundle's (:mod:`.previous`). Three things are
other questions and keep their own rules: the op-stream walk over a recorded run's events (:mod:`.firstdiff`:
which event departs first and who produced its inputs, the causal path inside a run, not an output-by-output
comparison); a bundle's test times, judged against a noisy history (:mod:`.durations`); and a bundle checked
against its own ``sha256.txt`` (:mod:`.manifest`: one bundle's integrity, not two runs).

Outputs: which runs agree bit for bit across repeats, threads, dtypes, devices and modes (:mod:`.matrix`);
the first divergent event of two records and why, with its victims (:mod:`.firstdiff`, :mod:`.divergences`),
in words for ``explain`` (:mod:`.op_streams`); the first traced quantity that differs (:mod:`.traces`); an
evidence bundle of a pytest run (logs, junit XML, ``env.json``, ``commands.txt``, ``results.json``,
``summary.md``, ``sha256.txt``: :mod:`.bundle`, :mod:`.pytest_runs`, :mod:`.outcomes`, :mod:`.summary`,
:mod:`.manifest`, :mod:`.plugin`) and what changed since the previous one (:mod:`.previous`,
:mod:`.durations`). Each comparison carries a verdict line and an exit code (0 agree, 1 differ, 2 nothing
comparable or a run crashed).

Not here: the reproducibility axes and cases (``detsim/track/base/golden.py``: the asv suite loads
``base`` from the working tree beside any commit, without torch) and the status page's commit-to-commit
image states (``detsim/track/judge/fingerprints.py``, drawn from the recorded history).
"""
