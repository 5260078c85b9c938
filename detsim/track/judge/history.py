"""The recorded history: one tidy pandas DataFrame of a project's recorded results (:func:`history_frame`), read
once from asv's results files (:mod:`.results_files`); the one intermediate between what asv stored and the verdict
(the judge reads its series from it: :func:`.series.series_of`), and what ``detsim-track history`` writes.

One row per commit, environment, benchmark and parameter combination measured by the suite's current definition
of the benchmark, in commit order (as :func:`~.results_files.load_recorded` orders the results files), with the
columns of :data:`COLUMNS`: ``value`` is NaN where nothing was measured and ``status`` says why (a
:class:`~detsim.track.base.status.Status` value: ``ok``, ``failed`` where asv stored null, ``skipped`` where it
stored NaN); ``spread`` is asv's interquartile range of the samples (NaN where it stored none); ``samples`` the raw
samples (a tuple, or None); ``unit``, ``case`` and ``threshold`` what the benchmark says about itself
(:mod:`.benchmarks`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Iterator, Mapping

import pandas as pd

from detsim.track.base.status import Status
from detsim.track.judge.family import Family
from detsim.track.judge.thresholds import DEFAULT_THRESHOLD, PARITY
from detsim.track.judge.benchmarks import case_of, family_of, param_labels, param_values, threshold_for
from detsim.track.judge.results_files import Recorded, ResultsError, cell, load_recorded

COLUMNS = ("commit", "date", "machine", "environment", "benchmark", "family", "parameters", "value", "spread",
           "status", "samples", "unit", "case", "threshold")
KEY = ["environment", "benchmark", "parameters"]  # one series of the judge per key


def _current(row: list, columns: list, bench: Mapping | None) -> bool:
    """Whether a row was measured by the suite's current definition of its benchmark."""
    version = cell(row, columns, "version")
    return bench is not None and (version is None or str(version) == str(bench.get("version")))


def _spreads(row: list, columns: list, count: int) -> list[float]:
    """asv's interquartile range of each parameter combination's samples (NaN where it stored none)."""
    low, high = cell(row, columns, "stats_q_25"), cell(row, columns, "stats_q_75")
    if not (isinstance(low, list) and isinstance(high, list) and len(low) == len(high) == count):
        return [math.nan] * count
    return [b - a if isinstance(a, (int, float)) and isinstance(b, (int, float)) else math.nan
            for a, b in zip(low, high)]


def _rows(data: Mapping, name: str, row: list, bench: Mapping, machine: str, thresholds: Mapping) -> Iterator[tuple]:
    """The frame's rows of one benchmark's row in one asv results file, one per parameter combination."""
    combos = param_labels(bench)
    values = [None] * len(combos) if row[0] is None else row[0]  # None: the whole benchmark failed
    if len(values) != len(combos):
        raise ResultsError(f"results of {data['commit_hash'][:8]}: {name} has {len(values)} values "
                           f"for {len(combos)} parameter combinations")
    columns = data["result_columns"]
    samples = cell(row, columns, "samples")
    if not isinstance(samples, list) or len(samples) != len(combos):
        samples = [None] * len(combos)
    date = pd.Timestamp(data["date"], unit="ms", tz="UTC") if isinstance(data.get("date"), (int, float)) else pd.NaT
    family, unit = family_of(name, bench), str(bench.get("unit", ""))
    # a parity no row names is exact (a target's recorded before its parity row: any rise over the best)
    threshold = threshold_for(name, thresholds, PARITY.value if family is Family.PARITY else DEFAULT_THRESHOLD)
    for params, value, sample, spread in zip(combos, values, samples, _spreads(row, columns, len(combos))):
        value = None if value is None else float(value)
        status = Status.FAILED if value is None else Status.OK if math.isfinite(value) else Status.SKIPPED
        yield (data["commit_hash"], date, machine, data["env_name"], name, family.value, params,
               math.nan if value is None else value, spread, status.value,
               tuple(float(s) for s in sample) if isinstance(sample, list) and sample else None,
               unit, case_of(bench) or param_values(params).get("case"), threshold)


def frame_of(files: list[dict], benchmarks: Mapping, conf: Mapping, machine: str = "") -> pd.DataFrame:
    """The frame of asv results ``files`` (in commit order) of ``machine``: rows of benchmarks not in the current
    suite, or measured by an older definition of theirs, are left out."""
    thresholds = conf.get("regressions_thresholds") or {}
    rows = []
    for data in files:
        for name, row in data["results"].items():
            bench = benchmarks.get(name)
            if _current(row, data["result_columns"], bench):
                rows.extend(_rows(data, name, row, bench, machine, thresholds))
    frame = pd.DataFrame.from_records(rows, columns=list(COLUMNS))
    frame["date"] = pd.to_datetime(frame["date"], utc=True)
    return frame.astype({"value": "float64", "spread": "float64", "threshold": "float64"})


def recorded_frame(recorded: Recorded) -> pd.DataFrame:
    """The frame of what :func:`~.results_files.load_recorded` read."""
    return frame_of(recorded.files, recorded.benchmarks, recorded.config, recorded.machine)


def history_frame(root: Path, machine: str | None = None) -> pd.DataFrame:
    """The recorded history of the project at ``root`` (the folder holding asv.conf.json) on ``machine`` (default:
    the only machine recorded, or this host), as one tidy frame (:data:`COLUMNS`). Raises
    :class:`~.results_files.ResultsError` naming an unusable stored file."""
    return recorded_frame(load_recorded(Path(root), machine))


FORMATS = ("csv", "parquet")  # what ``detsim-track history`` writes


def table_bytes(frame: pd.DataFrame, form: str) -> bytes:
    """The frame as a file of ``form`` (:data:`FORMATS`): CSV with dates as ``2026-11-21 22:26:40+00:00`` and the
    samples as a JSON list (empty without any), or Parquet, the samples a list of floats."""
    if form == "parquet":
        import io

        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return buffer.getvalue()
    if form != "csv":
        raise ValueError(f"not a table format: {form!r} (one of {', '.join(FORMATS)})")
    text = frame.assign(samples=[json.dumps(list(s)) if isinstance(s, tuple) else "" for s in frame["samples"]])
    return text.to_csv(index=False).encode()
