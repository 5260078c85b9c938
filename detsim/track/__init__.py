"""The tracking suite: performance, parity and determinism of detsim, commit by commit.

Layers, each importing only those below it (``tests/track/test_track_layout.py`` checks it); the core never
imports any of it. On top, :mod:`.cli` and :mod:`.commands` (``detsim-track``, one module per subcommand:
arguments, calls into the areas, printing, exit codes). Then the areas, one job each: :mod:`.publish` (the
status page, asv's page offline), :mod:`.confirm` (re-measuring a timing suspect), :mod:`.verdict` (findings
and the report), :mod:`.recorder` (a project's commits measured into its results: detsim's own and a target's;
its steps run by path, standard library only), :mod:`.history` (what asv recorded), :mod:`.target` (another repository's
nanoBragg-compatible command: its renders, its first bad commit), :mod:`.explain` (why a regression
happened), :mod:`.gate` (the pytest-benchmark gate), :mod:`.measure` (what is measured outside asv:
instruction counts, speed against nanoBragg.c, parity against the reference images), :mod:`.compare` (do
two runs differ, and where first: the bit-for-bit matrix, the first op where two runs differ, the first
traced quantity that differs), :mod:`.gpu` (the prepared device check, .ci/gpu) and :mod:`.evidence`
(hashed bundles of test runs). At the bottom :mod:`.base`: every fact the areas share, defined once, and
what every command does alike (safe output, child processes, git, this process and its devices).
"""

from __future__ import annotations

from pathlib import Path


def history(repo: str | Path | None = None, machine: str | None = None):
    """The recorded history of the project at ``repo`` (the folder holding asv.conf.json; default: the git work
    tree enclosing the working directory) on ``machine`` (default: the only machine recorded, or this host), as
    one tidy pandas DataFrame: a row per commit, environment, benchmark and parameter combination, with the columns
    commit, date, machine, environment, benchmark, family, parameters, value, spread, status, samples, unit, case
    and threshold (:mod:`detsim.track.judge.history`; docs/history.md). ``detsim-track history`` writes the same
    frame as CSV or Parquet. Raises :class:`~detsim.track.judge.results_files.ResultsError` (a ValueError) naming an
    unusable stored file."""
    from detsim.track.base.provenance import repo_root
    from detsim.track.judge.history import history_frame

    return history_frame(Path(repo) if repo is not None else repo_root() or Path.cwd(), machine)
