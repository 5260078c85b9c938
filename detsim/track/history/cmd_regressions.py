"""``detsim-track regressions``: what changed in the stored asv history, where, and since which commit.

Reads ``asv.conf.json``, asv's results (``results/asv/<machine>/``), the per-commit image hashes
(``results/hashes/<commit>.json``) and the golden baseline, orders the recorded commits by git history
(by commit date outside git), and checks the latest value of every benchmark:

* **timings** (``time_*``), peak memory and throughput: a piecewise-constant fit of the history (asv's
  Potts solver on log values) finds where the level moved. The step into the run of levels that ends
  at the latest commit counts only if the level rose by more than the benchmark's threshold
  (``regressions_thresholds`` in asv.conf.json, the largest matching one), the raw samples of up to 3
  commits on either side differ by a one-sided rank test (Mann-Whitney, p < 0.01; where no samples
  were stored, their 99% intervals must not overlap), and, where the suite's machine reference was
  measured, the rise survives dividing by the reference's own change (a busy machine slows everything
  alike). Throughput (units per second) is checked the other way up;
* **parity** (1 - r per golden case) is exact: any rise over the best recorded value, or a value past
  the acceptance line r >= 0.9995, is a regression;
* **determinism** (0/1 per golden case against the stored baseline hash) is exact: a 1 at the latest
  commit is a regression, reported with the old and new sha256; a **hash count** (how many golden
  cases of the compiled path differ from their stored hashes) is exact too: any rise counts.

Exit status: 0 all good, 1 something regressed, 2 something could not be measured (a benchmark failed
at the latest commit, the commit did not build, nothing was recorded) or a stored file is unreadable;
2 wins when both apply.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import socket
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from detsim.track.base.output import utc_stamp, write_json

from detsim.track.base.provenance import repo_root
HELP = "report benchmarks whose latest value regressed in the stored asv history (the default command)"

EXIT_OK, EXIT_REGRESSED, EXIT_UNMEASURED = 0, 1, 2
PARITY_ACCEPT = 5e-4  # 1 - r above this fails the acceptance line r >= 0.9995
ALPHA = 0.01  # one-sided rank test level for timings
NEIGHBOURS = 3  # commits pooled on each side of a step for the rank test
DEFAULT_THRESHOLD = 0.05  # asv's default when no regressions_thresholds entry matches
HEX40 = re.compile(r"[0-9a-f]{40}")
GROUP_HASHES = 5  # more image-hash findings than this at one commit print as one line
FAMILY_ORDER = ("timing", "throughput", "memory", "track", "parity", "determinism", "hash count", "reference")


class ResultsError(ValueError):
    """A stored file that cannot be used; the message names it."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, default=None,
                        help="project checkout holding asv.conf.json (default: the enclosing git work tree)")
    parser.add_argument("--machine", default=None, help="asv machine name (default: the only one recorded)")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="also write the report as JSON to PATH")


# -- loading ------------------------------------------------------------------------------------

def _strip_comments(text: str) -> str:
    """JSON with ``//`` comments (as asv.conf.json allows) -> JSON."""
    out, i, in_string = [], 0, False
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\":
                out.append(text[i + 1:i + 2])
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _read_json(path: Path, *, comments: bool = False):
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ResultsError(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: unreadable ({exc})") from None
    try:
        return json.loads(_strip_comments(text) if comments else text)  # asv writes NaN for skips
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: corrupt JSON ({exc})") from None


def load_config(root: Path) -> dict:
    conf = _read_json(root / "asv.conf.json", comments=True)
    if not isinstance(conf, dict):
        raise ResultsError(f"{root / 'asv.conf.json'}: not a JSON object")
    return conf


def choose_machine(results_dir: Path, requested: str | None) -> Path:
    machines = sorted(p.parent.name for p in results_dir.glob("*/machine.json"))
    if requested:
        if requested not in machines:
            raise ResultsError(f"{results_dir}: no results for machine {requested!r} (recorded: {', '.join(machines) or 'none'})")
        return results_dir / requested
    if len(machines) == 1:
        return results_dir / machines[0]
    if not machines:
        raise ResultsError(f"{results_dir}: nothing recorded yet (run `asv run` or `make run`)")
    host = socket.gethostname()
    if host in machines:
        return results_dir / host
    raise ResultsError(f"{results_dir}: several machines recorded ({', '.join(machines)}); pick one with --machine")


def load_benchmarks(results_dir: Path) -> dict:
    path = results_dir / "benchmarks.json"
    data = _read_json(path)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for k, v in data.items() if k != "version"):
        raise ResultsError(f"{path}: not an asv benchmark list")
    return {k: v for k, v in data.items() if k != "version"}


def load_result_file(path: Path) -> dict:
    data = _read_json(path)
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


def load_hash_file(path: Path) -> dict:
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("commit") != path.stem or not isinstance(data.get("cases"), dict):
        raise ResultsError(f"{path}: not a per-commit hash record")
    return data


# -- the model ----------------------------------------------------------------------------------

@dataclass
class Point:
    commit: str
    value: float | None  # None: failed; nan: skipped
    samples: list[float] | None = None
    ci: tuple[float, float] | None = None

    @property
    def measured(self) -> bool:
        return self.value is not None and math.isfinite(self.value)


@dataclass
class Series:
    env: str
    name: str
    params: str  # "" or "(pixels=128, dtype='float64')"
    family: str  # timing | memory | throughput | parity | determinism | hash count | reference | track
    unit: str
    case: str | None = None  # golden case id of parity/determinism tracks
    threshold: float = DEFAULT_THRESHOLD
    points: list[Point] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.name + self.params


def family_of(name: str, bench: dict) -> str:
    kind, unit = bench.get("type"), str(bench.get("unit", ""))
    if name.startswith("bench_parity."):
        return "parity"
    if name.startswith("bench_determinism."):
        # one track per golden case (0/1 against its stored hash), or a count over all cases
        return "determinism" if _case_of(bench) else "hash count"
    if ".MachineReference." in name:
        return "reference"
    if kind == "time":
        return "timing"
    if kind in ("peakmemory", "memory"):
        return "memory"
    return "throughput" if unit.endswith("/s") else "track"


def _cell(row: list, columns: list, column: str, index: int, width: int):
    if column not in columns or columns.index(column) >= len(row):
        return None
    value = row[columns.index(column)]
    if not isinstance(value, list) or len(value) != width:
        return None
    return value[index]


def build_series(files: list[dict], benchmarks: dict, conf: dict) -> list[Series]:
    """One series per (env, benchmark, parameter combination), points in the order of ``files``."""
    series: dict[tuple, Series] = {}
    thresholds = conf.get("regressions_thresholds") or {}
    for data in files:
        columns = data["result_columns"]
        for name, row in data["results"].items():
            bench = benchmarks.get(name)
            version = row[columns.index("version")] if "version" in columns and columns.index("version") < len(row) else None
            if bench is None or (version is not None and str(version) != str(bench.get("version"))):
                continue  # not in the current suite, or measured by an older definition
            combos = _param_labels(bench)
            values = [None] * len(combos) if row[0] is None else row[0]  # None: the whole benchmark failed
            if len(values) != len(combos):
                raise ResultsError(f"results of {data['commit_hash'][:8]}: {name} has {len(values)} values "
                                   f"for {len(combos)} parameter combinations")
            for i, params in enumerate(combos):
                key = (data["env_name"], name, params)
                if key not in series:
                    series[key] = Series(env=data["env_name"], name=name, params=params,
                                         family=family_of(name, bench), unit=str(bench.get("unit", "")),
                                         case=_case_of(bench), threshold=_threshold(name, thresholds))
                a, b = _cell(row, columns, "stats_ci_99_a", i, len(combos)), _cell(row, columns, "stats_ci_99_b", i, len(combos))
                samples = _cell(row, columns, "samples", i, len(combos))
                value = values[i]
                series[key].points.append(Point(
                    commit=data["commit_hash"], value=None if value is None else float(value),
                    samples=[float(s) for s in samples] if isinstance(samples, list) and samples else None,
                    ci=(float(a), float(b)) if a is not None and b is not None else None))
    return list(series.values())


def _param_labels(bench: dict) -> list[str]:
    params, names = bench.get("params") or [], bench.get("param_names") or []
    if not params:
        return [""]
    combos = [[]]
    for values in params:
        combos = [c + [v] for c in combos for v in values]
    return ["(" + ", ".join(f"{n}={v}" for n, v in zip(names, combo)) + ")" for combo in combos]


def _case_of(bench: dict) -> str | None:
    pretty = bench.get("pretty_name") or ""
    return pretty.split(": ", 1)[1] if ": " in pretty else None


def _threshold(name: str, thresholds: dict) -> float:
    matching = [float(v) for regex, v in thresholds.items() if re.match(regex, name)]
    return max(matching) if matching else DEFAULT_THRESHOLD


# -- commit order -------------------------------------------------------------------------------

def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def order_files(root: Path, files: list[dict], notes: list[str]) -> list[dict]:
    """Results in commit order: git history of HEAD where the commits are in it, else commit dates."""
    history = (_git(root, "rev-list", "--topo-order", "HEAD") or "").split()
    position = {sha: i for i, sha in enumerate(reversed(history))}
    known = [f for f in files if f["commit_hash"] in position]
    if known:
        if len(known) < len(files):
            notes.append(f"{len(files) - len(known)} results of commits outside HEAD's history were ignored")
        return sorted(known, key=lambda f: (position[f["commit_hash"]], f["env_name"]))
    if history:
        notes.append("no recorded commit is in HEAD's history; ordered by commit date")
    return sorted(files, key=lambda f: (f.get("date") or 0, f["env_name"]))


def first_commit_cut(conf: dict, name: str, family: str, order: list[str]) -> int | None:
    """Index of the first point to consider under ``regressions_first_commits`` (None: no detection).

    asv semantics: detection starts *after* the named commit. A null entry switches detection off,
    except for throughput, which asv's page cannot check (larger is better) and this command can.
    """
    start = 0
    for regex, commit in (conf.get("regressions_first_commits") or {}).items():
        if not re.match(regex, name):
            continue
        if commit is None:
            if family != "throughput":
                return None
            continue
        hits = [i for i, sha in enumerate(order) if sha.startswith(str(commit))]
        if hits:
            start = max(start, hits[0] + 1)
    return start


# -- statistics ---------------------------------------------------------------------------------

def mann_whitney_greater(before: list[float], after: list[float]) -> float:
    """One-sided p-value that ``after`` is stochastically larger than ``before`` (ties count against).

    Exact null distribution (no ties) for samples up to 50 each, normal approximation beyond.
    """
    m, n = len(before), len(after)
    if not m or not n:
        return 1.0
    u = sum(1 for a in after for b in before if a > b)
    if max(m, n) > 50:
        mean, sd = m * n / 2, math.sqrt(m * n * (m + n + 1) / 12)
        return 0.5 * math.erfc((u - 0.5 - mean) / (sd * math.sqrt(2)))
    counts = _u_counts(m, n)
    return sum(counts[u:]) / sum(counts)


def _u_counts(m: int, n: int) -> list[int]:
    """Number of orderings of m + n distinct values giving each U = 0 .. m n (Gaussian binomial)."""
    table = [[[1] for _ in range(n + 1)] for _ in range(m + 1)]
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            size = i * j + 1
            left, up = table[i - 1][j], table[i][j - 1]
            row = [0] * size
            for u, c in enumerate(left):
                if u + j < size:
                    row[u + j] += c
            for u, c in enumerate(up):
                row[u] += c
            table[i][j] = row
    return table[m][n]


# -- detection ----------------------------------------------------------------------------------

@dataclass
class Finding:
    series: Series
    last_good: str | None
    first_bad: str
    old: float | None
    new: float
    detail: dict = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.old in (None, 0):
            return None
        return self.new / self.old


def detect(series: Series, start: int, references: dict[str, float], baseline_hashes: dict,
           hashes: dict[str, dict]) -> Finding | None:
    points = [p for p in series.points[start:] if p.measured]
    if not points or not series.points[-1].measured:
        return None
    if series.family == "parity":
        return _exact(series, points, absolute=PARITY_ACCEPT)
    if series.family == "determinism":
        return _hash_changed(series, points, baseline_hashes, hashes)
    if series.family == "hash count":  # cases whose image differs from its stored hash: any rise counts
        return _exact(series, points)
    if series.family == "reference":
        return None
    return _noisy(series, points, references)


def _exact(series: Series, points: list[Point], *, absolute: float | None = None) -> Finding | None:
    """Exact values, lower is better: a rise over the best value (or past ``absolute``) counts."""
    latest, best = points[-1].value, min(p.value for p in points)
    if latest <= best and (absolute is None or latest <= absolute):
        return None
    good = [i for i, p in enumerate(points) if p.value <= best and (absolute is None or p.value <= absolute)]
    if good and good[-1] < len(points) - 1:
        last = good[-1]
        return Finding(series, points[last].commit, points[last + 1].commit, points[last].value, latest)
    return Finding(series, None, points[0].commit, None, latest, {"note": "never within the acceptance line here"})


def _hash_changed(series: Series, points: list[Point], baseline_hashes: dict, hashes: dict) -> Finding | None:
    if points[-1].value == 0:
        return None
    first = len(points) - 1
    while first > 0 and points[first - 1].value != 0:
        first -= 1
    last_good = points[first - 1].commit if first > 0 else None

    def sha(commit):
        return ((hashes.get(commit) or {}).get("cases", {}).get(series.case) or {}).get("sha256")

    old = sha(last_good) if last_good else baseline_hashes.get(series.case)
    new = sha(points[-1].commit)
    changes = [p.commit for prev, p in zip(points[first:], points[first + 1:]) if sha(p.commit) != sha(prev.commit)]
    detail = {"old_sha256": old, "new_sha256": new, "changed_again_at": changes}
    if old and old == new:
        detail["note"] = "same image as the last good commit: the baseline changed between the runs; re-run it"
    return Finding(series, last_good, points[first].commit, 0.0, 1.0, detail)


def segments(y: list[float], threshold: float) -> list[tuple[int, int, float]]:
    """Piecewise-constant fit of a positive series: ``[(left, right_exclusive, level)]``.

    asv's exact Potts solver on log values, with a per-step penalty of half the threshold (a lone
    commit splits off when it is off by half the threshold; a longer run at a smaller step). Its own
    automatic penalty needs long histories and misses a 2x step after two commits; splitting
    liberally is safe here because every step is then confirmed against the raw samples.
    """
    from asv import step_detect  # the development extra installs asv

    logs = [math.log(v) for v in y]
    right, values, _ = step_detect.solve_potts(logs, [1.0] * len(logs), gamma=math.log1p(threshold) / 2)
    out, left = [], 0
    for r, v in zip(right, values):
        out.append((left, r, math.exp(v)))
        left = r
    return out


def _noisy(series: Series, points: list[Point], references: dict[str, float]) -> Finding | None:
    """A step up at the tip's level: threshold, then load-corrected threshold, then the rank test."""
    larger_is_better = series.family == "throughput"
    y = [1.0 / p.value if larger_is_better else p.value for p in points]
    if not all(v > 0 and math.isfinite(v) for v in y):
        return None
    segs = segments(y, series.threshold)
    best, latest = min(level for _, _, level in segs), segs[-1][2]
    if latest <= best * (1 + series.threshold):
        return None
    first = len(segs) - 1  # the run of segments, ending at the tip, that all sit above best x (1 + threshold)
    while first > 0 and segs[first - 1][2] > best * (1 + series.threshold):
        first -= 1
    if first == 0:
        return None
    (old_left, before_end, old), (after, new_right, _) = segs[first - 1][:3], segs[first][:3]
    before = before_end - 1
    rise = latest / old
    if rise < 1 + series.threshold:
        return None
    detail = {"rise": round(rise, 4)}
    side_a = points[max(old_left, before - NEIGHBOURS + 1):before + 1]
    side_b = points[after:min(new_right, after + NEIGHBOURS)]
    refs_a, refs_b = [references.get(p.commit) for p in side_a], [references.get(p.commit) for p in side_b]
    if all(refs_a) and all(refs_b) and series.family != "memory":
        load = statistics.median(refs_b) / statistics.median(refs_a)
        detail["machine_reference_ratio"] = round(load, 4)
        detail["load_corrected_rise"] = round(rise / load, 4)
        if rise / load < 1 + series.threshold:
            return None
    if all(p.samples for p in side_a + side_b):
        a = [v for p in side_a for v in p.samples if v > 0]
        b = [v for p in side_b for v in p.samples if v > 0]
        if larger_is_better:
            a, b = [1 / v for v in a], [1 / v for v in b]
        p_value = mann_whitney_greater(a, b)
        detail["rank_test_p"] = float(f"{p_value:.3g}")
        if p_value >= ALPHA:
            return None
    elif all(p.ci for p in side_a + side_b) and series.family == "timing":
        if min(p.ci[0] for p in side_b) <= max(p.ci[1] for p in side_a):
            detail["ci_overlap"] = True
            return None
    old_value, new_value = (1 / old, 1 / latest) if larger_is_better else (old, latest)
    return Finding(series, points[before].commit, points[after].commit, old_value, new_value, detail)


# -- the command --------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    root = (args.repo or repo_root() or Path.cwd()).resolve()
    try:
        report = analyse(root, args.machine)
    except ResultsError as exc:
        print(f"detsim-track: {exc}", file=sys.stderr)
        return EXIT_UNMEASURED
    print_report(report)
    if args.json:
        write_json(args.json, report)
    return report["exit"]


def analyse(root: Path, machine: str | None = None) -> dict:
    """The report as a JSON-ready dict (raises :class:`ResultsError` on unusable stored files)."""
    conf = load_config(root)
    results_dir = root / conf.get("results_dir", "results")
    machine_dir = choose_machine(results_dir, machine)
    benchmarks = load_benchmarks(results_dir)
    files = [load_result_file(p) for p in sorted(machine_dir.glob("*.json")) if p.name != "machine.json"]
    if not files:
        raise ResultsError(f"{machine_dir}: no results recorded")
    notes: list[str] = []
    files = order_files(root, files, notes)
    hashes_dir = root / "results" / "hashes"
    hashes = {p.stem: load_hash_file(p) for p in sorted(hashes_dir.glob("*.json"))} if hashes_dir.is_dir() else {}
    baseline = _baseline(root, notes)
    series = build_series(files, benchmarks, conf)
    order = list(dict.fromkeys(f["commit_hash"] for f in files))
    latest = order[-1]
    references = {p.commit: p.value for s in series if s.family == "reference" and s.unit == "seconds"
                  for p in s.points if p.measured}

    regressions, unmeasured, skipped = [], [], 0
    for s in series:
        at_latest = [p for p in s.points if p.commit == latest]
        if at_latest and at_latest[-1].value is None:
            unmeasured.append(s.label)
            continue
        if at_latest and not at_latest[-1].measured:
            skipped += 1
            continue
        start = first_commit_cut(conf, s.name, s.family, [p.commit for p in s.points])
        if start is None or not at_latest:
            continue
        finding = detect(s, start, references, baseline.get("cases", {}), hashes)
        if finding is not None:
            regressions.append(_finding_record(finding))
    _determinism_note(series, latest, hashes, baseline, notes)

    built = any(p.value is not None for s in series for p in s.points if p.commit == latest)
    if not built:
        notes.append(f"commit {latest[:8]} did not build or its suite did not import: nothing was measured")
    head = (_git(root, "rev-parse", "HEAD") or "").strip()
    if head and head != latest:
        notes.append(f"HEAD {head[:8]} has no results yet; the latest recorded commit is {latest[:8]}")
    code = EXIT_UNMEASURED if unmeasured or not built else EXIT_REGRESSED if regressions else EXIT_OK
    regressions.sort(key=lambda r: (FAMILY_ORDER.index(r["family"]), r["benchmark"], r["params"]))
    return {
        "generated_at": utc_stamp(), "machine": machine_dir.name, "envs": sorted({f["env_name"] for f in files}),
        "commits": order, "latest": latest, "subjects": _subjects(root, order),
        "regressions": regressions, "unmeasured": unmeasured, "skipped": skipped, "built": built, "notes": notes,
        "exit": code,
    }


def _baseline(root: Path, notes: list[str]) -> dict:
    path = root / "results" / "baselines" / "golden_hashes.json"
    if not path.exists():
        notes.append(f"no golden baseline at {path.relative_to(root)}")
        return {}
    data = _read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("cases"), dict):
        raise ResultsError(f"{path}: malformed baseline")
    return data


def _determinism_note(series, latest, hashes, baseline, notes) -> None:
    det = [s for s in series if s.family == "determinism"]
    if not det or not baseline:
        return
    skipped = [s for s in det if any(p.commit == latest and p.value is not None and not p.measured for p in s.points)]
    here = (hashes.get(latest) or {}).get("holds_for")
    if skipped and here and here != baseline.get("holds_for"):
        differing = sorted(k for k in here if baseline.get("holds_for", {}).get(k) != here[k])
        notes.append("image hashes not compared: the baseline holds for "
                     + ", ".join(f"{k}={baseline['holds_for'].get(k)}" for k in differing)
                     + ", this machine has " + ", ".join(f"{k}={here[k]}" for k in differing)
                     + " (refresh it here with `detsim-track baselines --refresh`)")


def _finding_record(f: Finding) -> dict:
    record = {"family": f.series.family, "benchmark": f.series.name, "params": f.series.params,
              "env": f.series.env, "unit": f.series.unit, "last_good": f.last_good, "first_bad": f.first_bad,
              "old": f.old, "new": f.new, "ratio": None if f.ratio is None else round(f.ratio, 4), **f.detail}
    if f.series.case:
        record["case"] = f.series.case
    if f.series.family == "parity":
        record["new_r"] = round(1 - f.new, 12)
        record["old_r"] = None if f.old is None else round(1 - f.old, 12)
    return record


def _subjects(root: Path, commits: list[str]) -> dict:
    out = _git(root, "log", "--no-walk=unsorted", "--format=%H%x09%s", *commits) if commits else None
    subjects = {}
    for line in (out or "").splitlines():
        sha, _, subject = line.partition("\t")
        subjects[sha] = subject
    return subjects


# -- printing -----------------------------------------------------------------------------------

def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "?"
    if unit == "seconds":
        for scale, name in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
            if abs(value) >= scale:
                return f"{value / scale:.3g} {name}"
        return f"{value * 1e9:.3g} ns"
    if unit == "bytes":
        return f"{value / 2**20:.1f} MiB"
    return f"{value:.4g} {unit}".strip()


def print_report(report: dict) -> None:
    subjects = report["subjects"]

    def commit(sha):
        if sha is None:
            return "(none recorded)"
        subject = subjects.get(sha)
        return f"{sha[:8]}" + (f' "{subject}"' if subject else "")

    def where(r):
        if r["last_good"] is None:
            return f"at every recorded commit since {commit(r['first_bad'])}"
        return f"since {commit(r['first_bad'])}, last good {commit(r['last_good'])}"

    commits = report["commits"]
    print(f"detsim-track: machine {report['machine']}, {len(commits)} commits recorded "
          f"({commits[0][:8]} .. {commits[-1][:8]}), latest {commit(report['latest'])}")
    hash_groups: dict[tuple, list[dict]] = {}
    for r in report["regressions"]:
        if r["family"] == "determinism":
            hash_groups.setdefault((r["first_bad"], r["last_good"]), []).append(r)
    for group in hash_groups.values():
        if len(group) > GROUP_HASHES:
            print(f"REGRESSED image hash of {len(group)} golden cases ({', '.join(r['case'] for r in group)}), "
                  f"{where(group[0])} (sha256s with --json)")
    for r in report["regressions"]:
        if r["family"] != "determinism" or len(hash_groups[(r["first_bad"], r["last_good"])]) <= GROUP_HASHES:
            print(f"REGRESSED {_finding_text(r)}, {where(r)}")
    if report["built"]:
        for label in report["unmeasured"]:
            print(f"NOT MEASURED at {report['latest'][:8]}: {label}")
    for note in report["notes"]:
        print(f"note: {note}")
    families: dict[str, int] = {}
    for r in report["regressions"]:
        families[r["family"]] = families.get(r["family"], 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in sorted(families.items()))
    print(f"summary: {len(report['regressions'])} regressed{' (' + summary + ')' if summary else ''}, "
          f"{len(report['unmeasured'])} not measured, {report['skipped']} skipped at the latest commit; "
          f"exit {report['exit']}")


def _finding_text(r: dict) -> str:
    """What changed, in the family's own terms (the commits are added by the caller)."""
    if r["family"] == "parity":
        old = "?" if r["old_r"] is None else f"{r['old_r']:.9f}"
        return f"parity {r['case']}: r {old} -> {r['new_r']:.9f} (1 - r {r['old']} -> {r['new']})"
    if r["family"] == "determinism":
        again = f"; changed again at {', '.join(c[:8] for c in r['changed_again_at'])}" if r["changed_again_at"] else ""
        note = f" ({r['note']})" if r.get("note") else ""
        return f"image hash {r['case']}: {r['old_sha256'] or '?'} -> {r['new_sha256'] or '?'}{again}{note}"
    extra = []
    if "load_corrected_rise" in r:
        corrected = r["load_corrected_rise"]
        extra.append(f"x{1 / corrected if r['family'] == 'throughput' else corrected:.2f} against the machine reference")
    if "rank_test_p" in r:
        extra.append(f"rank test p={r['rank_test_p']:.2g}")
    ratio = "" if r["ratio"] is None else f", x{r['ratio']:.2f}"
    return (f"{r['family']} {r['benchmark']}{r['params']}: {_fmt(r['old'], r['unit'])} -> {_fmt(r['new'], r['unit'])}"
            f"{ratio}{' (' + ', '.join(extra) + ')' if extra else ''}")
