"""The tracking suite: performance, parity and determinism of detsim, commit by commit.

Layers, each importing only those below it (``tests/track/test_track_layout.py`` checks it); the core never
imports any of it. On top, :mod:`.cli` and :mod:`.commands` (``detsim-track``, one module per subcommand:
arguments, calls into the areas, printing, exit codes). Then the areas, one job each: :mod:`.publish` (the
status page, asv's page offline), :mod:`.confirm` (re-measuring a timing suspect), :mod:`.verdict` (findings
and the report), :mod:`.history` (what asv recorded), :mod:`.baselines` (the golden image hashes per machine
class), :mod:`.target` (another repository's nanoBragg-compatible command: its renders, its first bad commit),
:mod:`.explain` (why a regression happened), :mod:`.gate` (the pytest-benchmark gate), :mod:`.parity`
(against the reference images), :mod:`.speed` (against nanoBragg.c), :mod:`.compare` (do two runs differ, and where
first: the bit-for-bit matrix, the first op where two runs differ, the first traced quantity that differs),
:mod:`.gpu` (the prepared device check, .ci/gpu), :mod:`.evidence` (hashed bundles of test runs), :mod:`.cost`
(instruction counts) and
:mod:`.runtime` (what needs torch or the core). At the bottom :mod:`.base`: every fact the areas share,
defined once, in the standard library and numpy only.
"""
