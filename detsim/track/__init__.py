"""The tracking suite: performance, parity and determinism of detsim, commit by commit.

Layers, each importing only those below it (``tests/track/test_track_layout.py`` checks it, lazy imports
included); the core (:mod:`detsim` outside this package) never imports any of it:

* :mod:`.cli` and :mod:`.commands` - ``detsim-track`` and one module per subcommand: arguments, the
  calls into the areas, printing and exit codes;
* the areas, one job each:

  * :mod:`.publish` - the status page and the offline asv page;
  * :mod:`.confirm` - re-measuring a timing suspect at its last good and first bad commits;
  * :mod:`.verdict` - judging every series' latest value: findings, the report, its lines;
  * :mod:`.history` - reading what asv recorded: config, result files, commit order, series;
  * :mod:`.baselines` - the stored golden image hashes per machine class, and rendering them;
  * :mod:`.explain` - why a regression happened, across commits (cost, parity, image hash);
  * :mod:`.gate` - the pytest-benchmark gate's result files and rules;
  * :mod:`.parity` - detsim against the reference images, with pictures;
  * :mod:`.speed` - detsim's paths against nanoBragg.c;
  * :mod:`.determinism` - the bit-for-bit matrix over repeats, threads, dtypes, devices, modes;
  * :mod:`.divergence` - the first op where two runs differ, culprit or victim;
  * :mod:`.traces` - the first quantity where two per-pixel traces differ;
  * :mod:`.evidence` - hashed bundles of test runs;
  * :mod:`.cost` - instruction counts under valgrind;
  * :mod:`.runtime` - what needs torch or detsim's core imported, which the base may not: writing
    results, this process's environment record and threads, tensors' bytes, the determinism and
    divergence targets;

* :mod:`.base` - every fact the areas share, defined once, in the standard library and numpy only (the
  asv suite loads it from the working tree beside any commit's ``detsim``).
"""
