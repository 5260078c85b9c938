"""The tracking suite: performance, parity and determinism of detsim, commit by commit.

Layers, each importing only those below it (``tests/track/test_track_layout.py`` checks it); the core never
imports any of it. On top, :mod:`.cli` and :mod:`.commands` (``detsim-track``, one module per subcommand:
arguments, calls into the areas, printing, exit codes). Then the areas, one job each: :mod:`.publish` (the
status page, asv's page offline), :mod:`.confirm` (re-measuring a timing suspect), :mod:`.verdict` (findings
and the report), :mod:`.history` (what asv recorded), :mod:`.target` (another repository's
nanoBragg-compatible command: its renders, its first bad commit), :mod:`.explain` (why a regression
happened), :mod:`.gate` (the pytest-benchmark gate), :mod:`.measure` (what is measured outside asv:
instruction counts, speed against nanoBragg.c, parity against the reference images), :mod:`.compare` (do
two runs differ, and where first: the bit-for-bit matrix, the first op where two runs differ, the first
traced quantity that differs), :mod:`.gpu` (the prepared device check, .ci/gpu) and :mod:`.evidence`
(hashed bundles of test runs). At the bottom :mod:`.base`: every fact the areas share, defined once, and
what every command does alike (safe output, child processes, git, this process and its devices).
"""
