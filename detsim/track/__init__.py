"""The tracking suite: performance, parity and determinism of detsim, commit by commit.

Data flows one way: record -> history -> judge -> report. Each area below imports only areas listed after it, and the
core never imports any of it (``tests/track/test_track_layout.py`` checks both, and that no two areas import each other
in a cycle). From the top:

- :mod:`.cli` and :mod:`.commands`: ``detsim-track``, one module per subcommand (arguments, inputs and outputs
  checked up front, calls into the areas, printing, exit codes).
- :mod:`.recorder`: a project's commits measured into its results; detsim is its first target (its asv suite in
  asv's environments), another repository a target like it (built into the project's venv, on this machine or a
  Dask cluster). Its steps run by path with the standard library only, so a commit that breaks the package
  cannot break the run that records the break.
- :mod:`.target`: a tracked repository whose command takes nanoBragg's arguments: its spec, builds, renders,
  project folder, first bad commit.
- :mod:`.report`: the views of one stored judgement (the status page, asv's page offline, verdict.md) and why a
  regression happened (``explain``).
- :mod:`.judge`: the recorded history read once into one pandas DataFrame (:mod:`.judge.history`), its series,
  events and verdict; re-measuring a timing suspect; the pytest-benchmark gate.
- :mod:`.gpu`: the prepared device check (``.ci/gpu``). :mod:`.evidence`: hashed bundles of pytest runs.
  :mod:`.compare`: do two runs differ, and where first (the bit-for-bit matrix, the first op, the first traced
  quantity). :mod:`.measure`: what is measured outside asv (instruction counts, speed against nanoBragg.c,
  parity against the reference images, device launches).
- :mod:`.base`: every fact the areas share, defined once (golden cases, hashes, metrics, exit codes, statuses,
  workloads), and what every command does alike (safe output, child processes, git, this process's devices).
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
