"""The tracking suite: performance, parity and determinism of detsim, commit by commit.

``detsim-track`` (:mod:`detsim.track.cli`) dispatches each subcommand to a thin ``cmd_*`` module of the
sub-package of its area; the pure helpers beside it do the work, and :mod:`detsim.track.base` holds
every fact the areas share (golden cases, parity metric, image hash, provenance and machine class,
atomic output, exit codes, workloads).

* :mod:`.history` - ``regressions`` (the verdict over asv's history) and ``baselines``;
* :mod:`.gate` - ``bench-gate``, the CI gate over pytest-benchmark runs;
* :mod:`.parity` - ``parity``, detsim against reference images, with pictures;
* :mod:`.speed` - ``speed``, detsim's paths against nanoBragg.c;
* :mod:`.determinism` - ``determinism``, the bit-for-bit matrix;
* :mod:`.divergence` - ``diverge``, the first op where two runs differ;
* :mod:`.traces` - ``trace-diff``, the first quantity where two per-pixel traces differ;
* :mod:`.evidence` - ``evidence``, archived bundles of test runs.

The core (:mod:`detsim` outside this package) never imports it.
"""
