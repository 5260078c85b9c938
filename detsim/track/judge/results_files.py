"""asv's results files of a project, read and checked (:func:`load_recorded`): ``asv.conf.json`` (JSON with ``//``
line comments, as asv allows), asv's benchmark list and the results of one machine (``<results_dir>/<machine>/``,
asv's format version 2; :func:`choose_machine` picks it) in commit order (HEAD's git history, else the commit dates
asv stored), the per-commit image hashes earlier versions of the suite wrote (``results/hashes/<commit>.json``) and
every machine class's golden baseline (:mod:`detsim.track.base.golden`). :mod:`.history` reads them into the
recorded history's one frame. Every unusable file raises :class:`ResultsError` naming it.
"""

from __future__ import annotations

import math
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from detsim.track.base.files import read_json
from detsim.track.base.golden import BaselineError, stored
from detsim.track.base.git import query
from detsim.track.judge.benchmarks import family_of
from detsim.track.judge.family import Family

CONFIG = "asv.conf.json"
HASHES = Path("results") / "hashes"  # one file per commit, relative to the project
MACHINE_FILE = "machine.json"  # asv's description of the machine, in each machine's results folder
HEX40 = re.compile(r"[0-9a-f]{40}")


class ResultsError(ValueError):
    """A stored file that cannot be used; the message names it."""


def load_config(root: Path) -> dict:
    """``asv.conf.json`` of the project at ``root``, as a dict; where there is none, a ResultsError that says so and
    names ``--repo`` (every command that reads it takes one)."""
    if not (root / CONFIG).exists() and not (root / CONFIG).is_symlink():
        raise ResultsError(f"no {CONFIG} in {root}: run this in the project's checkout, or pass --repo DIR")
    conf = read_json(root / CONFIG, comments=True, error=ResultsError)
    if not isinstance(conf, dict):
        raise ResultsError(f"{root / CONFIG}: not a JSON object")
    check_config(conf, root / CONFIG)
    return conf


def _regex_map(conf: dict, key: str, path: Path) -> dict:
    """``conf[key]``: a map whose keys are regular expressions (every one must compile)."""
    entries = conf.get(key) or {}
    if not isinstance(entries, dict):
        raise ResultsError(f"{path}: {key} is not a map of regular expressions")
    for regex in entries:
        try:
            re.compile(regex)
        except re.error as exc:
            raise ResultsError(f"{path}: {key}: {regex!r} is not a regular expression ({exc})") from None
    return entries


def check_config(conf: dict, path: Path) -> None:
    """The parts of asv.conf.json the verdict reads hold possible values (docs/tracking.md); else a ResultsError
    naming them."""
    for regex, value in _regex_map(conf, "regressions_thresholds", path).items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ResultsError(f"{path}: regressions_thresholds[{regex!r}] = {value!r} is not a threshold "
                               "(a fraction >= 0, e.g. 0.5 for +50%)")
    for regex, commit in _regex_map(conf, "regressions_first_commits", path).items():
        if commit is not None and not (isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{4,40}", commit)):
            raise ResultsError(f"{path}: regressions_first_commits[{regex!r}] = {commit!r} is not a commit hash")


def cell(row: list, columns: list, column: str):
    """A results row's cell of ``column`` (None where the row ends before it)."""
    return row[columns.index(column)] if column in columns and columns.index(column) < len(row) else None


def project_repo(root: Path, conf: Mapping) -> Path:
    """The git repository asv.conf.json's ``repo`` names (relative to the project): the project itself for
    detsim, another repository for a target's recording (docs/targets.md)."""
    return (Path(root) / conf.get("repo", ".")).resolve()


# keys of a target's asv.conf.json (asv keeps keys it does not know): the spec file it is recorded with, and the
# target's folder, the one holding its spec (asv's ``repo`` is the repository's top folder, which is another where
# the target is a subfolder of its repository)
TARGET_SPEC, TARGET_FOLDER = "detsim_target_spec", "detsim_target"


def target_results(root: Path, conf: Mapping) -> Path | None:
    """The project folder where its asv.conf.json names another repository than the project itself: a
    target's recording (``detsim-track record``'s ``results/targets/<target>/``, which also holds where each
    image departs), whose commits are another repository's (never re-measured with detsim's package); None
    for a project that records itself (detsim)."""
    return Path(root).resolve() if project_repo(root, conf) != Path(root).resolve() else None


def order_files(root: Path, files: list[dict]) -> tuple[list[dict], list[str]]:
    """Results files in commit order, and notes on what was left out or how they were ordered. Only a checkout
    of its own orders them by its HEAD's history: a copy inside another repository (a fixture copied into a
    clone) is not judged by that repository's commits."""
    own = checkout_head(root) is not None
    ancestry = (query(root, "rev-list", "--topo-order", "HEAD") or "").split() if own else []  # HEAD's, newest first
    position = {sha: i for i, sha in enumerate(reversed(ancestry))}
    known = [f for f in files if f["commit_hash"] in position]
    if known:
        left_out = len(files) - len(known)
        notes = [f"{left_out} results of commits outside HEAD's history were ignored"] if left_out else []
        return sorted(known, key=lambda f: (position[f["commit_hash"]], f["env_name"])), notes
    notes = ["no recorded commit is in HEAD's history; ordered by commit date"] if ancestry else []
    return sorted(files, key=lambda f: (f.get("date") or 0, f["env_name"])), notes


def checkout_head(root: Path) -> str | None:
    """HEAD's full hash where ``root`` is the top of a git work tree (a project checkout), else None: a results
    folder that is not itself a checkout (a copy, a fixture inside another project) has no HEAD of its own."""
    top = (query(root, "rev-parse", "--show-toplevel") or "").strip()
    if not top or Path(top).resolve() != Path(root).resolve():
        return None
    return (query(root, "rev-parse", "HEAD") or "").strip() or None


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


def _machines(results_dir: Path) -> list[str]:
    """The machines asv recorded results for in ``results_dir`` (one series each), sorted."""
    return sorted(p.parent.name for p in results_dir.glob(f"*/{MACHINE_FILE}"))


def recorded_machines(root: Path) -> list[str]:
    """The machines asv recorded results for in the project at ``root``."""
    return _machines(root / load_config(root).get("results_dir", "results"))


def choose_machine(results_dir: Path, requested: str | None) -> Path:
    """The results folder of ``requested``, of the only machine recorded, or of this host; a folder holding
    results but no ``machine.json`` (asv writes one beside them) is named where it would be chosen."""
    machines = _machines(results_dir)
    folders = sorted(p for p in results_dir.glob("*/") if p.is_dir())
    missing = [p / MACHINE_FILE for p in folders
               if not (p / MACHINE_FILE).exists() and any(q.name != MACHINE_FILE for q in p.glob("*.json"))]
    for path in missing:
        if requested in (None, path.parent.name) and (requested or not machines):
            raise ResultsError(f"{path}: missing, beside the results of machine {path.parent.name!r} (asv writes "
                               f"it; `asv machine --yes --machine {path.parent.name}` writes it again)")
    if requested:
        if requested not in machines:
            raise ResultsError(f"{results_dir}: no results for machine {requested!r} (recorded: "
                               f"{', '.join(machines) or 'none'})")
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
    data = read_json(path, error=ResultsError)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for k, v in data.items() if k != "version"):
        raise ResultsError(f"{path}: not an asv benchmark list")
    return {k: v for k, v in data.items() if k != "version"}


def load_result_file(path: Path) -> dict:
    data = read_json(path, error=ResultsError)  # NaN allowed: asv writes it for skips
    if not isinstance(data, dict) or data.get("version") != 2:
        raise ResultsError(f"{path}: not an asv results file (format version 2)")
    columns, results = data.get("result_columns"), data.get("results")
    if not isinstance(columns, list) or "result" not in columns or not isinstance(results, dict):
        raise ResultsError(f"{path}: no result_columns/results")
    if not isinstance(data.get("commit_hash"), str) or not HEX40.fullmatch(data["commit_hash"]):
        raise ResultsError(f"{path}: commit_hash is not a full git hash")
    for name, row in results.items():
        if not (isinstance(row, list) and row and len(row) <= len(columns) and isinstance(row[0], (list, type(None)))):
            raise ResultsError(f"{path}: malformed row for {name}")
    return data


# families where a 0 or negative value is impossible
POSITIVE_FAMILIES = (Family.TIMING, Family.PEAK_MEMORY, Family.THROUGHPUT, Family.MACHINE_REFERENCE)
CHECKED_COLUMNS = {"result": "value", "samples": "sample", "stats_ci_99_a": "interval bound",
                   "stats_ci_99_b": "interval bound"}


def _impossible(value, family: Family | None) -> str | None:
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
        for column, what in CHECKED_COLUMNS.items():
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
        data = hashes[path.stem] = read_json(path, error=ResultsError)
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
        if path.name != MACHINE_FILE:
            files.append(load_result_file(path))
            check_values(path, files[-1], benchmarks)
    if not files:
        raise ResultsError(f"{machine_dir}: no results recorded")
    files, notes = order_files(project_repo(root, conf), files)
    hashes = load_hashes(root)
    # a target's images are compared commit to commit: detsim's golden baselines are not its own
    baselines, baseline_notes = ({}, []) if target_results(root, conf) else load_baselines(root)
    return Recorded(config=conf, machine=machine_dir.name, benchmarks=benchmarks, files=files, hashes=hashes,
                    baselines=baselines, notes=tuple(notes + baseline_notes))
