"""What asv recorded, read (:func:`load_recorded`): ``asv.conf.json`` (JSON with ``//`` line comments, as asv
allows), asv's benchmark list and the results of one machine (``<results_dir>/<machine>/``, asv's format version 2)
in commit order (HEAD's git history, else the commit dates asv stored), the per-commit image hashes earlier versions
of the suite wrote (``results/hashes/<commit>.json``) and every machine class's golden baseline
(:mod:`detsim.track.base.golden`); and what each benchmark says about itself: its family (:func:`family_of`; how
each is judged: docs/tracking.md), unit, golden case and regression threshold. :mod:`.frame` reads the results
into one frame and the judge's :class:`Series` of :class:`Point` (one per environment, benchmark and parameter
combination) from it. Every unusable file raises :class:`ResultsError` naming it.
"""

from __future__ import annotations

import itertools
import math
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from detsim.track.base.files import read_json
from detsim.track.base.golden import BaselineError, stored
from detsim.track.base.git import query
from detsim.track.judge.family import FAMILY_ORDER, Family  # noqa: F401 - FAMILY_ORDER: read from here too
from detsim.track.base.device_costs import DEVICE_COST_UNITS
from detsim.track.judge.thresholds import DEFAULT_THRESHOLD

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



# Benchmarks whose family their name says (method name, or class for the machine reference): the
# suite's per-golden-case tracks are track_<prefix>_<case id> (benchmarks/common.py define_case_tracks).
NAMED_FAMILIES = (
    (re.compile(r"(^|.*\.)track_parity_\w+$"), Family.PARITY),
    (re.compile(r"(^|.*\.)track_hash_changed_\w+$"), Family.IMAGE_CHANGED),
    (re.compile(r"(^|.*\.)track_runs_differ$"), Family.RUNS_DIFFER),
    (re.compile(r"(^|.*\.)track_cases_changed$"), Family.CASES_CHANGED),
    (re.compile(r"(^|.*\.)track_fingerprint(_\w+)?$"), Family.IMAGE_FINGERPRINT),
    (re.compile(r"(^|.*\.)track_machine_class$"), Family.MACHINE_CLASS),
    (re.compile(r"(^|.*\.)MachineReference\.\w+$"), Family.MACHINE_REFERENCE),
)
# asv's benchmark type by method-name prefix (where benchmarks.json gives none) -> family
PREFIX_TYPES = {"time_": "time", "peakmem_": "peakmemory", "mem_": "memory", "track_": "track"}
TYPE_FAMILIES = {"time": Family.TIMING, "peakmemory": Family.PEAK_MEMORY, "memory": Family.PEAK_MEMORY}
COST_UNIT = "instructions"  # the unit of the instruction-count tracks (benchmarks/bench_cost.py)
# the units of the device costs counted on the CPU (benchmarks/bench_device_cost.py): exact counts, as instructions
COST_UNITS = (COST_UNIT, *DEVICE_COST_UNITS)
MEMORY_UNITS = ("bytes", "MB")  # a track in one of these is a peak memory (a target's command's own: docs/targets.md)
TIME_UNIT_PREFIX = "ns/"  # tracks of a time per unit of work (PathThroughput's ns/pixel-step)


@dataclass(frozen=True)
class Point:
    commit: str
    value: float | None  # None: failed; nan: skipped
    samples: tuple[float, ...] | None = None

    @property
    def measured(self) -> bool:
        return self.value is not None and math.isfinite(self.value)


@dataclass(frozen=True)
class Series:
    env: str
    name: str
    params: str  # "" or "(pixels=128, dtype='float64')"
    family: str  # a Family (a member equals its word: the tests and a re-labelled finding may give the word)
    unit: str
    case: str | None = None  # golden case id of parity/determinism tracks
    threshold: float = DEFAULT_THRESHOLD
    points: tuple[Point, ...] = ()

    @property
    def label(self) -> str:
        return self.name + self.params


def family_of(name: str, bench: Mapping) -> Family:
    """The family of benchmark ``name`` from its name, asv type and unit (see the module docstring)."""
    for pattern, family in NAMED_FAMILIES:
        if pattern.match(name):
            return family
    method = name.rsplit(".", 1)[-1]
    kind = bench.get("type") or next((t for p, t in PREFIX_TYPES.items() if method.startswith(p)), None)
    if kind in TYPE_FAMILIES:
        return TYPE_FAMILIES[kind]
    if str(bench.get("unit", "")) in MEMORY_UNITS:
        return Family.PEAK_MEMORY
    if str(bench.get("unit", "")) in COST_UNITS:
        return Family.COUNTED_COST
    if str(bench.get("unit", "")).startswith(TIME_UNIT_PREFIX):  # a time per unit of work: lower is better
        return Family.TIMING
    return Family.THROUGHPUT if str(bench.get("unit", "")).endswith("/s") else Family.OTHER_TRACK


def case_of(bench: Mapping) -> str | None:
    """The golden case of a per-case track: its pretty name is ``"<label>: <case id>"``."""
    pretty = bench.get("pretty_name") or ""
    return pretty.split(": ", 1)[1] if ": " in pretty else None


def param_values(params: str) -> dict[str, str]:
    """A parameter label's values by name, quotes removed: ``"(axis='threads', case='a01')"`` ->
    ``{"axis": "threads", "case": "a01"}`` (``{}`` for ``""``)."""
    return {name: value.strip("'\"") for name, value in re.findall(r"(\w+)=('[^']*'|\"[^\"]*\"|[^,)]*)", params)}


def threshold_for(name: str, thresholds: Mapping[str, float], default: float = DEFAULT_THRESHOLD) -> float:
    """The largest ``regressions_thresholds`` entry whose regex matches ``name`` (asv's rule), else ``default``."""
    matching = [float(v) for regex, v in thresholds.items() if re.match(regex, name)]
    return max(matching) if matching else default


def param_labels(bench: Mapping) -> list[str]:
    """One label per parameter combination, in asv's order (``[""]`` without parameters)."""
    params, names = bench.get("params") or [], bench.get("param_names") or []
    if not params:
        return [""]
    return ["(" + ", ".join(f"{n}={v}" for n, v in zip(names, combo)) + ")" for combo in itertools.product(*params)]


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
    history = (query(root, "rev-list", "--topo-order", "HEAD") or "").split() if own else []
    position = {sha: i for i, sha in enumerate(reversed(history))}
    known = [f for f in files if f["commit_hash"] in position]
    if known:
        left_out = len(files) - len(known)
        notes = [f"{left_out} results of commits outside HEAD's history were ignored"] if left_out else []
        return sorted(known, key=lambda f: (position[f["commit_hash"]], f["env_name"])), notes
    notes = ["no recorded commit is in HEAD's history; ordered by commit date"] if history else []
    return sorted(files, key=lambda f: (f.get("date") or 0, f["env_name"])), notes


def checkout_head(root: Path) -> str | None:
    """HEAD's full hash where ``root`` is the top of a git work tree (a project checkout), else None: a results
    folder that is not itself a checkout (a copy, a fixture inside another project) has no HEAD of its own."""
    top = (query(root, "rev-parse", "--show-toplevel") or "").strip()
    if not top or Path(top).resolve() != Path(root).resolve():
        return None
    return (query(root, "rev-parse", "HEAD") or "").strip() or None


def subjects(root: Path, commits: list[str]) -> dict[str, str]:
    """Commit hash -> its subject line, for the commits git knows."""
    out = query(root, "log", "--no-walk=unsorted", "--format=%H%x09%s", *commits) if commits else None
    return dict(line.partition("\t")[::2] for line in (out or "").splitlines())


def resolve_first_commits(root: Path, conf: Mapping, order: list[str]) -> dict:
    """``regressions_first_commits`` with each commit git knows but this machine never recorded made the latest
    recorded commit among its ancestors, where there is one (raises ResultsError for a commit git does not know)."""
    resolved = {}
    for regex, commit in (conf.get("regressions_first_commits") or {}).items():
        resolved[regex] = commit
        if commit is None or any(sha.startswith(commit) for sha in order):
            continue
        ancestors = set((query(root, "rev-list", f"{commit}^{{commit}}", "--") or "").split())
        if not ancestors:
            raise ResultsError(f"{root / CONFIG}: regressions_first_commits[{regex!r}] = {commit!r}: no such commit "
                               "(neither recorded nor in the git repository)")
        covered = [sha for sha in order if sha in ancestors]
        if covered:
            resolved[regex] = covered[-1]
    return resolved


def first_commit_cut(conf: Mapping, name: str, family: str, order: list[str]) -> int | None:
    """Index of the first point to judge: after the commit ``regressions_first_commits`` names, as asv does (None:
    a null entry switches detection off, except for throughput, which asv's page cannot judge and this command can)."""
    start = 0
    for regex, commit in (conf.get("regressions_first_commits") or {}).items():
        if not re.match(regex, name):
            continue
        if commit is None and family != "throughput":
            return None
        hits = [i for i, sha in enumerate(order) if commit is not None and sha.startswith(commit)]
        if hits:
            start = max(start, hits[0] + 1)
    return start


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
