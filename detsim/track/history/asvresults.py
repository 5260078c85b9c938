"""What a project has recorded (:func:`load_recorded`): asv's benchmark list and the results of one machine
(``<results_dir>/<machine>/``, asv's format version 2) in commit order, the per-commit image hashes earlier
versions of the suite wrote (``results/hashes/<commit>.json``), and every machine class's golden baseline
(:mod:`detsim.track.base.baseline_file`). Every unusable file raises :class:`~.jsonc.ResultsError` naming it.
"""

from __future__ import annotations

import math
import re
import socket
from dataclasses import dataclass
from pathlib import Path

from detsim.track.base.baseline_file import BaselineError, stored
from detsim.track.history.jsonc import ResultsError, load_config, read_json
from detsim.track.history.ordering import order_files, project_repo
from detsim.track.history.series import cell, family_of

HASHES = Path("results") / "hashes"  # one file per commit, relative to the project
MACHINE_FILE = "machine.json"  # asv's description of the machine, in each machine's results folder
HEX40 = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Recorded:
    """Everything stored for one machine, results in commit order."""

    config: dict  # asv.conf.json
    machine: str
    benchmarks: dict  # benchmark name -> asv's description of it
    files: list[dict]  # asv results files, in commit order
    hashes: dict[str, dict]  # commit -> its per-commit hash record (earlier versions of the suite)
    baselines: dict[str, dict]  # path (relative to the project) -> the golden baseline of one machine class
    notes: tuple[str, ...]  # what was left out, how the commits were ordered


def recorded_machines(root: Path) -> list[str]:
    """The machines asv recorded results for (one series each), sorted."""
    results_dir = root / load_config(root).get("results_dir", "results")
    return sorted(p.parent.name for p in results_dir.glob("*/machine.json"))


def _without_machine_file(results_dir: Path) -> list[Path]:
    """The folders of ``results_dir`` holding results but no ``machine.json`` (asv writes one beside them)."""
    folders = sorted(p for p in results_dir.glob("*/") if p.is_dir())
    return [p / MACHINE_FILE for p in folders
            if not (p / MACHINE_FILE).exists() and any(q.name != MACHINE_FILE for q in p.glob("*.json"))]


def choose_machine(results_dir: Path, requested: str | None) -> Path:
    """The results folder of ``requested``, of the only machine recorded, or of this host."""
    machines = sorted(p.parent.name for p in results_dir.glob("*/machine.json"))
    missing = _without_machine_file(results_dir)
    for path in missing:
        if requested in (None, path.parent.name) and (requested or not machines):
            raise ResultsError(f"{path}: missing, beside the results of machine {path.parent.name!r} (asv writes "
                               f"it; `asv machine --yes --machine {path.parent.name}` writes it again)")
    if requested:
        if requested not in machines:
            raise ResultsError(f"{results_dir}: no results for machine {requested!r} (recorded: {', '.join(machines) or 'none'})")
        return results_dir / requested
    if len(machines) == 1:
        return results_dir / machines[0]
    if not machines:
        raise ResultsError(f"{results_dir}: nothing recorded yet (run `asv run` or `bash .ci/track`)")
    host = socket.gethostname()
    if host in machines:
        return results_dir / host
    raise ResultsError(f"{results_dir}: several machines recorded ({', '.join(machines)}); pick one with --machine")


def load_benchmarks(results_dir: Path) -> dict:
    path = results_dir / "benchmarks.json"
    data = read_json(path)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for k, v in data.items() if k != "version"):
        raise ResultsError(f"{path}: not an asv benchmark list")
    return {k: v for k, v in data.items() if k != "version"}


def load_result_file(path: Path) -> dict:
    data = read_json(path)
    if not isinstance(data, dict) or data.get("version") != 2:
        raise ResultsError(f"{path}: not an asv results file (format version 2)")
    columns, results = data.get("result_columns"), data.get("results")
    if not isinstance(columns, list) or "result" not in columns or not isinstance(results, dict):
        raise ResultsError(f"{path}: no result_columns/results")
    if not isinstance(data.get("commit_hash"), str) or not HEX40.fullmatch(data["commit_hash"]):
        raise ResultsError(f"{path}: commit_hash is not a full git hash")
    for name, row in results.items():
        if not isinstance(row, list) or not row or len(row) > len(columns) or not isinstance(row[0], (list, type(None))):
            raise ResultsError(f"{path}: malformed row for {name}")
    return data


POSITIVE_FAMILIES = ("timing", "memory", "throughput", "reference")  # a 0 or negative value is impossible
COLUMNS = {"result": "value", "samples": "sample", "stats_ci_99_a": "interval bound", "stats_ci_99_b": "interval bound"}


def _impossible(value, family: str | None) -> str | None:
    """Why a stored number cannot be (None: a number, or null/NaN, asv's failure/skip). ``family`` None:
    an interval bound, which may be infinite or below 0 (asv stores (-inf, inf) for a single sample)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "not a number"
    if math.isnan(value) or family is None:
        return None
    if math.isinf(value):
        return "infinite (asv stores a skip as NaN, a failure as null)"
    if family in POSITIVE_FAMILIES and value <= 0:
        return "not positive"
    return None


def check_values(path: Path, data: dict, benchmarks: dict) -> None:
    """Every value, sample and interval bound in ``data`` is possible; else a ResultsError naming it."""
    columns = data["result_columns"]
    for name, row in data["results"].items():
        family = family_of(name, benchmarks.get(name) or {})
        for column, what in COLUMNS.items():
            values = cell(row, columns, column)
            for i, item in enumerate(values if isinstance(values, list) else []):
                for value in item if column == "samples" and isinstance(item, list) else [item]:
                    why = _impossible(value, None if column.startswith("stats_ci") else family)
                    if why:
                        raise ResultsError(f"{path}: {name} {column}[{i}]: {what} {value!r} is impossible ({why})")


def load_hashes(root: Path) -> dict[str, dict]:
    """Commit -> its per-commit hash record (empty without ``results/hashes``)."""
    hashes = {}
    for path in sorted((root / HASHES).glob("*.json")):
        data = hashes[path.stem] = read_json(path)
        if not isinstance(data, dict) or data.get("commit") != path.stem or not isinstance(data.get("cases"), dict):
            raise ResultsError(f"{path}: not a per-commit hash record")
    return hashes


def load_baselines(root: Path) -> tuple[dict[str, dict], list[str]]:
    """Every machine class's golden baseline (path -> content; empty, with a note, where none is stored)."""
    try:
        found = {str(path): data for path, data in stored(root).items()}
    except BaselineError as exc:
        raise ResultsError(str(exc)) from None
    return found, [] if found else ["no golden baseline of any machine class under results/baselines"]


def load_recorded(root: Path, machine: str | None = None) -> Recorded:
    conf = load_config(root)
    results_dir = root / conf.get("results_dir", "results")
    machine_dir = choose_machine(results_dir, machine)
    benchmarks = load_benchmarks(results_dir)
    files = []
    for path in sorted(machine_dir.glob("*.json")):
        if path.name != "machine.json":
            files.append(load_result_file(path))
            check_values(path, files[-1], benchmarks)
    if not files:
        raise ResultsError(f"{machine_dir}: no results recorded")
    files, notes = order_files(project_repo(root, conf), files)
    hashes = load_hashes(root)
    baselines, baseline_notes = load_baselines(root)
    return Recorded(config=conf, machine=machine_dir.name, benchmarks=benchmarks, files=files, hashes=hashes,
                    baselines=baselines, notes=tuple(notes + baseline_notes))
